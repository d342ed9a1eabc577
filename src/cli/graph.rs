//! `tfrs graph`: the component dependency graph of every cluster.

use super::Status;
use super::args::{GraphArgs, GraphFormat};
use crate::render::cluster;
use std::io::Write;

/// Runs `tfrs graph`.
pub fn run(args: &GraphArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, _bundle)) = super::render::load(&args.inputs, &args.overlays)? else {
        return Ok(Status::Failure);
    };
    for cluster in &spec.clusters {
        let graph = cluster::full_graph(&spec, cluster);
        match args.format {
            GraphFormat::Mermaid => {
                writeln!(stdout, "%% cluster {}", cluster.name())?;
                stdout.write_all(graph.mermaid().as_bytes())?;
            }
            GraphFormat::Dot => {
                writeln!(stdout, "// cluster {}", cluster.name())?;
                stdout.write_all(graph.dot().as_bytes())?;
            }
        }
    }
    Ok(Status::Success)
}
