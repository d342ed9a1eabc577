//! The output tree: what a render writes, commits or compares, as typed parts until the edge.
//! Its paths are [`crate::layout`]'s.
//!
//! - [`build`]: one rendered cluster laid out (components, GitOps entry points, plan) and the
//!   integrity gate;
//! - [`Tree::seal`]: the Secrets sealed into their files, reusing previous ciphertext;
//! - [`plan`]: `plan.json`, written here and read by reconcile;
//! - [`current`]: the output directory's files as a render needs them, most not read;
//! - [`write`](mod@write): the output directory, replaced atomically (with `current`, the only
//!   I/O here);
//! - [`diff`]: two trees compared per object, [`fields`] per field, [`review`] for a reviewer.
//!
//! A [`Tree`] keeps its plaintext Secrets (zeroized on drop) until it is dropped, so that
//! `commit` can seal again over a branch that moved without rendering again.

pub mod build;
pub mod cause;
pub mod current;
pub mod diff;
pub mod fields;
mod listing;
mod mask;
pub mod plan;
pub mod review;
pub mod write;

pub use build::{Error, SameObject};
pub use plan::Plan;

use crate::object::ContentId;
use crate::render::RenderedCluster;
use crate::render::memo::{Entry, Memo, Stamper, sealed_job};
use crate::secrets::fingerprint::FingerprintKey;
use crate::secrets::seal::{Sealer, seal, seal_inputs};
use build::Pending;
use rand::rngs::StdRng;
use rand::{CryptoRng, SeedableRng};
use rayon::prelude::*;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};

/// Files by path relative to the output root.
pub type Files = BTreeMap<String, Vec<u8>>;

/// Files the render memo kept as they are in the previous tree (not read), by path relative to
/// the output root: their content id. Empty for a render without a memo.
pub type Kept = BTreeMap<String, ContentId>;

/// The rendered tree of one or more clusters.
#[derive(Default)]
pub struct Tree {
    files: Files,
    kept: Kept,
    plans: Vec<Plan>,
    /// Per cluster (as `plans`), how its Secrets are sealed.
    sealers: Vec<Option<Sealer>>,
    /// The Secrets, each with the index of its cluster.
    pending: Vec<(usize, Pending)>,
    fingerprint_key: Option<FingerprintKey>,
    /// Set by [`Tree::keep_sealed`]: the stamps of the sealed files it kept, what records the
    /// others' once sealed, and their seal inputs by path.
    sealed_memo: Option<SealedMemo>,
    /// The stamps of the files the memo vouched for as they were laid out: the sealed files
    /// given back with their namespace (`render::unit`) and `plan.json`.
    vouched: Vec<(String, Entry)>,
    /// Per cluster added with a memo, the digest of each of its plan's components.
    digests: Vec<Option<Vec<[u8; 32]>>>,
}

/// What the render memo knows of the sealed files (see [`Tree::keep_sealed`]).
struct SealedMemo {
    kept: Vec<(String, Entry)>,
    stamper: Stamper,
    inputs: HashMap<String, [u8; 32]>,
}

impl Tree {
    /// An empty tree. `fingerprint_key` (from the master key) lets sealing reuse previous
    /// ciphertext; without it every Secret is sealed afresh.
    #[must_use]
    pub fn new(fingerprint_key: Option<FingerprintKey>) -> Tree {
        Tree { fingerprint_key, ..Tree::default() }
    }

