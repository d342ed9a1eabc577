//! What a cluster's stamp covers besides its secret sources (`crate::render::stamp`): its part
//! of the spec, the spec files it was read from, the operator overrides and the sealing
//! certificate.

use super::{Setup, cert_path};
use crate::render::memo;
use crate::secrets::bytes::lp;
use crate::secrets::sealed::Certificate;
use crate::source::memo_cache;
use crate::spec::model::{ClusterSpec, SealingBackend};
use crate::spec::{Bundle, Spec};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use zeroize::Zeroizing;

impl Setup {
    /// What every memo stamp is made for: this tfrs build and its template set.
    #[must_use]
    pub fn memo_build(&self) -> String {
        format!("{} {}", memo_cache::build_id(), self.options.templates.digest())
    }

    /// The key of memo stamps, derived from the master key; `None` without one.
    #[must_use]
    pub fn memo_key(&self) -> Option<Zeroizing<[u8; 32]>> {
        self.master.as_ref().map(crate::secrets::MasterKey::memo_key)
    }

    /// The secret inputs of this run (the environment and `fromFile` files).
    #[must_use]
    pub fn secret_inputs(&self) -> &dyn crate::secrets::resolve::SecretInputs {
        &self.inputs
    }

    /// The digest of what the render of `part` (one cluster's part of the spec) is a function
    /// of besides its secret sources: its objects as loaded (metadata, placement, spec), the
    /// name and text of every file they were read from (which also decides where a `fromFile`
    /// path is looked for), the operator overrides, and the sealing certificate. `None` when the
    /// certificate cannot be read, is not valid now or is about to expire: the render reports
    /// that.
    #[must_use]
    pub fn cluster_inputs(&self, part: &Spec, bundle: &Bundle) -> Option<[u8; 32]> {
        use rayon::prelude::*;
        let cluster = part.clusters.first()?;
        // NB: each object's digest and files made side by side (a large cluster has thousands of
        // objects); the digests fed in order.
        let objects: Vec<(&str, &(dyn ObjectParts + Sync))> = (part.clusters.iter().map(|o| tagged("cluster", o)))
            .chain(part.tenants.iter().map(|o| tagged("tenant", o)))
            .chain(part.servers.iter().map(|o| tagged("server", o)))
            .collect();
        let parts: Vec<([u8; 32], BTreeSet<usize>)> = objects
            .par_iter()
            .map(|(kind, object)| {
                let mut files = BTreeSet::new();
                object.files(&mut files);
                (object.digest(kind), files)
            })
            .collect();
        let mut hasher = Sha256::new();
        let mut files = BTreeSet::new();
        for (digest, from) in parts {
            hasher.update(digest);
            files.extend(from);
        }
        for index in files {
            let file = bundle.files.get(index)?;
            hasher.update(memo::inputs_digest(&[b"file", file.name.as_bytes(), file.text.as_bytes()], &()));
        }
        hasher.update(self.frame_extra(cluster, bundle)?);
        Some(hasher.finalize().into())
    }

