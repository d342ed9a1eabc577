//! Why a rendered object changed (pure): the spec objects it is rendered from, and which of
//! their fields changed between the specs the base tree was rendered from and the specs now,
//! each located where it is set now (the spec, an overlay, an environment, or a built-in
//! default, as `--explain` tells it).
//!
//! A rendered object belongs to its component, and the component to a spec object: a server's
//! components (`namespaces/<ns>/servers/<server>/…`) to that `TFRServer`, then its `TFRTenant`,
//! then its `TFRCluster`; a namespace's shared components to the tenants of that namespace,
//! then the cluster; everything else to the cluster. The nearest of those that changed (or was
//! added or removed) is the cause; when none did, the object comes from the same specs and the
//! change comes from elsewhere: the tfrs that rendered it (its templates, defaults or pinned
//! versions), a secret's source, the sealing key.

use super::diff::Entry;
use super::fields;
use crate::spec::Spec;
use crate::spec::diagnostic::FileTable;
use crate::spec::explain::explain_object;
use crate::spec::load::Object;
use crate::spec::yaml::Origin;
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::fmt;

/// At most this many changed fields are listed per spec object.
const FIELDS_SHOWN: usize = 10;

/// A place in a spec file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    /// The file, as the inputs name it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// One changed field of a spec object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecField {
    /// `spec.image.tag`.
    pub field: String,
    /// The layer that sets it now (`spec`, `overlay `prod``, `environment `prod``, `built-in
    /// default`), or `removed` when no layer sets it any more.
    pub layer: String,
    /// Where that layer sets it (none for a built-in default); for a removed field, where it
    /// was set.
    pub at: Option<Place>,
}

/// A spec object behind a rendered change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cause {
    /// `TFRServer robot1`.
    pub object: String,
    /// The cluster it is placed in.
    pub cluster: String,
    /// `changed`, `added`, `removed`, `unchanged`, or `unknown` (the base's specs are not
    /// available).
    pub change: &'static str,
    /// Where it is declared (where it was, when removed).
    pub at: Option<Place>,
    /// Its changed fields, at most ten.
    pub fields: Vec<SpecField>,
    /// How many changed fields are not listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub more_fields: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The specs of one side of a diff, with the file table their origins index.
pub struct Side<'a> {
    spec: &'a Spec,
    files: &'a dyn FileTable,
    /// Each object's position in its kind's list, by key.
    index: std::collections::HashMap<Key, usize>,
}

impl<'a> Side<'a> {
    /// One side: validated specs and their files.
    #[must_use]
    pub fn new(spec: &'a Spec, files: &'a dyn FileTable) -> Side<'a> {
        let index = keys(spec).map(|(position, key)| (key, position)).collect();
        Side { spec, files, index }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Cluster,
    Tenant,
    Server,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cluster => "TFRCluster",
            Kind::Tenant => "TFRTenant",
            Kind::Server => "TFRServer",
        }
    }
}

/// `(kind, cluster, name)` of a spec object.
type Key = (Kind, String, String);

/// What changed in the specs, and why each rendered object changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Causes {
    /// Per entry (index-aligned with the diff's entries), the spec objects behind it: those of
    /// its own chain (server, tenant, cluster) that changed, nearest first; for an object that gathers a whole cluster or namespace (a
    /// gateway certificate, a routing table, the plan) whose own spec object did not change,
    /// every changed object below it; else its own spec object, unchanged (or unknown).
    pub entries: Vec<Vec<Cause>>,
    /// Every spec object added, removed or changed since the base, in order of cluster, kind
    /// and name. Empty without the base's specs.
    pub spec: Vec<Cause>,
}

