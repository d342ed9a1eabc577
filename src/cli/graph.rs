//! `tfrs graph`: the component dependency graph of every cluster.

use super::Status;
use super::args::{GraphArgs, GraphFormat};
use crate::render::{Graph, cluster};
use std::io::Write;

/// Runs `tfrs graph`.
pub fn run(args: &GraphArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = super::stages::load(&args.specs.inputs, &args.specs.overlays, super::stages::Effect::Reads)? else {
        return Ok(Status::Failure);
    };
    let spec = super::stages::select(spec, &bundle, &args.specs.clusters)?;
    // One document for every cluster: with several, component ids are prefixed by the cluster.
    let names: Vec<&str> = spec.clusters.iter().map(|c| c.name()).collect();
    let mut combined = Graph::default();
    for cluster in &spec.clusters {
        let graph = cluster::full_graph(&spec.part_of(cluster.name()), cluster);
        let prefix = |id: &str| if names.len() == 1 { id.to_owned() } else { format!("{}:{id}", cluster.name()) };
        for id in graph.order() {
            // NB: the cluster's own graph is in dependency order, so every dependency is in.
            combined.add(&prefix(id), graph.dependencies(id).iter().map(|d| prefix(d)).collect())?;
        }
    }
    let (comment, text) = match args.format {
        GraphFormat::Mermaid => ("%%", combined.mermaid()),
        GraphFormat::Dot => ("//", combined.dot()),
    };
    writeln!(stdout, "{comment} tfrs components of {}", names.iter().map(|n| format!("cluster `{n}`")).collect::<Vec<_>>().join(", "))?;
    stdout.write_all(text.as_bytes())?;
    Ok(Status::Success)
}
