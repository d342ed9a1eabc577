//! The cluster stamp: a cluster whose inputs are those of the last render into the same output
//! directory, and whose files are still there byte for byte, is not rendered at all.
//!
//! The render memo ([`super::memo`]) saves the templating of unchanged components, but a
//! cluster still has its values made, its secrets resolved and its tree laid out, checked and
//! compared; in a fleet where one cluster changed, that is most of a re-render. The stamp
//! answers for the whole cluster at once:
//!
//! `stamp = HMAC-SHA256(memo_key, "tfrs/cluster/v1" ‖ lp(build) ‖ lp(cluster) ‖ inputs ‖
//! for each read: lp(kind) ‖ lp(key…) ‖ outcome)`
//!
//! `inputs` is the digest of everything the cluster's render is a function of besides secret
//! sources (`crate::pipeline::Setup::cluster_inputs`): the cluster's part of the spec as loaded,
//! the name and text of every spec file that part was read from, the operator overrides and the
//! sealing certificate. The *reads* are the environment variables and `fromFile` files the last
//! render resolved secrets from (a [`Recording`] of its [`SecretInputs`]). The stamp saved is
//! made from what each gave that render (a value, nothing, or an error); the check reads each
//! again and makes the stamp from what it gives now.
//! The stamp is keyed like the memo's: it holds no value and no plain hash of one; only the
//! names of the variables and the paths of the files are kept in the clear.
//!
//! A stamp that holds is not enough: the files the last render left must still be the ones its
//! records describe (`crate::tree::current`), or the cluster is rendered as usual.

use crate::secrets::bytes::{push_lp, to_hex};
use crate::secrets::resolve::SecretInputs;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use zeroize::Zeroizing;

/// One secret input a render read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Read {
    /// Environment variable (`fromEnv`).
    Env(String),
    /// `fromFile`: the path as written, relative to the directory of the spec file named first.
    File(String, String),
}

/// What each secret input gave: a tag (1 a value, 0 nothing, 2 an error) and the bytes.
pub type Outcomes = BTreeMap<Read, Zeroizing<Vec<u8>>>;

/// [`SecretInputs`] that remembers what was read and what it gave, so that the stamp covers the
/// values the render used (a file rewritten during the render must not pass for the new one).
pub struct Recording<'a> {
    inner: &'a dyn SecretInputs,
    reads: Mutex<Outcomes>,
}

impl<'a> Recording<'a> {
    /// Reads through `inner`.
    #[must_use]
    pub fn new(inner: &'a dyn SecretInputs) -> Recording<'a> {
        Recording { inner, reads: Mutex::new(BTreeMap::new()) }
    }

    /// What was read and what each gave, in order.
    #[must_use]
    pub fn into_outcomes(self) -> Outcomes {
        self.reads.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn note(&self, read: Read, outcome: Vec<u8>) {
        self.reads.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(read, Zeroizing::new(outcome));
    }
}

impl SecretInputs for Recording<'_> {
    fn env(&self, name: &str) -> Option<String> {
        let value = self.inner.env(name);
        self.note(Read::Env(name.to_owned()), env_outcome(value.as_deref()));
        value
    }

    fn file(&self, spec_file: &str, path: &str) -> Result<Vec<u8>, String> {
        let value = self.inner.file(spec_file, path);
        self.note(Read::File(spec_file.to_owned(), path.to_owned()), file_outcome(&value));
        value
    }
}

fn env_outcome(value: Option<&str>) -> Vec<u8> {
    value.map_or_else(|| vec![0], |value| outcome(1, value.as_bytes()))
}

fn file_outcome(value: &Result<Vec<u8>, String>) -> Vec<u8> {
    match value {
        Ok(bytes) => outcome(1, bytes),
        Err(error) => outcome(2, error.as_bytes()),
    }
}

/// What is kept of a cluster's render for the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStamp {
    /// The stamp, lowercase hex.
    pub stamp: String,
    /// When the records of the cluster's files saved with it were made (their `saved`): a stamp
    /// answers only beside the records of the same render.
    pub records: u64,
    /// How many templated units the render had (reported as given back when it is skipped).
    pub units: usize,
    /// The secret inputs it read.
    pub reads: BTreeSet<Read>,
    /// Its parts, for a render that finds only some namespaces changed ([`super::parts`]); none
    /// in a stamp of an earlier version, or of a render that could not make them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<super::parts::Parts>,
}

impl ClusterStamp {
    /// The stamp of cluster `cluster` of build `build`, from `inputs` (the digest of its spec
    /// part and the rest, see the module docs) and the `reads`, each read again from `source`.
    #[must_use]
    pub fn compute(
        key: &[u8; 32],
        build: &str,
        cluster: &str,
        inputs: &[u8; 32],
        reads: &BTreeSet<Read>,
        source: &dyn SecretInputs,
    ) -> String {
        Self::of(key, build, cluster, inputs, &read_again(reads, source))
    }

    /// The stamp of cluster `cluster` of build `build`, from `inputs` and what each secret
    /// input gave (`outcomes`, as a [`Recording`] saw them).
    #[must_use]
    pub fn of(key: &[u8; 32], build: &str, cluster: &str, inputs: &[u8; 32], outcomes: &Outcomes) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        let mut head = Vec::with_capacity(64 + build.len() + cluster.len());
        head.extend_from_slice(b"tfrs/cluster/v1");
        push_lp(&mut head, build.as_bytes());
        push_lp(&mut head, cluster.as_bytes());
        head.extend_from_slice(inputs);
        mac.update(&head);
        absorb_reads(&mut mac, outcomes);
        to_hex(&mac.finalize().into_bytes())
    }

    /// Whether this stamp holds for the current inputs, beside records made at `records`.
    #[must_use]
    pub fn holds(&self, key: &[u8; 32], build: &str, cluster: &str, inputs: &[u8; 32], records: u64, source: &dyn SecretInputs) -> bool {
        self.records == records && Self::compute(key, build, cluster, inputs, &self.reads, source) == self.stamp
    }
}