    /// A tree of files already laid out and sealed, with no plans and nothing to seal: what
    /// the commit stage's tests commit.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn from_files(files: Files) -> Tree {
        Tree { files, ..Tree::default() }
    }

    /// Adds a rendered cluster, laid out (see [`build`]); its Secrets wait for [`Tree::seal`].
    ///
    /// # Errors
    ///
    /// A Secret without a sealer, two objects that would share a file, objects of the cluster
    /// that share an identity ([`Error::SameObject`]); the tree is unchanged then.
    pub fn add(&mut self, cluster: RenderedCluster, sealer: Option<Sealer>) -> Result<(), Error> {
        self.add_with_memo(cluster, sealer, None)
    }

    /// [`Tree::add`], keeping `plan.json` as it is when the render memo vouches for the file
    /// written from an equal plan (its entry is among [`Tree::take_memo_entries`]).
    ///
    /// # Errors
    ///
    /// As [`Tree::add`].
    pub fn add_with_memo(&mut self, cluster: RenderedCluster, sealer: Option<Sealer>, memo: Option<&Memo<'_>>) -> Result<(), Error> {
        let laid = build::lay_out(cluster, sealer.as_ref(), memo)?;
        let index = self.plans.len();
        extend(&mut self.files, laid.files);
        extend(&mut self.kept, laid.kept);
        self.plans.push(laid.plan);
        self.sealers.push(sealer);
        self.pending.extend(laid.pending.into_iter().map(|p| (index, p)));
        self.vouched.extend(laid.vouched);
        self.digests.push(laid.digests);
        Ok(())
    }

    /// Takes out of sealing every Secret whose file the render memo vouches for: its stamp
    /// holds for the Secret's seal inputs ([`seal_inputs`]: the values' fingerprints, the
    /// sealer, the metadata) and for the file now at its path. Sealing over that file would
    /// give its bytes again, so it is kept as it is, unread. Without a fingerprint key nothing
    /// is kept. Returns how many were kept; [`Tree::take_memo_entries`] gives the stamps to save.
    pub fn keep_sealed(&mut self, memo: &Memo<'_>) -> usize {
        let Some(key) = self.fingerprint_key.as_ref() else { return 0 };
        let (sealers, plans) = (&self.sealers, &self.plans);
        // NB: per Secret: it, its job, its seal inputs, and the file's content id and entry when
        // kept.
        type Decided = ((usize, Pending), String, [u8; 32], Option<(ContentId, Entry)>);
        let decided: Vec<Decided> = std::mem::take(&mut self.pending)
            .into_par_iter()
            .map(|(cluster, pending)| {
                let Some(sealer) = sealers[cluster].as_ref() else { unreachable!("a Secret is laid out only with a sealer") };
                let inputs = seal_inputs(&pending.secret, sealer, key);
                let job = sealed_job(&plans[cluster].cluster, &pending.path);
                let found =
                    memo.lookup_file(&job, &inputs).filter(|(path, ..)| *path == pending.path).map(|(_, content, entry)| (content, entry));
                ((cluster, pending), job, inputs, found)
            })
            .collect();
        let mut sealed_memo = SealedMemo { kept: Vec::new(), stamper: memo.stamper(), inputs: HashMap::new() };
        for ((cluster, pending), job, inputs, found) in decided {
            match found {
                Some((content, entry)) => {
                    self.kept.insert(pending.path.clone(), content);
                    sealed_memo.kept.push((job, entry));
                }
                None => {
                    sealed_memo.inputs.insert(pending.path.clone(), inputs);
                    self.pending.push((cluster, pending));
                }
            }
        }
        let kept = sealed_memo.kept.len();
        self.sealed_memo = Some(sealed_memo);
        kept
    }

    /// The memo entries of the files the tree keeps or makes itself, by job key, once
    /// [`Tree::seal`] ran: `plan.json`'s and the sealed files' (those given back with their
    /// namespace, those [`Tree::keep_sealed`] kept and those sealed since; only the first when
    /// it did not run). Those it was given are moved out, not copied: a second call has none
    /// of them.
    #[must_use]
    pub fn take_memo_entries(&mut self) -> Vec<(String, Entry)> {
        let mut entries = std::mem::take(&mut self.vouched);
        let Some(sealed_memo) = &mut self.sealed_memo else { return entries };
        entries.append(&mut sealed_memo.kept);
        let sealed_memo = &*sealed_memo;
        for (cluster, pending) in &self.pending {
            let (Some(inputs), Some(bytes), Some(sealer)) =
                (sealed_memo.inputs.get(&pending.path), self.files.get(&pending.path), self.sealers[*cluster].as_ref())
            else {
                continue;
            };
            let job = sealed_job(&self.plans[*cluster].cluster, &pending.path);
            let id = sealer.target(&pending.secret);
            entries.push((job.clone(), sealed_memo.stamper.record_file(&job, inputs, &pending.path, &id, &ContentId::of(bytes))));
        }
        entries
    }

    /// The paths of the Secrets still to seal.
    pub fn pending_paths(&self) -> impl Iterator<Item = &str> {
        self.pending.iter().map(|(_, pending)| pending.path.as_str())
    }

    /// Seals every Secret into its file. `previous` returns the object previously written at
    /// a path (relative to the output root), whose ciphertext is kept when its fingerprints
    /// still match (zero-diff re-renders). May be called again, e.g. over a newer previous tree.
    ///
    /// `previous` is asked and `rng` drawn from in tree order first (one 32-byte seed per
    /// Secret, for an RNG of its own), then the Secrets are sealed in parallel: a seeded `rng`
    /// gives the same bytes.
    ///
    /// # Errors
    ///
    /// A Secret that cannot be sealed ([`Error::Seal`]).
    pub fn seal<R: CryptoRng + ?Sized>(&mut self, previous: &dyn Fn(&str) -> Option<Json>, rng: &mut R) -> Result<(), Error> {
        // Sequential: `previous` may read a Git tree (not shareable across threads) and the
        // seeds come from one stream, in order.
        let inputs: Vec<(Option<Json>, [u8; 32])> = self
            .pending
            .iter()
            .map(|(_, pending)| {
                let mut seed = [0u8; 32];
                rng.fill_bytes(&mut seed);
                (previous(&pending.path), seed)
            })
            .collect();
        let (sealers, key) = (&self.sealers, self.fingerprint_key.as_ref());
        let sealed: Vec<Result<(String, Vec<u8>), Error>> = self
            .pending
            .par_iter()
            .zip(inputs.into_par_iter())
            .map(|((cluster, pending), (old, seed))| {
                let Some(sealer) = sealers[*cluster].as_ref() else { unreachable!("a Secret is laid out only with a sealer") };
                seal_one(pending, sealer, key, old.as_ref(), seed)
            })
            .collect();
        for result in sealed {
            let (path, bytes) = result?;
            self.files.insert(path, bytes);
        }
        Ok(())
    }

    /// Per cluster, its name and how its Secrets are sealed: the backend and the sealer's
    /// identity (see [`crate::secrets::seal::sealer_identity`]); none for a cluster without
    /// a sealer.
    #[must_use]
    pub fn sealers(&self) -> Vec<(String, &'static str, String)> {
        self.plans
            .iter()
            .zip(&self.sealers)
            .filter_map(|(plan, sealer)| {
                let sealer = sealer.as_ref()?;
                Some((plan.cluster.clone(), crate::secrets::seal::backend_name(sealer), crate::secrets::seal::sealer_identity(sealer)))
            })
            .collect()
    }

    /// The sealed values whose plaintext is unchanged although their sealer changed, as
    /// `(path, key)`: `old_sealers` says, per cluster, how the previous tree was sealed
    /// (backend, identity); `previous` returns the object previously written at a path. Only
    /// the clusters whose sealer differs are looked at; without a fingerprint key, none.
    #[must_use]
    pub fn resealed(
        &self,
        old_sealers: &BTreeMap<String, (String, String)>,
        previous: &dyn Fn(&str) -> Option<Json>,
    ) -> std::collections::BTreeSet<(String, String)> {
        let mut out = std::collections::BTreeSet::new();
        let Some(key) = &self.fingerprint_key else { return out };
        for (cluster, pending) in &self.pending {
            let Some(sealer) = self.sealers[*cluster].as_ref() else { continue };
            let now = (crate::secrets::seal::backend_name(sealer), crate::secrets::seal::sealer_identity(sealer));
            let Some((old_backend, old_identity)) = old_sealers.get(&self.plans[*cluster].cluster) else { continue };
            if (old_backend.as_str(), old_identity) == (now.0, &now.1) {
                continue;
            }
            let Some(old) = previous(&pending.path) else { continue };
            for value in crate::secrets::seal::same_values(&pending.secret, &old, old_backend, old_identity, key) {
                out.insert((pending.path.clone(), value));
            }
        }
        out
    }

    /// Every file but the kept ones, by path relative to the output root (the sealed Secrets
    /// once sealed).
    #[must_use]
    pub fn files(&self) -> &Files {
        &self.files
    }

    /// The files the memo kept as they are in the previous tree (none without a memo).
    #[must_use]
    pub fn kept(&self) -> &Kept {
        &self.kept
    }

    /// The files and the kept files, giving up the rest (the plaintext Secrets are zeroized;
    /// the plans, a large cluster's tens of thousands of objects, are freed in the background).
    #[must_use]
    pub fn into_files(mut self) -> (Files, Kept) {
        let plans = std::mem::take(&mut self.plans);
        std::thread::spawn(move || drop(plans));
        (self.files, self.kept)
    }

    /// The plan of the `index`th cluster added and, when it was added with a memo, the digest
    /// of each of its components ([`Plan::component_digests`]).
    #[must_use]
    pub fn laid_out(&self, index: usize) -> Option<(&Plan, Option<&[[u8; 32]]>)> {
        Some((self.plans.get(index)?, self.digests.get(index)?.as_deref()))
    }

    /// The plans, one per cluster, in the order the clusters were added.
    #[must_use]
    pub fn plans(&self) -> &[Plan] {
        &self.plans
    }

    /// The names of the clusters, in the order they were added.
    pub fn clusters(&self) -> impl Iterator<Item = &str> {
        self.plans.iter().map(|plan| plan.cluster.as_str())
    }
}

fn seal_one(
    pending: &Pending,
    sealer: &Sealer,
    key: Option<&FingerprintKey>,
    old: Option<&Json>,
    seed: [u8; 32],
) -> Result<(String, Vec<u8>), Error> {
    let secret = &pending.secret;
    let failed = |source| Error::Seal {
        component: pending.component.clone(),
        namespace: secret.namespace.clone(),
        name: secret.name.clone(),
        source,
    };
    let body = seal(secret, old, sealer, key, &mut StdRng::from_seed(seed)).map_err(failed)?;
    let text = crate::manifest::to_yaml(&body).map_err(|e| Error::Yaml(sealer.target(secret).to_string(), e))?;
    Ok((pending.path.clone(), text.into_bytes()))
}

/// `map` with `entries` added, a later entry for a path replacing an earlier one. Into an empty
/// map (a tree's first cluster), collected: sorted once, not searched per path.
fn extend<V: Send>(map: &mut BTreeMap<String, V>, entries: Vec<(String, V)>) {
    if map.is_empty() {
        *map = crate::sorted::into_map(entries);
    } else {
        map.extend(entries);
    }
}
