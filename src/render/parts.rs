//! The parts of a cluster's stamp: what lets a render that finds only some tenant namespaces
//! changed render just those, and the cluster's own components, into the tree its last render
//! left, instead of the whole cluster.
//!
//! The cluster stamp ([`super::stamp`]) answers for the whole cluster: one server changed and
//! it does not hold, and the render goes through every one of the cluster's tens of thousands of
//! objects and files again, most of them given back by their namespace's stamp
//! ([`super::unit`]) but each still laid out, compared and recorded. Its parts say, per tenant
//! namespace, what it was rendered from and what it laid out:
//!
//! - `rest`: the digest of what the cluster's render is a function of besides its namespaces'
//!   own objects (`crate::pipeline::Setup::part_inputs`): the cluster object as loaded, the
//!   operator overrides and the sealing certificate, the namespaces in order, and any tenant or
//!   server in none of them;
//! - per namespace, the digest of its tenants and servers as loaded (as its stamp takes them),
//!   and the digest of its components as the plan lists them (id, directory, dependencies,
//!   objects and their files, [`crate::tree::Plan::component_digests`]);
//! - `own`: the digest of the cluster's own components (all but the namespaces') as the plan
//!   lists them.
//!
//! Where the specs were read from matters only to a `fromFile` path, which is read relative to
//! the spec file its field was written in: the digest of a namespace that read a file also
//! takes which file each field of its objects was written in, as the namespace stamp does, and
//! so does the rest's when the render read any file (`files` names them).
//!
//! `stamp = HMAC-SHA256(memo_key, "tfrs/cluster-parts/v1" ‖ lp(build) ‖ lp(cluster) ‖ lp(rest) ‖
//! lp(own) ‖ count ‖ for each namespace: lp(namespace) ‖ lp(objects) ‖ lp(components) ‖ for
//! each read: lp(kind) ‖ lp(key…) ‖ outcome)`, checked, like the cluster stamp, with what each
//! secret input gives now.
//!
//! The namespaces a render may leave as they are: when the parts hold, `rest` is the same and
//! the files are exactly those its records describe,
//! a namespace whose objects' digest is the same is not rendered; the others are rendered with
//! the cluster's own components. The render is then kept only when what it laid out shows
//! that nothing else can change: each rendered part's components digest is the one recorded (so
//! the plan, the GitOps entries' list and every identity of the tree are as they were), every
//! component waits only for components rendered with it, and every file it lays out is already
//! there. Anything else renders the whole cluster, as without the parts.

use crate::secrets::bytes::{from_hex, push_lp, to_hex};
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::collections::{BTreeMap, BTreeSet};

/// The name [`Parts::files`] gives the rest of the cluster (no namespace is named so).
pub const REST: &str = "";

/// Adds to a stamp what each secret input gave (`render::stamp`'s `absorb_reads`).
pub type Reads<'r> = dyn Fn(&mut Hmac<Sha256>) + 'r;

/// The parts of a cluster's stamp (see the module docs); digests in lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Parts {
    /// The digest of everything but the namespaces' own objects.
    pub rest: String,
    /// The digest of the cluster's own components as the plan lists them.
    pub own: String,
    /// Per tenant namespace: the digest of its objects, and of its components as the plan lists
    /// them.
    pub units: BTreeMap<String, [String; 2]>,
    /// The parts whose objects' digest takes which spec file each field was written in (those
    /// that read a `fromFile` file): namespaces, and [`REST`] for the rest.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub files: BTreeSet<String>,
    /// The HMAC over them, the build, the cluster and what each secret input gave.
    pub stamp: String,
}

impl Parts {
    /// The parts of a render of cluster `cluster` by build `build`: `rest` and per namespace its
    /// objects' digest (`inputs`) and its components' (`layout`), stamped with what each secret
    /// input gave (`reads` adds that to the MAC, as `render::stamp` frames it).
    #[must_use]
    pub fn new(key: &[u8; 32], (build, cluster): (&str, &str), inputs: &Inputs, layout: &Layout, reads: &Reads<'_>) -> Parts {
        let empty = [0; 32];
        let units = inputs
            .units
            .iter()
            .map(|(namespace, objects)| {
                let components = layout.units.get(namespace).unwrap_or(&empty);
                (namespace.clone(), [to_hex(objects), to_hex(components)])
            })
            .collect();
        let files = inputs.files.clone();
        let mut parts = Parts { rest: to_hex(&inputs.rest), own: to_hex(&layout.own), units, files, stamp: String::new() };
        parts.stamp = parts.mac(key, build, cluster, reads);
        parts
    }

