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
use crate::spec::model::ServerSpec;
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
#[derive(Clone, Copy)]
pub struct Side<'a> {
    /// The validated specs.
    pub spec: &'a Spec,
    /// Their files.
    pub files: &'a dyn FileTable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

/// The cause of each entry (index-aligned with `entries`), from the specs now and, when known,
/// the base's.
#[must_use]
pub fn causes(entries: &[Entry], new: Side<'_>, old: Option<Side<'_>>) -> Vec<Option<Cause>> {
    let mut memo: BTreeMap<Key, Cause> = BTreeMap::new();
    entries
        .iter()
        .map(|entry| {
            let chain = owners(&entry.cluster, &entry.component, new.spec, old.map(|o| o.spec));
            for key in &chain {
                memo.entry(key.clone()).or_insert_with(|| describe(key, new, old));
            }
            // NB: the nearest spec object that changed explains the object; one further up may
            // have changed too, and is said on its own objects.
            let changed = chain.iter().filter_map(|key| memo.get(key)).find(|c| matches!(c.change, "changed" | "added" | "removed"));
            changed.or_else(|| memo.get(chain.first()?)).map(|cause| relevant(cause, &entry.component))
        })
        .collect()
}

/// The cause with only the fields of the component's own section, when it has any: a change of
/// `spec.certManager.version` explains `cluster/cert-manager`, not `cluster/image-registry`,
/// though both belong to the cluster. With none, every changed field stays.
fn relevant(cause: &Cause, component: &str) -> Cause {
    let mut cause = cause.clone();
    let last = component.rsplit('/').next().unwrap_or(component);
    let mut section = String::from("spec.");
    let mut upper = false;
    for c in last.chars() {
        match c {
            '-' => upper = true,
            c if upper => {
                section.extend(c.to_uppercase());
                upper = false;
            }
            c => section.push(c),
        }
    }
    let own = |f: &SpecField| f.field == section || f.field.strip_prefix(&section).is_some_and(|rest| rest.starts_with(['.', '[']));
    if cause.fields.iter().any(own) {
        cause.fields.retain(own);
        cause.more_fields = 0;
    }
    cause
}

/// Every changed spec object, in order, with the fields of all its entries (the review's "spec
/// changes").
#[must_use]
pub fn changed_objects(causes: &[Option<Cause>]) -> Vec<Cause> {
    let mut seen: BTreeMap<(String, String), Cause> = BTreeMap::new();
    for cause in causes.iter().flatten().filter(|c| c.change != "unchanged" && c.change != "unknown") {
        let merged =
            seen.entry((cause.cluster.clone(), cause.object.clone())).or_insert_with(|| Cause { fields: Vec::new(), ..cause.clone() });
        for field in &cause.fields {
            if !merged.fields.contains(field) {
                merged.fields.push(field.clone());
            }
        }
        merged.more_fields = merged.more_fields.max(cause.more_fields);
    }
    let mut out: Vec<Cause> = seen.into_values().collect();
    for cause in &mut out {
        cause.fields.sort_by(|a, b| a.field.cmp(&b.field));
    }
    out
}

