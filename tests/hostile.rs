//! Hostile input: YAML bombs, deep nesting, tags, control characters, huge strings and
//! `fromFile` escapes. Each gives a clean error or an exact round trip, in bounded time, and no
//! crash (a signal or a panic is a failure).

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::report;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs tfrs; fails if it runs longer than `limit` (then it is killed) or dies of a signal.
fn bounded(args: &[&str], limit: Duration) -> Output {
    let child = common::tfrs_command()
        .args(args)
        .env("TFRS_MASTER_KEY", std::fs::read_to_string(root().join("fixtures/demo/keys/master.key")).unwrap().trim())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // NB: the output is drained on another thread, so a long report cannot fill the pipe and
    // stall the child while we wait.
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output()));
    let start = Instant::now();
    let output = match receiver.recv_timeout(limit) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("tfrs {args:?} ran longer than {limit:?} ({:?})", start.elapsed());
        }
    };
    assert!(output.status.code().is_some(), "tfrs {args:?} died of a signal: {}", report(&output));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"), "tfrs {args:?} panicked: {}", report(&output));
    output
}

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn an_alias_bomb_fails_fast() {
    let output = bounded(&["validate", "fixtures/hostile-alias-bomb"], LIMIT);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fixtures/hostile-alias-bomb/spec.yaml:") && stderr.contains("alias"), "{stderr}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let dir = tempfile::tempdir().unwrap();
    for (name, open, close) in [("lists", "[", "]"), ("maps", "{a: ", "}")] {
        let depth = 100_000;
        let text = format!(
            "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {{name: deep}}\nspec:\n  ingress: {{domain: deep.example.com}}\n  overlays: {}x{}\n",
            open.repeat(depth),
            close.repeat(depth)
        );
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, text).unwrap();
        let output = bounded(&["validate", path.to_str().unwrap()], LIMIT);
        assert_eq!(output.status.code(), Some(1), "{name}: {}", report(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("nested deeper than") || stderr.contains("recursion limit exceeded"), "{name}: {}", report(&output));
        assert!(stderr.lines().all(|line| line.chars().count() < 400), "a report line stays readable");
    }
}

#[test]
fn yaml_tags_are_never_honoured() {
    let _ = std::fs::remove_file("/tmp/tfrs-pwned");
    let output = bounded(&["validate", "fixtures/hostile-yaml-tags"], LIMIT);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    assert!(!Path::new("/tmp/tfrs-pwned").exists());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("spec.ingress.domain"), "{stderr}");
}

#[test]
fn from_file_cannot_leave_the_spec_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = bounded(&["render", "fixtures/hostile-from-file-escape", "--out", out.to_str().unwrap()], LIMIT);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("spec.imageRegistry.password")
            && stderr.contains("outside the spec file's directory")
            && stderr.contains("--allow-outside"),
        "{stderr}"
    );
    assert!(!stderr.contains("PRIVATE KEY"), "never the content");
    assert!(!out.exists());
    let output = bounded(&["render", "fixtures/hostile-from-file-escape", "--out", out.to_str().unwrap(), "--allow-outside"], LIMIT);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
}

#[test]
fn control_characters_and_look_alikes_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = bounded(&["render", "fixtures/hostile-control-characters", "--out", out.to_str().unwrap()], LIMIT);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let text = std::fs::read_to_string(out.join("clusters/controls/components/namespaces/t/servers/bot/config/configmap-bot-config.yaml"))
        .unwrap();
    let data = tfrs_gitops::spec::yaml::parse(0, &text).unwrap()[0].to_json()["data"].clone();
    let expected = [
        ("NUL", "a\0b"),
        ("BELL_TAB", "\u{7}\t\u{1b}[31mred"),
        ("NEL_LS_PS", "x\u{85}y\u{2028}z\u{2029}"),
        ("BOM_ZW", "\u{feff}start\u{200b}mid"),
        ("RTL", "\u{202e}evil.exe"),
        ("EMOJI", "🤖 robot ✓"),
        ("DOC_MARKERS", "---\n...\n--- !!str\n"),
        ("FLOW", "{a: [b, c]}, &anchor *alias"),
        ("KEYWORDS", "yes"),
        ("NUMBERY", "0x1F"),
        ("DATE", "2024-01-01"),
        ("TILDE", "~"),
        ("TEMPLATE", "{{ 7*7 }}{% raw %}{#"),
        ("DEL_C1", "a\u{7f}b\u{9b}c\u{fffe}"),
    ];
    for (key, value) in expected {
        assert_eq!(data[key], value, "{key}");
    }
}

#[test]
fn huge_strings_round_trip_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x: \"y\" {{ z }}\n".repeat(65_536); // 1 MiB
    let spec = std::fs::read_to_string(root().join("fixtures/hostile-control-characters/spec.yaml"))
        .unwrap()
        .replace("../demo/keys/sealed-secrets.pem", &root().join("fixtures/demo/keys/sealed-secrets.pem").to_string_lossy())
        .replace("    TILDE: \"~\"\n", &format!("    TILDE: \"~\"\n    BIG: {}\n", serde_json::to_string(&big).unwrap()));
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let out = dir.path().join("out");
    let output = bounded(&["render", dir.path().to_str().unwrap(), "--out", out.to_str().unwrap()], LIMIT);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let text = std::fs::read_to_string(out.join("clusters/controls/components/namespaces/t/servers/bot/config/configmap-bot-config.yaml"))
        .unwrap();
    let data = tfrs_gitops::spec::yaml::parse(0, &text).unwrap()[0].to_json()["data"].clone();
    assert_eq!(data["BIG"].as_str().map(str::len), Some(big.len()));
    assert_eq!(data["BIG"], big.as_str());
}

#[test]
fn raw_nul_bytes_and_invalid_utf8_are_clean_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("nul.yaml", b"apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: n\x00ul}\n".to_vec()),
        ("latin1.yaml", b"apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: caf\xe9}\n".to_vec()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let output = bounded(&["validate", path.to_str().unwrap()], LIMIT);
        assert!(matches!(output.status.code(), Some(1 | 2)), "{name}: {}", report(&output));
        assert!(String::from_utf8_lossy(&output.stderr).contains(name), "{name}: {}", report(&output));
    }
}
