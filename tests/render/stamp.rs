//! The cluster stamp: in a fleet, a cluster whose inputs and files are those of the last render
//! is not rendered again, and any change to what it is rendered from (its environment layer,
//! its sealing certificate, the operator overrides, a hand edit of its files) renders it again,
//! to the tree a render without a memo writes.

use super::{copy_fixture, mask_ciphertext, read_tree};
use crate::common::{self, report};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The files of `cluster` in `tree`.
fn of(tree: &BTreeMap<String, String>, cluster: &str) -> BTreeMap<String, String> {
    let prefix = format!("clusters/{cluster}/");
    tree.iter().filter(|(path, _)| path.starts_with(&prefix)).map(|(p, t)| (p.clone(), t.clone())).collect()
}

fn unchanged_note(output: &Output) -> Option<usize> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let note = stdout.split("; ").find_map(|part| {
        part.strip_suffix(" clusters unchanged, not rendered again")
            .or_else(|| part.strip_suffix(" cluster unchanged, not rendered again"))
            .or_else(|| part.strip_suffix(" clusters unchanged, not rendered again)\n"))
            .or_else(|| part.strip_suffix(" cluster unchanged, not rendered again)\n"))
    });
    note.map(|n| n.parse().unwrap())
}

/// Asserts the memoised tree `out` equals a render of `spec` without a memo, but for ciphertext.
fn same_as_without_memo(spec: &Path, out: &Path, fresh: &Path, operator_tag: &str, what: &str) {
    let output = common::fixture_command()
        .env("OPERATOR_IMAGE_TAG", operator_tag)
        .args(["render", spec.to_str().unwrap(), "--out", fresh.to_str().unwrap(), "--no-memo"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    same_trees(out, fresh, what);
}

/// Asserts the memoised tree `out` holds the files of `fresh` (a render without a memo), but
/// for ciphertext.
pub(super) fn same_trees(out: &Path, fresh: &Path, what: &str) {
    let (memoised, fresh) = (read_tree(out), read_tree(fresh));
    assert_eq!(memoised.keys().collect::<Vec<_>>(), fresh.keys().collect::<Vec<_>>(), "{what}");
    for (path, content) in &memoised {
        assert_eq!(mask_ciphertext(content), mask_ciphertext(&fresh[path]), "{what}: `{path}` is stale");
    }
}

/// Every sealed Secret of `out` holds the values of `fresh`'s. Both were sealed over the same
/// tree, so a value that did not change keeps its ciphertext on both sides; a file whose bytes
/// differ was sealed again on one side at least, and is opened (with the demo's key, DEV ONLY).
pub(super) fn same_values(out: &Path, fresh: &Path, what: &str) {
    let (ours, theirs) = (super::read_tree(out), super::read_tree(fresh));
    for (path, text) in ours.iter().filter(|(path, text)| theirs[*path] != **text) {
        assert!(path.contains("/sealedsecret-"), "{what}: `{path}` differs: {text}");
        assert_eq!(common::unsealed(&out.join(path)), common::unsealed(&fresh.join(path)), "{what}: `{path}` holds stale values");
    }
}

#[test]
fn an_unchanged_cluster_of_a_fleet_is_not_rendered_again_and_any_input_of_it_renders_it() {
    let dir = tempfile::tempdir().unwrap();
    // NB: the fleet's clusters name their certificate as `../demo/keys/sealed-secrets.pem`.
    let spec = copy_fixture("fleet", dir.path());
    copy_fixture("demo", dir.path());
    let (out, fresh, memos): (PathBuf, PathBuf, PathBuf) = (dir.path().join("out"), dir.path().join("fresh"), dir.path().join("memos"));
    let render = |operator_tag: &str| {
        let output = common::fixture_command()
            .env("TFRS_CACHE_DIR", &memos)
            .env("OPERATOR_IMAGE_TAG", operator_tag)
            .args(["render", spec.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        output
    };
    assert_eq!(unchanged_note(&render("v1")), None, "nothing to compare with yet");
    assert_eq!(unchanged_note(&render("v1")), Some(3), "{}", report(&render("v1")));

    // One cluster's environment layer: that cluster only is rendered, to what a render without
    // a memo writes; the others' files are not touched.
    let before = read_tree(&out);
    let layer = spec.join("environments/prod.yaml");
    std::fs::write(&layer, std::fs::read_to_string(&layer).unwrap().replace("storage: 50Gi", "storage: 80Gi")).unwrap();
    let output = render("v1");
    assert_eq!(unchanged_note(&output), Some(2), "{}", report(&output));
    let after = read_tree(&out);
    assert_ne!(of(&after, "prod"), of(&before, "prod"));
    for name in ["dev", "staging"] {
        assert_eq!(of(&after, name), of(&before, name), "{name} is left as it was");
    }
    same_as_without_memo(&spec, &out, &fresh, "v1", "prod's environment changed");

    // A hand edit of a file of dev: dev is rendered again and the file restored.
    let edited = after.keys().find(|p| p.starts_with("clusters/dev/") && p.ends_with(".yaml") && !p.contains("sealedsecret-")).unwrap();
    std::fs::write(out.join(edited), "kind: Edited\n").unwrap();
    let output = render("v1");
    assert_eq!(unchanged_note(&output), Some(2), "{}", report(&output));
    assert_eq!(read_tree(&out)[edited], after[edited], "restored");

    // The operator overrides from the environment: every cluster is rendered again.
    let output = render("v2");
    assert_eq!(unchanged_note(&output), None, "{}", report(&output));
    same_as_without_memo(&spec, &out, &fresh, "v2", "the operator's tag changed");

    // The sealing certificate's file: every cluster is rendered again (its Secrets are sealed
    // again only if the key in it changed; here only the file did).
    let certificate = dir.path().join("demo/keys/sealed-secrets.pem");
    std::fs::write(&certificate, format!("{}\n", std::fs::read_to_string(&certificate).unwrap())).unwrap();
    let output = render("v2");
    assert_eq!(unchanged_note(&output), None, "{}", report(&output));
    assert_eq!(unchanged_note(&render("v2")), Some(3));
}