/// Traces each entry to its causes, from the specs now and, when known, the base's.
#[must_use]
pub fn trace(entries: &[Entry], new: &Side<'_>, old: Option<&Side<'_>>) -> Causes {
    let changed: Vec<(Key, Cause)> = match old {
        Some(base) => {
            let mut keys: Vec<&Key> = new.index.keys().chain(base.index.keys()).collect();
            keys.sort_by(|a, b| (&a.1, a.0, &a.2).cmp(&(&b.1, b.0, &b.2)));
            keys.dedup();
            keys.into_iter().map(|key| (key.clone(), describe(key, new, old))).filter(|(_, c)| c.change != "unchanged").collect()
        }
        None => Vec::new(),
    };
    let by_key: BTreeMap<&Key, &Cause> = changed.iter().map(|(key, cause)| (key, cause)).collect();
    let tenant_of = |key: &Key| {
        let find = |side: &Side<'_>| side.index.get(key).map(|&i| side.spec.servers[i].spec.tenant.clone());
        find(new).or_else(|| old.and_then(find))
    };
    let per_entry = entries
        .iter()
        .map(|entry| {
            let chain = owners(&entry.cluster, &entry.component, new, old);
            // NB: every spec object of the chain that changed is a cause, nearest first: a
            // server's confz embeds its tenant's passwords, so a server whose image changed may
            // still have changed here because of its tenant.
            let own: Vec<Cause> = chain.iter().filter_map(|key| by_key.get(key)).map(|cause| relevant(cause, &entry.component)).collect();
            if !own.is_empty() {
                return own;
            }
            let Some(first) = chain.first() else { return Vec::new() };
            let below: Vec<Cause> = match first.0 {
                Kind::Server => Vec::new(),
                Kind::Cluster => changed.iter().filter(|(key, _)| key.1 == first.1).map(|(_, c)| c.clone()).collect(),
                Kind::Tenant => changed
                    .iter()
                    .filter(|(key, _)| key.0 == Kind::Server && key.1 == first.1)
                    .filter(|(key, _)| tenant_of(key).is_some_and(|t| chain.iter().any(|k| k.0 == Kind::Tenant && k.2 == t)))
                    .map(|(_, c)| c.clone())
                    .collect(),
            };
            if below.is_empty() { vec![describe(first, new, old)] } else { below }
        })
        .collect();
    Causes { entries: per_entry, spec: changed.into_iter().map(|(_, cause)| cause).collect() }
}

/// The cause with only the fields of the component's own sections, when it has any: a change of
/// `spec.certManager.version` explains `cluster/cert-manager`, not `cluster/image-registry`,
/// though both belong to the cluster. With none, every changed field stays.
fn relevant(cause: &Cause, component: &str) -> Cause {
    let mut cause = cause.clone();
    let last = component.rsplit('/').next().unwrap_or(component);
    let sections = sections(last);
    let within =
        |field: &str, section: &str| field == section || field.strip_prefix(section).is_some_and(|rest| rest.starts_with(['.', '[']));
    let own = |f: &SpecField| sections.iter().any(|section| within(&f.field, section));
    if cause.fields.iter().any(own) {
        cause.fields.retain(own);
        cause.more_fields = 0;
    }
    cause
}

/// The spec sections a component (the last part of its path) is rendered from: the section of
/// its own name in camelCase (`cert-manager`: `spec.certManager`), and for a server's
/// components whose name is not a section, the sections they are made of.
fn sections(component: &str) -> Vec<String> {
    let named: &[&str] = match component {
        "config" => &["spec.configData", "spec.secretData", "spec.confzData", "spec.confzCredentialOverrides"],
        // NB: a worker's pod runs the server's image and rolls on its config's checksums.
        "api-worker" | "robot-worker" => {
            &["spec.image", "spec.configData", "spec.secretData", "spec.confzData", "spec.confzCredentialOverrides"]
        }
        "db-init" => &["spec.jobs.dbInit"],
        "minio-init" => &["spec.jobs.minioInit"],
        "grafana-sa" => &["spec.jobs.grafanaServiceAccount"],
        _ => &[],
    };
    let mut section = String::from("spec.");
    let mut upper = false;
    for c in component.chars() {
        match c {
            '-' => upper = true,
            c if upper => {
                section.extend(c.to_uppercase());
                upper = false;
            }
            c => section.push(c),
        }
    }
    std::iter::once(section).chain(named.iter().map(|s| (*s).to_owned())).collect()
}

/// Every object's key, with its position in its kind's list.
fn keys(spec: &Spec) -> impl Iterator<Item = (usize, Key)> + '_ {
    let key = |kind, cluster: &str, name: &str| (kind, cluster.to_owned(), name.to_owned());
    let clusters = spec.clusters.iter().enumerate().map(move |(i, o)| (i, key(Kind::Cluster, &o.cluster, o.name())));
    let tenants = spec.tenants.iter().enumerate().map(move |(i, o)| (i, key(Kind::Tenant, &o.cluster, o.name())));
    let servers = spec.servers.iter().enumerate().map(move |(i, o)| (i, key(Kind::Server, &o.cluster, o.name())));
    clusters.chain(tenants).chain(servers)
}

