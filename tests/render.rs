//! End-to-end tests of `tfrs render` and `tfrs graph`: rendered trees are snapshots, re-rendering
//! is byte-identical, hostile strings round-trip, no plaintext secret is written, a failed
//! render keeps the previous tree, and outside tools (kubectl kustomize, kubernetes-validate)
//! and the pinned upstream CRDs accept every tree.
//!
//! This file holds the helpers and the snapshot and graph tests; the rest is grouped by concern:
//! `tree` (the tree on disk), `secrets`, `validity` (what checks every tree) and `components`
//! (what tenants, servers and billing render), in `tests/render/`.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;
mod crd;

#[path = "render/components.rs"]
mod components;
#[path = "render/partial.rs"]
mod partial;
#[path = "render/secrets.rs"]
mod secrets;
#[path = "render/stamp.rs"]
mod stamp;
#[path = "render/tree.rs"]
mod tree;
#[path = "render/unit.rs"]
mod unit;
#[path = "render/validity.rs"]
mod validity;

use common::report;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::RENDER_FIXTURES;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn master_key() -> String {
    std::fs::read_to_string(root().join("fixtures/demo/keys/master.key")).unwrap().trim().to_owned()
}

fn tfrs(args: &[&str]) -> Output {
    common::fixture_command().args(args).output().expect("the tfrs binary runs")
}

fn render(fixture: &str, out: &Path) -> Output {
    let output = tfrs(&["render", &format!("fixtures/{fixture}"), "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{fixture}: {}", report(&output));
    output
}

fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Replaces ciphertext (fresh on every seal by design) with a marker, so snapshots show
/// structure and tests can compare two independent renders.
fn mask_ciphertext(text: &str) -> String {
    let mut out = String::new();
    let mut in_encrypted_data = false;
    let mut in_age_block = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if in_age_block {
            if trimmed.starts_with("-----END AGE ENCRYPTED FILE-----") {
                in_age_block = false;
            }
            continue;
        }
        if trimmed.starts_with("encryptedData:") {
            in_encrypted_data = true;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if in_encrypted_data && indent >= 4 && trimmed.contains(": ") {
            let key = trimmed.split(": ").next().unwrap_or_default();
            out.push_str(&format!("{}{key}: <sealed>\n", " ".repeat(indent)));
            continue;
        }
        in_encrypted_data = in_encrypted_data && indent >= 4;
        if trimmed.starts_with("-----BEGIN AGE ENCRYPTED FILE-----") {
            in_age_block = true;
            out.push_str(&format!("{}<age-wrapped data key>\n", " ".repeat(indent)));
            continue;
        }
        if let Some(start) = line.find("ENC[AES256_GCM,") {
            out.push_str(&format!("{}ENC[<sops>]\n", &line[..start]));
            continue;
        }
        if trimmed.starts_with("lastmodified:") || trimmed.starts_with("tfrs.turingfocus.cn/fingerprints:") {
            let key = trimmed.split(':').next().unwrap_or_default();
            out.push_str(&format!("{}{key}: <varies>\n", " ".repeat(indent)));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn rendered_trees_match_their_snapshots() {
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        let tree = read_tree(&out);
        let mut text = String::new();
        for (path, content) in &tree {
            text.push_str(&format!("=== {path}\n{}", mask_ciphertext(content)));
        }
        insta::assert_snapshot!(format!("tree@{fixture}"), text);
    }
}

#[test]
fn graph_draws_the_cluster_components() {
    let mermaid = tfrs(&["graph", "fixtures/demo"]);
    assert_eq!(mermaid.status.code(), Some(0), "{}", report(&mermaid));
    let dot = tfrs(&["graph", "fixtures/demo", "--format", "dot"]);
    assert_eq!(dot.status.code(), Some(0), "{}", report(&dot));
    insta::assert_snapshot!("graph-mermaid", String::from_utf8_lossy(&mermaid.stdout));
    insta::assert_snapshot!("graph-dot", String::from_utf8_lossy(&dot.stdout));
}

/// A tool from PATH that answers `probe` successfully, or `None` (a failure under `CI=true`).
fn tool(name: &str, probe: &[&str]) -> Option<PathBuf> {
    let found = Command::new(name).args(probe).output().is_ok_and(|o| o.status.success());
    if found {
        return Some(PathBuf::from(name));
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "`{name} {}` must work under CI=true", probe.join(" "));
    eprintln!("skipping: `{name} {}` failed", probe.join(" "));
    None
}

/// Every SealedSecret of a rendered tree, opened by kubesealpy, by path below `components/`.
fn unseal_all(python: &Path, out: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let sealed: Vec<PathBuf> = read_tree(out).keys().filter(|p| p.contains("/sealedsecret-")).map(|p| out.join(p)).collect();
    let script = "import json, sys\nfrom kubesealpy import Unsealer, SealedSecret\nu = Unsealer.from_private_key_file(sys.argv[1])\nprint(json.dumps({p.split('/components/')[1]: {k: v.decode() for k, v in u.unseal(SealedSecret.from_yaml(open(p).read())).get_data_decoded().items()} for p in sys.argv[2:]}))\n";
    let output =
        Command::new(python).args(["-c", script]).arg(root().join("fixtures/demo/keys/sealed-secrets.key")).args(&sealed).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A copy of a fixture in a temp dir, to change.
fn copy_fixture(fixture: &str, dir: &Path) -> PathBuf {
    let target = dir.join(fixture);
    for (path, content) in read_tree(&root().join("fixtures").join(fixture)) {
        let destination = target.join(path);
        std::fs::create_dir_all(destination.parent().unwrap()).unwrap();
        std::fs::write(destination, content).unwrap();
    }
    target
}

#[test]
fn graph_of_several_clusters_is_one_document() {
    let output = tfrs(&["graph", "fixtures/render-minimal", "fixtures/render-sops-docker-desktop", "--format", "dot"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(text.matches("digraph").count(), 1, "{text}");
    assert!(text.contains("\"laptop:cluster/istiod\" -> \"laptop:cluster/istio-ingress\""), "{text}");
    assert!(text.contains("\"bare:cluster/image-registry\""), "{text}");
}
