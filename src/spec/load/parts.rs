//! A spec's parts: the objects placed in some of its clusters.

use super::{Object, Spec};
use crate::spec::yaml::{Node, Value};
use std::borrow::Cow;
use std::collections::BTreeSet;

impl<S> Object<S> {
    /// Adds to `out` the index of every file its merged tree and its layers come from (what
    /// decides, besides its spec, where a `fromFile` path of it is looked for).
    pub fn source_files(&self, out: &mut BTreeSet<usize>) {
        files_of(&self.tree, out);
        for layer in &self.layers {
            files_of(&layer.spec, out);
            out.extend(layer.selected_at.map(|origin| origin.file));
        }
    }
}

/// Adds the file of every node and key of `node`.
fn files_of(node: &Node, out: &mut BTreeSet<usize>) {
    out.insert(node.origin.file);
    match &node.value {
        Value::Seq(items) => items.iter().for_each(|item| files_of(item, out)),
        Value::Map(entries) => {
            for (key, value) in entries {
                out.insert(key.origin.file);
                files_of(value, out);
            }
        }
        _ => {}
    }
}

impl Spec {
    /// The objects placed in `cluster`: the cluster, its tenants and their servers.
    #[must_use]
    pub fn part(&self, cluster: &str) -> Spec {
        self.kept(|c| c == cluster).into_owned()
    }

    /// The objects whose cluster `keep` accepts: borrowed when that is every object, else
    /// copied out.
    fn kept(&self, keep: impl Fn(&str) -> bool) -> Cow<'_, Spec> {
        let whole = self.clusters.iter().all(|o| keep(&o.cluster))
            && self.tenants.iter().all(|o| keep(&o.cluster))
            && self.servers.iter().all(|o| keep(&o.cluster));
        if whole {
            return Cow::Borrowed(self);
        }
        Cow::Owned(Spec {
            clusters: self.clusters.iter().filter(|o| keep(&o.cluster)).cloned().collect(),
            tenants: self.tenants.iter().filter(|o| keep(&o.cluster)).cloned().collect(),
            servers: self.servers.iter().filter(|o| keep(&o.cluster)).cloned().collect(),
        })
    }

    /// The spec of each cluster (and of objects placed in no known cluster), in which names are
    /// unique: borrowed whole when every object is in one cluster, the common case.
    #[must_use]
    pub fn parts(&self) -> Vec<Cow<'_, Spec>> {
        let clusters: BTreeSet<&str> = self
            .clusters
            .iter()
            .map(|o| o.cluster.as_str())
            .chain(self.tenants.iter().map(|o| o.cluster.as_str()))
            .chain(self.servers.iter().map(|o| o.cluster.as_str()))
            .collect();
        if clusters.len() <= 1 {
            return vec![Cow::Borrowed(self)];
        }
        clusters.into_iter().map(|cluster| Cow::Owned(self.part(cluster))).collect()
    }

    /// The objects placed in any of `clusters`: borrowed when that is every object.
    #[must_use]
    pub fn only(&self, clusters: &BTreeSet<String>) -> Cow<'_, Spec> {
        self.kept(|c| clusters.contains(c))
    }

    /// The part of `cluster` borrowed when it is the whole spec, else copied out.
    #[must_use]
    pub fn part_of(&self, cluster: &str) -> Cow<'_, Spec> {
        self.kept(|c| c == cluster)
    }
}