/// The spec objects a component belongs to, nearest first.
fn owners(cluster: &str, component: &str, new: &Side<'_>, old: Option<&Side<'_>>) -> Vec<Key> {
    let key = |kind, name: &str| (kind, cluster.to_owned(), name.to_owned());
    let mut chain = Vec::new();
    let parts: Vec<&str> = component.split('/').collect();
    if let ["namespaces", namespace, rest @ ..] = parts.as_slice() {
        if let ["servers", server, ..] = rest {
            chain.push(key(Kind::Server, server));
            let server_key = key(Kind::Server, server);
            let find = |side: &Side<'_>| side.index.get(&server_key).map(|&i| side.spec.servers[i].spec.tenant.clone());
            if let Some(tenant) = find(new).or_else(|| old.and_then(find)) {
                chain.push(key(Kind::Tenant, &tenant));
            }
        } else {
            let mut tenants: Vec<String> = Vec::new();
            for side in std::iter::once(new).chain(old) {
                for unit in crate::render::tenant::units(side.spec, cluster).into_iter().filter(|u| u.namespace == *namespace) {
                    tenants.extend(unit.tenants.iter().map(|t| t.name().to_owned()));
                }
            }
            tenants.sort();
            tenants.dedup();
            chain.extend(tenants.iter().map(|t| key(Kind::Tenant, t)));
        }
    }
    chain.push(key(Kind::Cluster, cluster));
    chain
}

/// What happened to one spec object between the two sides.
fn describe(key: &Key, new: &Side<'_>, old: Option<&Side<'_>>) -> Cause {
    let (kind, cluster, name) = key;
    let mut cause = Cause {
        object: format!("{} {name}", kind.name()),
        cluster: cluster.clone(),
        change: "unknown",
        at: None,
        fields: Vec::new(),
        more_fields: 0,
    };
    let now = lookup(new, key);
    let before = old.and_then(|old| lookup(old, key));
    cause.at = now.as_ref().map(|o| o.place(new.files)).or_else(|| Some(before.as_ref()?.place(old?.files)));
    let Some(old) = old else { return cause };
    match (&now, &before) {
        (Some(_), None) => cause.change = "added",
        (None, Some(_)) => cause.change = "removed",
        (None, None) => cause.change = "unchanged",
        (Some(now), Some(before)) => {
            let (changed, truncated) = fields::changes(&before.json, &now.json);
            cause.change = if changed.is_empty() { "unchanged" } else { "changed" };
            cause.more_fields = changed.len().saturating_sub(FIELDS_SHOWN) + usize::from(truncated);
            cause.fields = changed.iter().take(FIELDS_SHOWN).map(|c| now.field(&c.path, new.files, before, old.files)).collect();
        }
    }
    cause
}

/// `--explain` of one field of one object.
type Explainer<'a> = Box<dyn Fn(&str) -> Option<crate::spec::explain::Explanation> + 'a>;

/// One spec object, seen through what a cause needs of it.
struct View<'a> {
    json: Json,
    declared: Origin,
    explain: Explainer<'a>,
}

fn lookup<'a>(side: &Side<'a>, key: &Key) -> Option<View<'a>> {
    fn view<'a, S: Serialize + Default>(kind: Kind, object: &'a Object<S>) -> View<'a> {
        View {
            json: serde_json::to_value(&object.spec).unwrap_or(Json::Null),
            declared: object.locate("metadata.name"),
            explain: Box::new(move |field| explain_object(object, kind.name(), field, false)),
        }
    }
    let position = *side.index.get(key)?;
    let spec = side.spec;
    Some(match key.0 {
        Kind::Cluster => view(key.0, &spec.clusters[position]),
        Kind::Tenant => view(key.0, &spec.tenants[position]),
        Kind::Server => view(key.0, &spec.servers[position]),
    })
}

impl View<'_> {
    fn place(&self, files: &dyn FileTable) -> Place {
        place(self.declared, files)
    }

    /// A changed field (a path of the spec's JSON), located where the last layer sets it now,
    /// or where it was set when it is gone.
    fn field(&self, path: &str, files: &dyn FileTable, before: &View<'_>, old_files: &dyn FileTable) -> SpecField {
        // NB: `--explain` walks plain keys: a list item or a quoted key is explained by its
        // nearest plain ancestor.
        let plain = path.split('[').next().unwrap_or(path).trim_end_matches('.');
        let field = format!("spec.{path}");
        let explained = |view: &View<'_>, files: &dyn FileTable| {
            let step = (view.explain)(&format!("spec.{plain}"))?.steps.pop()?;
            Some((step.label, step.origin.map(|o| place(o, files))))
        };
        match explained(self, files) {
            Some((layer, at)) => SpecField { field, layer, at },
            None => SpecField { field, layer: "removed".to_owned(), at: explained(before, old_files).and_then(|(_, at)| at) },
        }
    }
}

fn place(origin: Origin, files: &dyn FileTable) -> Place {
    Place { file: files.name(origin.file).to_owned(), line: origin.line, column: origin.column }
}