    /// Whether the stamp holds for what each secret input gives now (`reads`).
    #[must_use]
    pub fn holds(&self, key: &[u8; 32], (build, cluster): (&str, &str), reads: &Reads<'_>) -> bool {
        self.mac(key, build, cluster, reads) == self.stamp
    }

    fn mac(&self, key: &[u8; 32], build: &str, cluster: &str, reads: &Reads<'_>) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        let mut head = Vec::with_capacity(256 + 160 * self.units.len());
        head.extend_from_slice(b"tfrs/cluster-parts/v1");
        for field in [build, cluster, &self.rest, &self.own] {
            push_lp(&mut head, field.as_bytes());
        }
        head.extend_from_slice(&(self.files.len() as u64).to_be_bytes());
        self.files.iter().for_each(|part| push_lp(&mut head, part.as_bytes()));
        head.extend_from_slice(&(self.units.len() as u64).to_be_bytes());
        for (namespace, [objects, components]) in &self.units {
            for field in [namespace, objects, components] {
                push_lp(&mut head, field.as_bytes());
            }
        }
        mac.update(&head);
        reads(&mut mac);
        to_hex(&mac.finalize().into_bytes())
    }

    /// The namespaces whose objects' digest differs from `now`'s, when the rest is the same and
    /// the namespaces are (else `None`: the whole cluster is rendered).
    #[must_use]
    pub fn changed(&self, now: &Inputs) -> Option<Vec<String>> {
        if self.files != now.files || self.rest != to_hex(&now.rest) || !self.units.keys().eq(now.units.keys()) {
            return None;
        }
        Some(
            now.units
                .iter()
                .filter(|(namespace, objects)| self.units[*namespace][0] != to_hex(&objects[..]))
                .map(|(n, _)| n.clone())
                .collect(),
        )
    }

    /// Whether `layout` (of a render of the namespaces `rendered` and the cluster's own
    /// components) is what these parts recorded for them.
    #[must_use]
    pub fn same_layout(&self, rendered: &[String], layout: &Layout) -> bool {
        self.own == to_hex(&layout.own)
            && layout.units.len() == rendered.len()
            && rendered.iter().all(|namespace| {
                let (Some([_, recorded]), Some(now)) = (self.units.get(namespace), layout.units.get(namespace)) else { return false };
                *recorded == to_hex(now)
            })
    }

    /// The layout of the whole cluster after a render that laid out `rendered` (the cluster's
    /// own components and some namespaces): theirs as laid out now, every other namespace's as
    /// these parts recorded it.
    #[must_use]
    pub fn layout_with(&self, rendered: &Layout) -> Layout {
        let units = self
            .units
            .iter()
            .map(|(namespace, [_, components])| {
                let digest = rendered.units.get(namespace).copied().unwrap_or_else(|| from_hex(components).unwrap_or([0; 32]));
                (namespace.clone(), digest)
            })
            .collect();
        Layout { own: rendered.own, units }
    }
}

/// What a cluster's render is made from, by part (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    /// Everything but the namespaces' own objects.
    pub rest: [u8; 32],
    /// Per namespace, its tenants' and servers' digest.
    pub units: BTreeMap<String, [u8; 32]>,
    /// The parts whose digest takes which spec file each field was written in (see
    /// [`Parts::files`]).
    pub files: BTreeSet<String>,
}

/// What a cluster's render laid out, by part: the digest of the plan's components of each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    /// The cluster's own components.
    pub own: [u8; 32],
    /// Per namespace, its components.
    pub units: BTreeMap<String, [u8; 32]>,
}

impl Layout {
    /// The layout of `components` (each its id and its plan digest, in plan order): a component
    /// below `namespaces/<namespace>/` belongs to that namespace when `namespaces` holds it,
    /// any other to the cluster's own.
    #[must_use]
    pub fn of<'c>(components: impl Iterator<Item = (&'c str, [u8; 32])>, namespaces: &dyn Fn(&str) -> bool) -> Layout {
        use sha2::Digest as _;
        let mut own = Sha256::new();
        let mut units: BTreeMap<String, Sha256> = BTreeMap::new();
        for (id, digest) in components {
            match namespace_of(id).filter(|namespace| namespaces(namespace)) {
                Some(namespace) => units.entry(namespace.to_owned()).or_default().update(digest),
                None => own.update(digest),
            }
        }
        Layout { own: own.finalize().into(), units: units.into_iter().map(|(n, h)| (n, h.finalize().into())).collect() }
    }
}

