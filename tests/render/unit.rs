//! The namespace stamp: when a cluster is rendered again, a tenant namespace whose inputs and
//! files are those of the last render is given back whole, and anything it is rendered from (its
//! objects, a variable or file its secrets are read from, the spec file that names such a file,
//! the cluster's pull Secret, its sealing certificate, a hand edit of one of its files) renders
//! it again, to the tree a render without a memo writes.

use super::stamp::{same_trees, same_values};
use super::{copy_fixture, read_tree};
use crate::common::{self, report};
use std::path::Path;
use std::process::Output;

/// `(kept, of)` from "; N of M namespaces not rendered again", when the render says it.
pub(super) fn namespaces_kept(output: &Output) -> Option<(usize, usize)> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let part = stdout.split("; ").find_map(|part| part.trim_end_matches(")\n").strip_suffix(" namespaces not rendered again"))?;
    let (kept, of) = part.split_once(" of ")?;
    Some((kept.parse().unwrap(), of.parse().unwrap()))
}

/// Replaces `from` by `to` in `file`, which must hold it.
pub(super) fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "`{}` holds `{from}`", file.display());
    std::fs::write(file, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_namespace_is_given_back_whole_only_while_everything_it_is_rendered_from_holds() {
    let dir = tempfile::tempdir().unwrap();
    let spec = copy_fixture("demo", dir.path());
    let (out, fresh, memos) = (dir.path().join("out"), dir.path().join("fresh"), dir.path().join("memos"));
    // NB: bob's server reads a variable; robot1 (acme-corp) reads `secrets/openai-api-key.txt`.
    edit(&spec.join("servers.yaml"), "  tenant: bob\n", "  tenant: bob\n  secretData:\n    BOB_TOKEN: { fromEnv: TFRS_TEST_BOB_TOKEN }\n");
    let token = std::cell::RefCell::new("bob-1");
    // NB: `fresh` starts as a copy of `out` before each render, so that a value that did not
    // change keeps its ciphertext on both sides and a stale one is found (`same_values`).
    let render = || {
        let _ = std::fs::remove_dir_all(&fresh);
        if out.exists() {
            common::copy_dir(&out, &fresh);
        }
        let output = common::fixture_command()
            .env("TFRS_CACHE_DIR", &memos)
            .env("TFRS_TEST_BOB_TOKEN", *token.borrow())
            .args(["render", spec.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        output
    };
    let check = |what: &str| {
        let output = common::fixture_command()
            .env("TFRS_TEST_BOB_TOKEN", *token.borrow())
            .args(["render", spec.to_str().unwrap(), "--out", fresh.to_str().unwrap(), "--no-memo"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        same_trees(&out, &fresh, what);
        same_values(&out, &fresh, what);
    };
    assert_eq!(namespaces_kept(&render()), None, "nothing to compare with yet");

    // A server of one namespace: the other is given back.
    edit(&spec.join("servers.yaml"), "tag: v1.7.2", "tag: v1.7.3");
    let output = render();
    assert_eq!(namespaces_kept(&output), Some((1, 2)), "{}", report(&output));
    check("bob's server changed");

    // The variable bob's server reads: its namespace only.
    *token.borrow_mut() = "bob-2";
    assert_eq!(namespaces_kept(&render()), Some((1, 2)));
    check("bob's variable changed");

    // The file robot1 reads: acme-corp only.
    std::fs::write(spec.join("secrets/openai-api-key.txt"), "sk-demo-another-key\n").unwrap();
    assert_eq!(namespaces_kept(&render()), Some((1, 2)));
    check("robot1's file changed");

    // The spec file that names robot1's file moved: acme-corp, which reads a file relative to
    // it, is rendered again; the other namespace reads no file and is given back.
    std::fs::rename(spec.join("servers.yaml"), spec.join("robots.yaml")).unwrap();
    assert_eq!(namespaces_kept(&render()), Some((1, 2)));
    check("the servers' spec file moved");

    // A hand edit of a file of one namespace: that namespace, and the file is restored.
    let tree = read_tree(&out);
    let edited = tree.keys().find(|p| p.contains("/namespaces/personal-support/") && p.ends_with(".yaml")).unwrap().clone();
    std::fs::write(out.join(&edited), "kind: Edited\n").unwrap();
    let output = render();
    assert_eq!(namespaces_kept(&output), Some((1, 2)), "{}", report(&output));
    assert_ne!(read_tree(&out)[&edited], "kind: Edited\n", "restored");
    check("a file of personal-support edited");

    // What the cluster lends every namespace (the pull Secret's password file) and the
    // sealing certificate: every namespace.
    assert_eq!(namespaces_kept(&render()), None, "nothing changed: the cluster is not rendered at all");
    std::fs::write(spec.join("secrets/registry-password.txt"), "another-registry-password\n").unwrap();
    assert_eq!(namespaces_kept(&render()), None);
    check("the registry password changed");
    let certificate = spec.join("keys/sealed-secrets.pem");
    std::fs::write(&certificate, format!("{}\n", std::fs::read_to_string(&certificate).unwrap())).unwrap();
    assert_eq!(namespaces_kept(&render()), None);
    check("the certificate's file changed");
}

#[test]
fn the_same_file_named_from_another_layer_renders_its_namespace_again() {
    let dir = tempfile::tempdir().unwrap();
    let spec = copy_fixture("demo", dir.path());
    let (out, fresh, memos) = (dir.path().join("out"), dir.path().join("fresh"), dir.path().join("memos"));
    // NB: the team overlay (in `overlays/`) names the OpenAI key of every server, each reading
    // it relative to `overlays/`; robot1's own spec names the same path, read next to it.
    let overlay = spec.join("overlays/team.yaml");
    edit(
        &overlay,
        "kind: TFRServer\nspec:\n",
        "kind: TFRServer\nspec:\n  secretData:\n    OPENAI_API_KEY: { fromFile: secrets/openai-api-key.txt }\n",
    );
    std::fs::create_dir_all(spec.join("overlays/secrets")).unwrap();
    std::fs::write(spec.join("overlays/secrets/openai-api-key.txt"), "sk-overlay-key\n").unwrap();
    let render = || {
        let output = common::fixture_command()
            .env("TFRS_CACHE_DIR", &memos)
            .args(["render", spec.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        output
    };
    render();

    // robot1 no longer names the file itself: its merged spec is the same text, but the file is
    // now the overlay's. Its namespace is rendered again; the other is given back.
    edit(&spec.join("servers.yaml"), "    OPENAI_API_KEY: { fromFile: secrets/openai-api-key.txt }\n", "");
    let output = render();
    assert_eq!(namespaces_kept(&output), Some((1, 2)), "{}", report(&output));
    let output =
        common::fixture_command().args(["render", spec.to_str().unwrap(), "--out", fresh.to_str().unwrap(), "--no-memo"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    same_trees(&out, &fresh, "robot1's key read from the overlay's directory");
}

/// The stderr of `tfrs render SPEC --out OUT` (`extra` added), which must exit `code`.
fn render_errors(spec: &Path, out: &Path, memos: &Path, extra: &[&str], code: i32) -> String {
    let output = common::fixture_command()
        .env("TFRS_CACHE_DIR", memos)
        .args(["render", spec.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(code), "{}", report(&output));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn spec_pieces_kept_between_renders_give_the_same_tree_and_the_same_messages() {
    let dir = tempfile::tempdir().unwrap();
    let spec = copy_fixture("demo", dir.path());
    let (out, fresh, memos) = (dir.path().join("out"), dir.path().join("fresh"), dir.path().join("memos"));
    // A servers file of about 900 KB, parsed in pieces: servers of bob's, each after a long
    // comment, one of them holding a literal secret.
    let comment: String = (0..40).map(|i| format!("# {i:02} {}\n", "padding ".repeat(30))).collect();
    let servers: String = (0..90)
        .map(|i| {
            let secret = if i == 45 { "  secretData: { API_TOKEN: { value: s3cr3t-kept-piece } }\n" } else { "" };
            format!("---\n{comment}apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata: {{ name: extra{i} }}\nspec:\n  tenant: bob\n  image: {{ repository: docker.cnb.cool/turingfocus/tfrobot, tag: v1.8.0 }}\n{secret}")
        })
        .collect();
    let file = spec.join("servers.yaml");
    std::fs::write(&file, format!("{}{servers}", std::fs::read_to_string(&file).unwrap())).unwrap();
    assert_eq!(render_errors(&spec, &out, &memos, &[], 0), "");
    let cache = std::fs::read_dir(&memos).unwrap().map(|e| e.unwrap().path().join("specs.cache")).find(|p| p.exists()).expect("kept");
    let bytes = std::fs::read(&cache).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains("s3cr3t") && !String::from_utf8_lossy(&bytes).contains("extra45"), "nothing plain");

    // One server of the middle changed: the tree is the one a render without a memo writes.
    edit(
        &file,
        "metadata: { name: extra50 }\nspec:\n  tenant: bob\n  image: { repository: docker.cnb.cool/turingfocus/tfrobot, tag: v1.8.0 }",
        "metadata: { name: extra50 }\nspec:\n  tenant: bob\n  image: { repository: docker.cnb.cool/turingfocus/tfrobot, tag: v1.8.1 }",
    );
    assert_eq!(render_errors(&spec, &out, &memos, &[], 0), "");
    assert_ne!(std::fs::read(&cache).unwrap(), bytes, "the changed piece is kept in place of the old one");
    assert_eq!(render_errors(&spec, &fresh, &memos, &["--no-memo"], 0), "");
    super::stamp::same_trees(&out, &fresh, "one server of a large file changed");

    // Errors in pieces taken from the cache are located exactly as when parsed.
    edit(&spec.join("tenants.yaml"), "name: bob", "name: bobby");
    let kept = render_errors(&spec, &out, &memos, &[], 1);
    assert!(kept.contains("servers.yaml:") && kept.contains("`bob`"), "{kept}");
    assert_eq!(kept, render_errors(&spec, &fresh, &memos, &["--no-memo"], 1));
}
