//! `tfrs plan`: the fleet at a glance: each cluster with its environments, overlays, tenants
//! and servers, then what differs between the placements of an object placed in several
//! clusters. Reads the specs only; renders nothing.

use super::Status;
use super::args::{PlanArgs, PlanFormat};
use crate::spec::fleet::{self, Difference};
use serde_json::json;
use std::io::Write;

/// Runs `tfrs plan`.
pub fn run(args: &PlanArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = super::stages::load(&args.specs.inputs, &args.specs.overlays, super::stages::Effect::Reads)? else {
        return Ok(Status::Failure);
    };
    let spec = super::stages::select(spec, &bundle, &args.specs.clusters)?;
    let clusters = fleet::clusters(&spec);
    let differences = fleet::differences(&spec);
    if args.format == PlanFormat::Json {
        let document = json!({
            "clusters": clusters,
            "differences": differences.iter().map(|d| json!({
                "kind": d.kind,
                "name": d.name,
                "field": d.field,
                "values": d.values.iter().map(|(c, v)| (c.clone(), v.clone())).collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&document)?)?;
        return Ok(Status::Success);
    }
    for cluster in &clusters {
        let servers: usize = cluster.tenants.iter().map(|t| t.servers.len()).sum();
        let mut layers = Vec::new();
        if !cluster.environments.is_empty() {
            layers.push(format!("environments: {}", cluster.environments.join(", ")));
        }
        if !cluster.overlays.is_empty() {
            layers.push(format!("overlays: {}", cluster.overlays.join(", ")));
        }
        let layers = if layers.is_empty() { String::new() } else { format!(" ({})", layers.join("; ")) };
        writeln!(stdout, "cluster {}{layers}: {}, {}", cluster.name, count(cluster.tenants.len(), "tenant"), count(servers, "server"))?;
        for tenant in &cluster.tenants {
            let servers = if tenant.servers.is_empty() { "no servers".to_owned() } else { tenant.servers.join(", ") };
            writeln!(stdout, "  {} (namespace {}): {servers}", tenant.name, tenant.namespace)?;
        }
    }
    write_differences(&differences, stdout)?;
    Ok(Status::Success)
}

/// `differs between clusters:`, then each object and its differing fields, one line each.
fn write_differences(differences: &[Difference], stdout: &mut dyn Write) -> std::io::Result<()> {
    if differences.is_empty() {
        return Ok(());
    }
    writeln!(stdout, "\ndiffers between clusters:")?;
    let mut last: Option<(&str, &str)> = None;
    for difference in differences {
        if last != Some((difference.kind, difference.name.as_str())) {
            writeln!(stdout, "  {} {}:", difference.kind, difference.name)?;
            last = Some((difference.kind, difference.name.as_str()));
        }
        let values: Vec<String> = difference.values.iter().map(|(cluster, value)| format!("{cluster} {}", shown(value))).collect();
        writeln!(stdout, "    {}: {}", difference.field, values.join(", "))?;
    }
    Ok(())
}

/// A value as the summary shows it: strings bare (`""` when empty), the rest as JSON.
fn shown(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) if !text.is_empty() => text.clone(),
        serde_json::Value::Null => "(not set)".to_owned(),
        other => other.to_string(),
    }
}

fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}