/// The spec objects a component belongs to, nearest first.
fn owners(cluster: &str, component: &str, new: &Spec, old: Option<&Spec>) -> Vec<Key> {
    let key = |kind, name: &str| (kind, cluster.to_owned(), name.to_owned());
    let mut chain = Vec::new();
    let parts: Vec<&str> = component.split('/').collect();
    if let ["namespaces", namespace, rest @ ..] = parts.as_slice() {
        if let ["servers", server, ..] = rest {
            chain.push(key(Kind::Server, server));
            let tenant = find_server(new, cluster, server).or_else(|| old.and_then(|o| find_server(o, cluster, server)));
            if let Some(server) = tenant {
                chain.push(key(Kind::Tenant, &server.spec.tenant));
            }
        } else {
            let mut tenants: Vec<String> = Vec::new();
            for spec in std::iter::once(new).chain(old) {
                for unit in crate::render::tenant::units(spec, cluster).into_iter().filter(|u| u.namespace == *namespace) {
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

fn find_server<'a>(spec: &'a Spec, cluster: &str, name: &str) -> Option<&'a Object<ServerSpec>> {
    spec.servers.iter().find(|s| s.cluster == cluster && s.name() == name)
}

/// What happened to one spec object between the two sides.
fn describe(key: &Key, new: Side<'_>, old: Option<Side<'_>>) -> Cause {
    let (kind, cluster, name) = key;
    let mut cause = Cause {
        object: format!("{} {name}", kind.name()),
        cluster: cluster.clone(),
        change: "unknown",
        at: None,
        fields: Vec::new(),
        more_fields: 0,
    };
    let now = lookup(new.spec, key);
    let before = old.and_then(|old| lookup(old.spec, key));
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

fn lookup<'a>(spec: &'a Spec, (kind, cluster, name): &Key) -> Option<View<'a>> {
    fn view<'a, S: Serialize + Default>(kind: Kind, object: &'a Object<S>) -> View<'a> {
        View {
            json: serde_json::to_value(&object.spec).unwrap_or(Json::Null),
            declared: object.locate("metadata.name"),
            explain: Box::new(move |field| explain_object(object, kind.name(), field, false)),
        }
    }
    let matches = |object_cluster: &str, object_name: &str| object_cluster == cluster && object_name == name;
    match kind {
        Kind::Cluster => spec.clusters.iter().find(|o| matches(&o.cluster, o.name())).map(|o| view(*kind, o)),
        Kind::Tenant => spec.tenants.iter().find(|o| matches(&o.cluster, o.name())).map(|o| view(*kind, o)),
        Kind::Server => spec.servers.iter().find(|o| matches(&o.cluster, o.name())).map(|o| view(*kind, o)),
    }
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
        let fields: Vec<String> = cause
            .fields
            .iter()
            .map(|f| match &f.at {
                Some(at) => format!("{} ({}, {at})", f.field, f.layer),
                None => format!("{} ({})", f.field, f.layer),
            })
            .collect();
        text.push_str(&format!(": {}", fields.join(", ")));
        if cause.more_fields > 0 {
            text.push_str(&format!(" and {} more", cause.more_fields));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_belong_to_their_server_tenant_and_cluster() {
        let spec = Spec::default();
        let chain = owners("prod", "namespaces/acme/servers/bot/api-worker", &spec, None);
        assert_eq!(chain, [(Kind::Server, "prod".to_owned(), "bot".to_owned()), (Kind::Cluster, "prod".to_owned(), "prod".to_owned())]);
        assert_eq!(owners("prod", "cluster/cert-manager", &spec, None), [(Kind::Cluster, "prod".to_owned(), "prod".to_owned())]);
        assert_eq!(owners("prod", "gitops", &spec, None).len(), 1);
    }

    #[test]
    fn a_component_keeps_the_fields_of_its_own_section() {
        let field = |name: &str| SpecField { field: name.to_owned(), layer: "spec".to_owned(), at: None };
        let cause = Cause {
            object: "TFRCluster c".to_owned(),
            cluster: "c".to_owned(),
            change: "changed",
            at: None,
            fields: vec![field("spec.certManager.version"), field("spec.imageRegistry.server"), field("spec.certManagerx")],
            more_fields: 0,
        };
        let fields = |component| relevant(&cause, component).fields.into_iter().map(|f| f.field).collect::<Vec<_>>();
        assert_eq!(fields("cluster/cert-manager"), ["spec.certManager.version"]);
        assert_eq!(fields("cluster/image-registry"), ["spec.imageRegistry.server"]);
        assert_eq!(fields("cluster/gateway").len(), 3, "no field of its own: every field stays");
    }
}
