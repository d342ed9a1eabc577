//! Environments and placements: where each tenant and server is placed (one object per
//! cluster), and the per-object changes of the environments a cluster names
//! (`TFRCluster.spec.environments`, one `environments/<name>.yaml` each), which apply over the
//! object's own spec. Environments have no order among themselves, so two that set one field of
//! one object differently are an error.

use super::overlays::{OverlayDocument, cluster_selections, strings};
use super::{Layer, document_name};
use crate::spec::bundle::Bundle;
use crate::spec::diagnostic::{Diagnostic, FileTable, Rule, did_you_mean};
use crate::spec::schema::Kind;
use crate::spec::yaml::{Node, Origin, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The environments each cluster names, with the entry that names each.
pub(super) fn cluster_environments(
    documents: &[(Kind, Node)],
    environments: &BTreeMap<String, Vec<OverlayDocument>>,
    bundle: &Bundle,
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<(String, Origin)>> {
    cluster_selections(documents, "environments", environments, &|origin, path, name| unknown_environment(origin, path, name, bundle), out)
}

fn unknown_environment(origin: Origin, path: &str, name: &str, bundle: &Bundle) -> Diagnostic {
    let known: Vec<String> = bundle.environments.keys().map(|k| format!("`{k}`")).collect();
    let defined = if known.is_empty() { "none is defined".to_owned() } else { format!("defined: {}", known.join(", ")) };
    let mut diagnostic = Diagnostic::error(Rule::Reference, origin, path, format!("unknown environment `{name}` ({defined})"));
    diagnostic = match did_you_mean(name, bundle.environments.keys().map(String::as_str)) {
        Some(close) => diagnostic.with_help(format!("did you mean `{close}`?")),
        None => diagnostic.with_help("environments live in an `environments/` directory next to the specs, one `<name>.yaml` each"),
    };
    diagnostic
}

/// The clusters each tenant document places its tenant in, by tenant name (every document of
/// that name, valid or not).
pub(super) fn tenant_placements(documents: &[(Kind, Node)]) -> BTreeMap<String, Vec<String>> {
    let mut placed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, document) in documents.iter().filter(|(kind, _)| *kind == Kind::Tenant) {
        let Some(name) = document_name(document) else { continue };
        let clusters = placed.entry(name.to_owned()).or_default();
        let single = document.get("spec").and_then(|s| s.get("cluster")).and_then(Node::as_str);
        for cluster in single.into_iter().chain(strings(document, "clusters").into_iter().filter_map(|(_, n)| n.as_str())) {
            if !clusters.iter().any(|c| c == cluster) {
                clusters.push(cluster.to_owned());
            }
        }
    }
    placed
}

/// Every (kind, cluster, name) the documents place a tenant or server at, valid or not: an
/// environment document that names one of them is never reported as changing nothing, whatever
/// else is wrong with that object. A server that lists its `clusters` is at each of them (a
/// cluster its tenant lacks is reported on the server, not again on an environment); else at
/// its tenant's. A tenant placed nowhere (its `clusters` empty or missing: that is reported),
/// its servers, and a server of no tenant are there with the empty cluster, so that no
/// environment naming them is reported too.
pub(super) fn declared(documents: &[(Kind, Node)], tenants: &BTreeMap<String, Vec<String>>) -> BTreeSet<(Kind, String, String)> {
    let mut out = BTreeSet::new();
    for (kind, document) in documents {
        let Some(name) = document_name(document) else { continue };
        let tenant = match kind {
            Kind::Tenant => name,
            Kind::Server => document.get("spec").and_then(|s| s.get("tenant")).and_then(Node::as_str).unwrap_or_default(),
            Kind::Cluster => continue,
        };
        let chosen: Vec<&str> = match kind {
            Kind::Server => strings(document, "clusters").into_iter().filter_map(|(_, node)| node.as_str()).collect(),
            _ => Vec::new(),
        };
        match tenants.get(tenant) {
            Some(_) if !chosen.is_empty() => out.extend(chosen.iter().map(|cluster| (*kind, (*cluster).to_owned(), name.to_owned()))),
            Some(clusters) if !clusters.is_empty() => out.extend(clusters.iter().map(|cluster| (*kind, cluster.clone(), name.to_owned()))),
            // NB: placed nowhere, or a server of no tenant: reported as such.
            _ => {
                out.insert((*kind, String::new(), name.to_owned()));
            }
        }
    }
    out
}

/// The clusters a document is built for: a cluster's own name; a tenant's `cluster` or each of
/// its `clusters`; a server's tenant's clusters (only those of its `clusters` when given). One
/// empty name when none is known (the document is still checked; its reference is reported).
pub(super) fn placements(
    kind: Kind,
    document: &Node,
    tenants: &BTreeMap<String, Vec<String>>,
    clusters: &BTreeSet<String>,
    out: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let spec = document.get("spec");
    let placed: Vec<String> = match kind {
        Kind::Cluster => document_name(document).map(str::to_owned).into_iter().collect(),
        Kind::Tenant => tenant_clusters(document, out),
        Kind::Server => {
            let tenant = spec.and_then(|s| s.get("tenant")).and_then(Node::as_str).unwrap_or_default();
            let of_tenant = tenants.get(tenant).cloned().unwrap_or_default();
            let chosen = strings(document, "clusters");
            if chosen.is_empty()
                && let Some(list) = spec.and_then(|s| s.get("clusters"))
                && matches!(&list.value, Value::Seq(items) if items.is_empty())
            {
                // NB: an empty list is not "no restriction": said, and the server placed as its
                // tenant is meanwhile, so nothing else follows from this one mistake.
                out.push(
                    Diagnostic::error(Rule::Schema, list.origin, "spec.clusters", "expected at least one cluster, found an empty list")
                        .with_help("leave `clusters` out to run the server in every cluster of its tenant"),
                );
            }
            if chosen.is_empty() || of_tenant.is_empty() { of_tenant } else { server_clusters(tenant, &of_tenant, clusters, &chosen, out) }
        }
    };
    if placed.is_empty() { vec![String::new()] } else { placed }
}

/// `spec.cluster` or `spec.clusters` of a tenant document (exactly one, no repeats).
fn tenant_clusters(document: &Node, out: &mut Vec<Diagnostic>) -> Vec<String> {
    let spec = document.get("spec");
    let single = spec.and_then(|s| s.get("cluster"));
    let list = spec.and_then(|s| s.get_key("clusters"));
    match (single, list) {
        (Some(node), Some(key)) => {
            out.push(
                Diagnostic::error(Rule::Consistency, key.origin, "spec.clusters", "set either `cluster` or `clusters`, not both")
                    .with_help("`cluster: dev` places the tenant in one cluster, `clusters: [dev, prod]` in several"),
            );
            // NB: placed by `cluster` meanwhile, so nothing else follows from this one mistake.
            node.as_str().map(str::to_owned).into_iter().collect()
        }
        (None, None) => {
            let at = spec.map_or(document.origin, |s| s.origin);
            out.push(
                Diagnostic::error(Rule::Schema, at, "spec.cluster", "missing required field")
                    .with_help("`cluster: <name>` places the tenant in one cluster, `clusters: [<name>, ...]` in several"),
            );
            Vec::new()
        }
        (Some(node), None) => node.as_str().map(str::to_owned).into_iter().collect(),
        (None, Some(_)) => {
            let items = strings(document, "clusters");
            if items.is_empty() {
                let at = spec.and_then(|s| s.get("clusters")).map_or(document.origin, |n| n.origin);
                out.push(Diagnostic::error(Rule::Schema, at, "spec.clusters", "expected at least one cluster, found an empty list"));
            }
            unique(&items, "spec.clusters", out)
        }
    }
}

/// A server's `spec.clusters`: each must be a cluster, and one of its tenant's.
fn server_clusters(
    tenant: &str,
    of_tenant: &[String],
    known: &BTreeSet<String>,
    chosen: &[(usize, &Node)],
    out: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut placed = Vec::new();
    for cluster in unique(chosen, "spec.clusters", out) {
        let entry = chosen.iter().find(|(_, n)| n.as_str() == Some(cluster.as_str()));
        if of_tenant.contains(&cluster) {
            placed.push(cluster);
        } else if let (Some((index, node)), false) = (entry, known.contains(&cluster)) {
            let path = format!("spec.clusters[{index}]");
            out.push(crate::spec::check::dangling(node.origin, &path, "TFRCluster", &cluster, known.iter().map(String::as_str)));
        } else if let Some((index, node)) = entry {
            let listed: Vec<String> = of_tenant.iter().map(|c| format!("`{c}`")).collect();
            out.push(
                Diagnostic::error(
                    Rule::Reference,
                    node.origin,
                    format!("spec.clusters[{index}]"),
                    format!("TFRTenant `{tenant}` is not placed in cluster `{cluster}` (it is placed in {})", listed.join(", ")),
                )
                .with_help("a server runs in its tenant's clusters: add the cluster to the tenant's `clusters`, or drop it here"),
            );
        }
    }
    placed
}

/// The string items of a list, each once (a repeat is an error at the repeat).
fn unique(items: &[(usize, &Node)], path: &str, out: &mut Vec<Diagnostic>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for (index, node) in items {
        let Some(name) = node.as_str() else { continue };
        if seen.iter().any(|s| s == name) {
            out.push(Diagnostic::error(Rule::Consistency, node.origin, format!("{path}[{index}]"), format!("`{name}` is listed twice")));
        } else {
            seen.push(name.to_owned());
        }
    }
    seen
}

/// The environment layers of the object `kind`/`name` in a cluster that names `selected`, in
/// the order the cluster names them; two that set one field differently are an error
/// (`label` names the object and its cluster).
pub(super) fn layers(
    kind: Kind,
    name: &str,
    selected: &[(String, Origin)],
    environments: &BTreeMap<String, Vec<OverlayDocument>>,
    label: &str,
    files: &dyn FileTable,
    out: &mut Vec<Diagnostic>,
) -> Vec<Layer> {
    let mut found: Vec<Layer> = Vec::new();
    for (environment, _) in selected {
        let documents = environments.get(environment).into_iter().flatten();
        for document in documents.filter(|d| d.kind == kind && d.target.as_ref().is_some_and(|(n, _)| n == name)) {
            found.push(Layer {
                label: format!("environment `{environment}`"),
                spec: std::sync::Arc::new(document.spec.clone()),
                selected_at: None,
            });
        }
    }
    conflicts(&found, label, files, out);
    found
}

/// Every pair of layers that set one field (or a field and a field inside it) to different
/// values: an error at the second one.
fn conflicts(layers: &[Layer], label: &str, files: &dyn FileTable, out: &mut Vec<Diagnostic>) {
    let mut set: Vec<(String, &Node, &str)> = Vec::new();
    for layer in layers {
        let mut leaves = Vec::new();
        leaves_of(&layer.spec, "spec", &mut leaves);
        for (path, node) in leaves {
            let clash = set.iter().find(|(other, value, _)| {
                let nested = path.starts_with(&format!("{other}.")) || other.starts_with(&format!("{path}."));
                nested || (*other == path && value.to_json() != node.to_json())
            });
            if let Some((other, first, by)) = clash {
                let at = files.place(first.origin);
                // NB: two documents of one environment for the same object are a clash too.
                let (who, help) = if *by == layer.label {
                    (format!("two documents of {by} (the other at {at})"), "merge the environment's documents for this object into one")
                } else {
                    (
                        format!("{} and {by} (at {at})", layer.label),
                        "environments have no order: set the field in one of them only, or to the same value",
                    )
                };
                out.push(
                    Diagnostic::error(Rule::Consistency, node.origin, &path, format!("{label}: {who} both set `{other}`, differently"))
                        .with_help(help)
                        .sensitive(),
                );
            }
            set.push((path, node, &layer.label));
        }
    }
}

/// The fields a partial spec sets: every value that is not a map, and every secret source
/// (one choice, replaced whole), by path.
fn leaves_of<'a>(node: &'a Node, path: &str, out: &mut Vec<(String, &'a Node)>) {
    match &node.value {
        Value::Map(entries) if !entries.is_empty() && !super::overlays::is_secret_source(entries) => {
            for (key, value) in entries {
                leaves_of(value, &format!("{path}.{}", key.name), out);
            }
        }
        _ => out.push((path.to_owned(), node)),
    }
}

/// Every environment document that changes no object: no object of its kind and name is
/// placed in a cluster that names its environment.
pub(super) fn unmatched(
    environments: &BTreeMap<String, Vec<OverlayDocument>>,
    named: &BTreeMap<String, Vec<(String, Origin)>>,
    placed: &BTreeSet<(Kind, String, String)>,
    known: &BTreeMap<Kind, BTreeSet<String>>,
    out: &mut Vec<Diagnostic>,
) {
    let none = BTreeSet::new();
    let known_clusters = known.get(&Kind::Cluster).unwrap_or(&none);
    // NB: an object placed in a cluster that does not exist (a typo, reported as such) misses
    // the environments of the cluster meant (the known one its name is close to): not said
    // again for each of them.
    let meant = |kind: Kind, name: &str, clusters: &[&str]| {
        placed
            .iter()
            .filter(|(k, cluster, n)| *k == kind && n == name && !cluster.is_empty() && !known_clusters.contains(cluster))
            .any(|(_, cluster, _)| did_you_mean(cluster, known_clusters.iter().map(String::as_str)).is_some_and(|c| clusters.contains(&c)))
    };
    for (environment, documents) in environments {
        let clusters: Vec<&str> =
            named.iter().filter(|(_, list)| list.iter().any(|(e, _)| e == environment)).map(|(c, _)| c.as_str()).collect();
        for document in documents {
            let Some((name, at)) = &document.target else { continue };
            if clusters.iter().any(|c| placed.contains(&(document.kind, (*c).to_owned(), name.clone())))
                || placed.contains(&(document.kind, String::new(), name.clone()))
                || meant(document.kind, name, &clusters)
            {
                continue;
            }
            let kind = document.kind.as_str();
            let message = if clusters.is_empty() {
                format!("{kind} `{name}`: no cluster names environment `{environment}`")
            } else {
                let listed: Vec<String> = clusters.iter().map(|c| format!("`{c}`")).collect();
                format!("no {kind} `{name}` is placed in a cluster of environment `{environment}` ({})", listed.join(", "))
            };
            let candidates: BTreeSet<&str> = placed
                .iter()
                .filter(|(k, c, _)| *k == document.kind && clusters.contains(&c.as_str()))
                .map(|(_, _, n)| n.as_str())
                .collect();
            let mut diagnostic = Diagnostic::error(Rule::Reference, *at, "metadata.name", message).as_reference();
            if let Some(close) = did_you_mean(name, candidates) {
                diagnostic = diagnostic.with_help(format!("did you mean `{close}`?"));
            }
            out.push(diagnostic);
        }
    }
}