/// The tenant namespace a component id lies below (`namespaces/<namespace>/…`), if any.
#[must_use]
pub fn namespace_of(id: &str) -> Option<&str> {
    id.strip_prefix("namespaces/")?.split_once('/').map(|(namespace, _)| namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A secret input that gave `value`.
    fn gave(value: &'static [u8]) -> impl Fn(&mut Hmac<Sha256>) {
        move |mac: &mut Hmac<Sha256>| mac.update(value)
    }

    fn inputs(rest: u8, units: &[(&str, u8)]) -> Inputs {
        Inputs { rest: [rest; 32], units: units.iter().map(|(n, d)| ((*n).to_owned(), [*d; 32])).collect(), files: BTreeSet::new() }
    }

    #[test]
    fn parts_hold_for_their_key_build_cluster_and_reads_only() {
        let outcomes = gave(b"TOKEN=1");
        let layout = Layout::of([("cluster/a", [1; 32]), ("namespaces/n1/x", [2; 32])].into_iter(), &|n| n == "n1");
        let parts = Parts::new(&[7; 32], ("b", "c"), &inputs(1, &[("n1", 3)]), &layout, &outcomes);
        assert!(parts.holds(&[7; 32], ("b", "c"), &outcomes));
        assert!(!parts.holds(&[8; 32], ("b", "c"), &outcomes), "another key");
        assert!(!parts.holds(&[7; 32], ("b2", "c"), &outcomes), "another build");
        assert!(!parts.holds(&[7; 32], ("b", "c2"), &outcomes), "another cluster");
        assert!(!parts.holds(&[7; 32], ("b", "c"), &gave(b"TOKEN=2")), "a read that gives something else");
        let mut forged = parts.clone();
        forged.units.get_mut("n1").unwrap()[1] = to_hex(&[9; 32]);
        assert!(!forged.holds(&[7; 32], ("b", "c"), &outcomes), "an edited digest");
    }

    #[test]
    fn only_the_namespaces_whose_objects_changed_are_named_and_only_when_the_rest_is_the_same() {
        let layout = Layout::default();
        let parts = Parts::new(&[7; 32], ("b", "c"), &inputs(1, &[("n1", 3), ("n2", 4)]), &layout, &gave(b""));
        assert_eq!(parts.changed(&inputs(1, &[("n1", 3), ("n2", 4)])), Some(vec![]));
        assert_eq!(parts.changed(&inputs(1, &[("n1", 3), ("n2", 5)])), Some(vec!["n2".to_owned()]));
        assert_eq!(parts.changed(&inputs(2, &[("n1", 3), ("n2", 4)])), None, "the rest changed");
        assert_eq!(parts.changed(&inputs(1, &[("n1", 3)])), None, "a namespace went");
        assert_eq!(parts.changed(&inputs(1, &[("n1", 3), ("n2", 4), ("n3", 1)])), None, "a namespace came");
    }

    #[test]
    fn a_layout_is_the_same_only_when_every_rendered_part_is() {
        let of = |own: u8, n1: u8| {
            let components = [("cluster/a", [own; 32]), ("namespaces/n1/x", [n1; 32]), ("namespaces/n2/y", [5; 32])];
            Layout::of(components.into_iter(), &|n| n != "n3")
        };
        let parts = Parts::new(&[7; 32], ("b", "c"), &inputs(1, &[("n1", 3), ("n2", 4)]), &of(1, 2), &gave(b""));
        let part = |own: u8, n1: u8| {
            let components = [("cluster/a", [own; 32]), ("namespaces/n1/x", [n1; 32])];
            Layout::of(components.into_iter(), &|_| true)
        };
        assert!(parts.same_layout(&["n1".to_owned()], &part(1, 2)));
        assert!(!parts.same_layout(&["n1".to_owned()], &part(1, 3)), "a namespace's components changed");
        assert!(!parts.same_layout(&["n1".to_owned()], &part(2, 2)), "the cluster's own changed");
        assert!(!parts.same_layout(&[], &part(1, 2)), "a namespace laid out that was not to be rendered");
        assert_eq!(namespace_of("namespaces/acme/servers/r1/api"), Some("acme"));
        assert_eq!(namespace_of("cluster/cert-manager"), None);
        assert_eq!(namespace_of("namespaces/acme"), None);
    }
}