/// What each of `reads` gives now, read through `source` (and recorded there too, when it is a
/// [`Recording`]), as a [`Recording`] of the render's own reads would have put it.
#[must_use]
pub fn read_again(reads: &BTreeSet<Read>, source: &dyn SecretInputs) -> Outcomes {
    let recording = Recording::new(source);
    for read in reads {
        match read {
            Read::Env(name) => drop(recording.env(name).map(Zeroizing::new)),
            Read::File(spec_file, path) => drop(recording.file(spec_file, path).map(Zeroizing::new)),
        }
    }
    recording.into_outcomes()
}

/// Adds each read and what it gave to `mac`, in order: its kind and names length-prefixed, then
/// the outcome (the value goes into the keyed MAC only).
pub(crate) fn absorb_reads(mac: &mut Hmac<Sha256>, outcomes: &Outcomes) {
    for (read, outcome) in outcomes {
        let mut part = Vec::new();
        match read {
            Read::Env(name) => {
                push_lp(&mut part, b"env");
                push_lp(&mut part, name.as_bytes());
            }
            Read::File(spec_file, path) => {
                push_lp(&mut part, b"file");
                push_lp(&mut part, spec_file.as_bytes());
                push_lp(&mut part, path.as_bytes());
            }
        }
        mac.update(&part);
        mac.update(outcome);
    }
}

/// A tag byte, then `bytes` length-prefixed.
fn outcome(tag: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    push_lp(&mut out, bytes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        env: BTreeMap<String, String>,
        files: BTreeMap<(String, String), Result<Vec<u8>, String>>,
    }

    impl SecretInputs for Fake {
        fn env(&self, name: &str) -> Option<String> {
            self.env.get(name).cloned()
        }

        fn file(&self, spec_file: &str, path: &str) -> Result<Vec<u8>, String> {
            self.files.get(&(spec_file.to_owned(), path.to_owned())).cloned().unwrap_or_else(|| Err("no such file".into()))
        }
    }

    fn fake(token: &str, file: &[u8]) -> Fake {
        Fake {
            env: [("TOKEN".to_owned(), token.to_owned())].into_iter().collect(),
            files: [(("specs/a.yaml".to_owned(), "ca.pem".to_owned()), Ok(file.to_vec()))].into_iter().collect(),
        }
    }

    #[test]
    fn a_recording_names_what_was_read_and_the_stamp_follows_what_each_gives_now() {
        let source = fake("t1", b"pem");
        let recording = Recording::new(&source);
        assert_eq!(recording.env("TOKEN").as_deref(), Some("t1"));
        assert_eq!(recording.env("UNSET"), None);
        assert_eq!(recording.file("specs/a.yaml", "ca.pem").unwrap(), b"pem");
        let outcomes = recording.into_outcomes();
        let reads: BTreeSet<Read> = outcomes.keys().cloned().collect();
        assert_eq!(
            reads.iter().cloned().collect::<Vec<_>>(),
            [Read::Env("TOKEN".into()), Read::Env("UNSET".into()), Read::File("specs/a.yaml".into(), "ca.pem".into())]
        );

        let (key, inputs) = ([7; 32], [1; 32]);
        let stamp = |source: &Fake| ClusterStamp::compute(&key, "b", "dev", &inputs, &reads, source);
        let first = stamp(&source);
        assert_eq!(ClusterStamp::of(&key, "b", "dev", &inputs, &outcomes), first, "what the render read is what is read again");
        assert_eq!(stamp(&fake("t1", b"pem")), first, "the same inputs");
        assert_ne!(stamp(&fake("t2", b"pem")), first, "a variable's value");
        assert_ne!(stamp(&fake("t1", b"other")), first, "a file's content");
        let mut set = fake("t1", b"pem");
        set.env.insert("UNSET".into(), String::new());
        assert_ne!(stamp(&set), first, "a variable now set, even to nothing");
        let mut gone = fake("t1", b"pem");
        gone.files.clear();
        assert_ne!(stamp(&gone), first, "a file gone");
        assert_ne!(ClusterStamp::compute(&[8; 32], "b", "dev", &inputs, &reads, &source), first, "another key");
        assert_ne!(ClusterStamp::compute(&key, "b2", "dev", &inputs, &reads, &source), first, "another build");
        assert_ne!(ClusterStamp::compute(&key, "b", "prod", &inputs, &reads, &source), first, "another cluster");
        assert_ne!(ClusterStamp::compute(&key, "b", "dev", &[2; 32], &reads, &source), first, "other inputs");
        assert!(!first.contains("t1") && first.len() == 64, "a keyed MAC, nothing of a value");

        let kept = ClusterStamp { stamp: first, records: 5, units: 3, reads, parts: None };
        assert!(kept.holds(&key, "b", "dev", &inputs, 5, &source));
        assert!(!kept.holds(&key, "b", "dev", &inputs, 6, &source), "beside other records");
        assert!(!kept.holds(&key, "b", "dev", &inputs, 5, &fake("t2", b"pem")));
        let text = serde_json::to_string(&kept).unwrap();
        assert_eq!(serde_json::from_str::<ClusterStamp>(&text).unwrap(), kept);
    }
}