/// `TFRServer robot1 changed (servers.yaml:3:9): spec.image.tag (spec, servers.yaml:8:3)`, one
/// line; `version` is the tfrs version change, when the base was rendered by another.
#[must_use]
pub fn line(cause: &Cause, version: Option<&str>) -> String {
    let at = cause.at.as_ref().map(|p| format!(" ({p})")).unwrap_or_default();
    let mut text = match (cause.change, version) {
        ("unknown", _) => format!("from {}{at}", cause.object),
        ("unchanged", Some(version)) => format!("{}{at} is unchanged; tfrs changed: {version}", cause.object),
        ("unchanged", None) => {
            format!(
                "{}{at} is unchanged: the change comes from outside the specs (templates, a secret's source, the sealing key)",
                cause.object
            )
        }
        (change, _) => format!("{} {change}{at}", cause.object),
    };
    if !cause.fields.is_empty() {
        let fields: Vec<String> = cause.fields.iter().map(field_line).collect();
        text.push_str(&format!(": {}", fields.join(", ")));
        if cause.more_fields > 0 {
            text.push_str(&format!(" and {} more", cause.more_fields));
        }
    }
    text
}

/// `spec.image.tag at servers.yaml:8:66`; a layer other than the spec itself is named
/// (`spec.replicas from overlay `prod` at …`, `… from built-in default`), and a field no layer
/// sets any more says where it was.
fn field_line(f: &SpecField) -> String {
    match (f.layer.as_str(), &f.at) {
        ("spec", Some(at)) => format!("{} at {at}", f.field),
        ("spec", None) => f.field.clone(),
        ("removed", Some(at)) => format!("{} removed (was at {at})", f.field),
        ("removed", None) => format!("{} removed", f.field),
        (layer, Some(at)) => format!("{} from {layer} at {at}", f.field),
        (layer, None) => format!("{} from {layer}", f.field),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_belong_to_their_server_tenant_and_cluster() {
        let spec = Spec::default();
        let files = crate::spec::Bundle::default();
        let spec = Side::new(&spec, &files);
        let chain = owners("prod", "namespaces/acme/servers/bot/api-worker", &spec, None);
        assert_eq!(chain, [(Kind::Server, "prod".to_owned(), "bot".to_owned()), (Kind::Cluster, "prod".to_owned(), "prod".to_owned())]);
        assert_eq!(owners("prod", "cluster/cert-manager", &spec, None), [(Kind::Cluster, "prod".to_owned(), "prod".to_owned())]);
        assert_eq!(owners("prod", "gitops", &spec, None).len(), 1);
    }

    /// The fields `relevant` keeps for `component` of a changed `object` whose `fields` changed.
    fn kept(object: &str, fields: &[&str], component: &str) -> Vec<String> {
        let fields = fields.iter().map(|name| SpecField { field: (*name).to_owned(), layer: "spec".to_owned(), at: None }).collect();
        let cause = Cause { object: object.to_owned(), cluster: "c".to_owned(), change: "changed", at: None, fields, more_fields: 0 };
        relevant(&cause, component).fields.into_iter().map(|f| f.field).collect()
    }

    #[test]
    fn a_component_keeps_the_fields_of_its_own_section() {
        let fields =
            |component| kept("TFRCluster c", &["spec.certManager.version", "spec.imageRegistry.server", "spec.certManagerx"], component);
        assert_eq!(fields("cluster/cert-manager"), ["spec.certManager.version"]);
        assert_eq!(fields("cluster/image-registry"), ["spec.imageRegistry.server"]);
        assert_eq!(fields("cluster/gateway").len(), 3, "no field of its own: every field stays");
    }

    #[test]
    fn a_server_config_component_keeps_its_data_sections() {
        let fields = |component| kept("TFRServer s", &["spec.image.tag", "spec.configData.A", "spec.jobs.dbInit"], component);
        assert_eq!(fields("namespaces/t/servers/s/config"), ["spec.configData.A"]);
        assert_eq!(fields("namespaces/t/servers/s/db-init"), ["spec.jobs.dbInit"]);
        assert_eq!(fields("namespaces/t/servers/s/api-worker"), ["spec.image.tag", "spec.configData.A"], "what its pod is made of");
        let fields = |component| kept("TFRServer s", &["spec.image.tag", "spec.apiWorker.replicas"], component);
        assert_eq!(fields("namespaces/t/servers/s/api-worker"), ["spec.image.tag", "spec.apiWorker.replicas"]);
        assert_eq!(fields("namespaces/t/servers/s/robot-worker"), ["spec.image.tag"], "not the other worker's replicas");
    }
}
