//! `tfrs audit` on repositories seeded with leaks: a clean history passes; a secret written raw,
//! base64 (inside a longer blob), percent- or JSON-escaped, in any commit or commit message, is
//! found and named by commit, path and logical path, never by value.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::{report, root};
use std::path::Path;
use std::process::{Command, Output};

/// tfrs with the fixtures' master key and secret inputs, committing as the audit test.
fn tfrs(args: &[&str]) -> Output {
    common::fixture_command().args(args).env("GIT_AUTHOR_NAME", "Audit Test").env("GIT_AUTHOR_EMAIL", "audit@example.com").output().unwrap()
}

fn git(repo: &Path, args: &[&str]) {
    let output =
        Command::new("git").args(["-c", "user.name=t", "-c", "user.email=t@example.com"]).args(args).current_dir(repo).output().unwrap();
    assert!(output.status.success(), "git {args:?}: {}", report(&output));
}

#[test]
fn audit_finds_every_planted_leak_and_never_prints_it() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    git(dir.path(), &["init", "-q", "-b", "main", repo.to_str().unwrap()]);
    let committed = tfrs(&["commit", "fixtures/demo", "--repo", repo.to_str().unwrap()]);
    assert_eq!(committed.status.code(), Some(0), "{}", report(&committed));
    let clean = tfrs(&["audit", "fixtures/demo", "--repo", repo.to_str().unwrap()]);
    assert_eq!(clean.status.code(), Some(0), "a rendered history holds no plaintext: {}", report(&clean));
    assert!(String::from_utf8_lossy(&clean.stdout).starts_with("clean: "), "{}", report(&clean));

    // Plant leaks of a derived password and of a fromFile token, each in another encoding.
    let master =
        tfrs_gitops::secrets::MasterKey::from_hex(std::fs::read_to_string(root().join("fixtures/demo/keys/master.key")).unwrap().trim())
            .unwrap();
    let derived =
        master.derive("cluster/demo/namespace/acme-corp/postgresql/password", &tfrs_gitops::spec::model::Generate::default()).to_string();
    let token = std::fs::read_to_string(root().join("fixtures/demo/secrets/registry-password.txt")).unwrap().trim_end().to_owned();
    git(&repo, &["checkout", "-q", "-f", "main"]);
    let plants = [
        ("notes/raw.txt", format!("password={derived}\n")),
        ("notes/b64.yaml", format!("data: {}\n", base64::engine::general_purpose::STANDARD.encode(format!("user:x\npass:{derived}\n")))),
        (
            "notes/url.txt",
            format!(
                "https://u:{}@h/\n",
                token
                    .bytes()
                    .map(|b| if b.is_ascii_alphanumeric() { char::from(b).to_string() } else { format!("%{b:02X}") })
                    .collect::<String>()
            ),
        ),
        ("notes/json.json", format!("{{\"t\": {}}}\n", serde_json::to_string(&token).unwrap())),
    ];
    for (path, content) in &plants {
        let file = repo.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, content).unwrap();
    }
    git(&repo, &["add", "notes"]);
    git(&repo, &["commit", "-q", "-m", "add notes"]);
    // A later commit removes them: history still has them.
    git(&repo, &["rm", "-q", "-r", "notes"]);
    git(&repo, &["commit", "-q", "-m", "remove notes"]);
    let found = tfrs(&["audit", "fixtures/demo", "--repo", repo.to_str().unwrap()]);
    assert_eq!(found.status.code(), Some(1), "{}", report(&found));
    let stdout = String::from_utf8_lossy(&found.stdout);
    assert!(stdout.contains("`notes/raw.txt`: `cluster/demo/namespace/acme-corp/postgresql/password` (raw)"), "{stdout}");
    assert!(stdout.contains("`notes/b64.yaml`: `cluster/demo/namespace/acme-corp/postgresql/password` (base64)"), "{stdout}");
    assert!(stdout.contains("`notes/url.txt`: `cluster/demo/imageRegistry/password` (percent)"), "{stdout}");
    assert!(stdout.contains("`notes/json.json`: `cluster/demo/imageRegistry/password`"), "{stdout}");
    assert!(stdout.contains("4 leaks in 3 commits"), "{stdout}");
    let all = report(&found);
    assert!(!all.contains(&derived) && !all.contains(&token), "the audit never prints a value");
    // In a commit message too.
    git(&repo, &["commit", "-q", "--allow-empty", "-m", &format!("rotate {derived}")]);
    let message = tfrs(&["audit", "fixtures/demo", "--repo", repo.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&message.stdout).contains("message: `cluster/demo/namespace/acme-corp/postgresql/password`"),
        "{}",
        report(&message)
    );
}

#[test]
fn audit_finds_a_literal_credential_of_confz_data() {
    use common::OUTSIDE_REDIS_PASSWORD;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    git(dir.path(), &["init", "-q", "-b", "main", repo.to_str().unwrap()]);
    // `render-servers` gives its server `everything` an outside Redis whose literal password
    // `confzData` sets (named in `confzCredentialOverrides`): sealed, the history is clean.
    let committed = tfrs(&["commit", "fixtures/render-servers", "--repo", repo.to_str().unwrap()]);
    assert_eq!(committed.status.code(), Some(0), "{}", report(&committed));
    let clean = tfrs(&["audit", "fixtures/render-servers", "--repo", repo.to_str().unwrap()]);
    assert_eq!(clean.status.code(), Some(0), "{}", report(&clean));
    // A commit that holds the literal, in plain text, is reported by its logical path.
    git(&repo, &["checkout", "-q", "-f", "main"]);
    std::fs::write(repo.join("config.toml"), format!("[redis]\npassword = \"{OUTSIDE_REDIS_PASSWORD}\"\n")).unwrap();
    git(&repo, &["add", "config.toml"]);
    git(&repo, &["commit", "-q", "-m", "debug config"]);
    let found = tfrs(&["audit", "fixtures/render-servers", "--repo", repo.to_str().unwrap()]);
    assert_eq!(found.status.code(), Some(1), "{}", report(&found));
    let stdout = String::from_utf8_lossy(&found.stdout);
    assert!(stdout.contains("`config.toml`: `cluster/robots/server/everything/confzData/redis.password` (raw)"), "{stdout}");
    assert!(stdout.contains("1 leak in 2 commits"), "{stdout}");
    assert!(!report(&found).contains(OUTSIDE_REDIS_PASSWORD), "the audit never prints a value");
}