    /// What the render of `part` (one cluster's part of the spec) is made from, by part
    /// (`crate::render::parts`): per tenant namespace, the digest of its tenants and servers as
    /// loaded; and the digest of the rest: the cluster object as loaded, the operator overrides
    /// and the sealing certificate, the namespaces in order and any tenant or server in none of
    /// them. Where the specs were read from matters only to a `fromFile` path, which is read
    /// relative to the file its field was written in: the digest of each part `files` names (a
    /// namespace, or `parts::REST` for the rest) also takes which file each field of its objects
    /// was written in (`crate::render::unit::files_digest`). `None` as
    /// [`Setup::cluster_inputs`].
    #[must_use]
    pub fn part_inputs(&self, part: &Spec, bundle: &Bundle, files: &BTreeSet<String>) -> Option<crate::render::parts::Inputs> {
        use crate::render::unit::object_digest;
        use rayon::prelude::*;
        const TAG: &[u8] = b"tfrs/part/v1";
        let cluster = part.clusters.first()?;
        let units = crate::render::tenant::units(part, cluster.name());
        let digests: Vec<(String, [u8; 32])> = units
            .par_iter()
            .map(|unit| {
                let mut hasher = Sha256::new();
                hasher.update(TAG);
                hasher.update(lp(unit.namespace.as_bytes()));
                unit.tenants.iter().for_each(|tenant| hasher.update(object_digest("tenant", tenant)));
                unit.servers.iter().for_each(|server| hasher.update(object_digest("server", server)));
                if files.contains(&unit.namespace) {
                    hasher.update(crate::render::unit::files_digest(unit, bundle));
                }
                (unit.namespace.clone(), hasher.finalize().into())
            })
            .collect();
        let mut rest = Sha256::new();
        rest.update(TAG);
        part.clusters.iter().for_each(|cluster| rest.update(object_digest("cluster", cluster)));
        rest.update(self.frame_extra(cluster, bundle)?);
        rest.update((units.len() as u64).to_be_bytes());
        units.iter().for_each(|unit| rest.update(lp(unit.namespace.as_bytes())));
        // NB: a tenant or server in no namespace (none, once the spec is checked) is in the rest.
        let placed: std::collections::HashSet<usize> =
            units.iter().flat_map(|u| u.tenants.iter().map(|t| addr(*t)).chain(u.servers.iter().map(|s| addr(*s)))).collect();
        part.tenants.iter().filter(|t| !placed.contains(&addr(*t))).for_each(|t| rest.update(object_digest("tenant", t)));
        part.servers.iter().filter(|s| !placed.contains(&addr(*s))).for_each(|s| rest.update(object_digest("server", s)));
        if files.contains(crate::render::parts::REST) {
            // NB: the cluster's and every object's in no namespace.
            let clusters = part.clusters.iter().map(|o| (&*o.tree, o.layers.as_slice()));
            let tenants = part.tenants.iter().filter(|t| !placed.contains(&addr(*t))).map(|o| (&*o.tree, o.layers.as_slice()));
            let servers = part.servers.iter().filter(|s| !placed.contains(&addr(*s))).map(|o| (&*o.tree, o.layers.as_slice()));
            rest.update(crate::render::unit::files_digest_of(clusters.chain(tenants).chain(servers), bundle));
        }
        Some(crate::render::parts::Inputs { rest: rest.finalize().into(), units: digests.into_iter().collect(), files: files.clone() })
    }

    /// Per cluster of `spec`, the digest of what its tenant namespaces are rendered from besides
    /// the spec and the secret inputs (`crate::render::unit`): the operator overrides and the
    /// sealing certificate. A cluster whose certificate cannot be read, is not valid now or is
    /// about to expire has none: its namespaces are rendered one by one (the render reports it).
    #[must_use]
    pub fn unit_frames(&self, spec: &Spec, bundle: &Bundle) -> HashMap<String, [u8; 32]> {
        spec.clusters.iter().filter_map(|cluster| Some((cluster.name().to_owned(), self.frame_extra(cluster, bundle)?))).collect()
    }

    /// The digest of the operator overrides and of `cluster`'s sealing certificate (when it
    /// seals with one); `None` when that certificate is not readable and valid for a while.
    fn frame_extra(&self, cluster: &crate::spec::Object<ClusterSpec>, bundle: &Bundle) -> Option<[u8; 32]> {
        let mut hasher = Sha256::new();
        hasher.update(memo::inputs_digest(&[b"overrides"], &self.options.operator_overrides));
        let sealing = &cluster.spec.sealing;
        if sealing.backend == SealingBackend::SealedSecrets && !sealing.cert_file.is_empty() {
            let pem = std::fs::read_to_string(cert_path(cluster, bundle)).ok()?;
            let certificate = Certificate::from_pem(&pem, self.now).ok()?;
            if certificate.expiry_warning(self.now).is_some() {
                return None;
            }
            hasher.update(memo::inputs_digest(&[b"certificate", pem.as_bytes()], &()));
        }
        Some(hasher.finalize().into())
    }
}

/// Where `object` is in memory: which object of the spec it is.
fn addr<T>(object: &T) -> usize {
    std::ptr::from_ref(object) as usize
}

/// What the stamp takes of one spec object.
/// `object` with its kind, as [`Setup::cluster_inputs`] digests it.
fn tagged<'a>(kind: &'static str, object: &'a (dyn ObjectParts + Sync)) -> (&'static str, &'a (dyn ObjectParts + Sync)) {
    (kind, object)
}

trait ObjectParts {
    /// The digest of its metadata, placement and spec.
    fn digest(&self, kind: &'static str) -> [u8; 32];
    /// Adds the files its merged tree and layers come from.
    fn files(&self, out: &mut BTreeSet<usize>);
}

impl<S: serde::Serialize> ObjectParts for crate::spec::Object<S> {
    fn digest(&self, kind: &'static str) -> [u8; 32] {
        crate::render::unit::object_digest(kind, self)
    }

    fn files(&self, out: &mut BTreeSet<usize>) {
        self.source_files(out);
    }
}
