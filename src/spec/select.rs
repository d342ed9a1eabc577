//! `--cluster`: the part of a spec that some of its clusters hold (each selected cluster, the
//! tenants placed in it and their servers). The whole spec is validated first; selecting only
//! narrows what is rendered, so a render of one cluster is byte for byte that cluster's part of
//! a render of all of them.

use super::diagnostic::{FileTable, did_you_mean};
use super::load::Spec;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A name given to `--cluster` that no `TFRCluster` of the inputs has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownCluster(String);

/// The part of `spec` that the clusters `names` hold; all of it when `names` is empty.
///
/// # Errors
///
/// A name that is not a cluster of `spec`: the message names it, lists the clusters the inputs
/// define with where each is defined, and suggests the closest.
pub fn clusters(spec: &Spec, files: &dyn FileTable, names: &[String]) -> Result<Spec, UnknownCluster> {
    if names.is_empty() {
        return Ok(spec.clone());
    }
    let known: BTreeSet<&str> = spec.clusters.iter().map(|c| c.name()).collect();
    if let Some(unknown) = names.iter().find(|name| !known.contains(name.as_str())) {
        return Err(unknown_cluster(spec, files, unknown));
    }
    let wanted: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    Ok(Spec {
        clusters: spec.clusters.iter().filter(|o| wanted.contains(o.cluster.as_str())).cloned().collect(),
        tenants: spec.tenants.iter().filter(|o| wanted.contains(o.cluster.as_str())).cloned().collect(),
        servers: spec.servers.iter().filter(|o| wanted.contains(o.cluster.as_str())).cloned().collect(),
    })
}

fn unknown_cluster(spec: &Spec, files: &dyn FileTable, unknown: &str) -> UnknownCluster {
    let mut message = format!("--cluster `{unknown}`: no TFRCluster of the inputs has this name");
    if spec.clusters.is_empty() {
        message.push_str("; the inputs define no cluster");
        return UnknownCluster(message);
    }
    message.push_str("; they define ");
    let defined: Vec<String> =
        spec.clusters.iter().map(|c| format!("`{}` ({})", c.name(), files.place(c.locate("metadata.name")))).collect();
    message.push_str(&defined.join(", "));
    if let Some(close) = did_you_mean(unknown, spec.clusters.iter().map(|c| c.name())) {
        let _ = write!(message, "; did you mean `{close}`?");
    }
    UnknownCluster(message)
}
