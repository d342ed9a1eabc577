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
    // NB: a default branch other than `main`: the audit searches it without `--ref`.
    git(dir.path(), &["init", "-q", "-b", "trunk", repo.to_str().unwrap()]);
    // `render-servers` gives its server `everything` an outside Redis whose literal password
    // `confzData` sets (named in `confzCredentialOverrides`): sealed, the history is clean.
    let committed = tfrs(&["commit", "fixtures/render-servers", "--repo", repo.to_str().unwrap()]);
    assert_eq!(committed.status.code(), Some(0), "{}", report(&committed));
    let clean = tfrs(&["audit", "fixtures/render-servers", "--repo", repo.to_str().unwrap()]);
    assert_eq!(clean.status.code(), Some(0), "{}", report(&clean));
    // A commit that holds the literal, in plain text, is reported by its logical path.
    git(&repo, &["checkout", "-q", "-f", "trunk"]);
    std::fs::write(repo.join("config.toml"), format!("[redis]\npassword = \"{OUTSIDE_REDIS_PASSWORD}\"\n")).unwrap();
    git(&repo, &["add", "config.toml"]);
    git(&repo, &["commit", "-q", "-m", "debug config"]);
    let found = tfrs(&["audit", "fixtures/render-servers", "--repo", repo.to_str().unwrap()]);
    assert_eq!(found.status.code(), Some(1), "{}", report(&found));
    let stdout = String::from_utf8_lossy(&found.stdout);
    assert!(stdout.contains("`config.toml`: `cluster/robots/server/everything/confzData/redis.password` (raw)"), "{stdout}");
    assert!(stdout.contains("1 leak in 2 commits of `trunk`"), "{stdout}");
    assert!(!report(&found).contains(OUTSIDE_REDIS_PASSWORD), "the audit never prints a value");
}

#[test]
fn audit_reports_leaks_as_json_sarif_and_annotations_at_their_line() {
    use common::OUTSIDE_REDIS_PASSWORD;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    git(dir.path(), &["init", "-q", "-b", "main", repo.to_str().unwrap()]);
    // The literal at line 2, column 13 (after `password = "`, in characters: `é` is one).
    std::fs::write(
        repo.join("config, old.toml"),
        format!("[redis]\npassword = \"{OUTSIDE_REDIS_PASSWORD}\"\n").replacen("[redis]", "[rédis]", 1),
    )
    .unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", &format!("debug {OUTSIDE_REDIS_PASSWORD}")]);
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&repo).output().unwrap();
    let head = String::from_utf8(head.stdout).unwrap().trim().to_owned();
    let audit = |format: &str| {
        let output = tfrs(&["audit", "fixtures/render-servers", "--repo", repo.to_str().unwrap(), "--format", format]);
        assert_eq!(output.status.code(), Some(1), "{format}: {}", report(&output));
        assert!(!report(&output).contains(OUTSIDE_REDIS_PASSWORD), "{format}: never the value");
        output
    };
    let secret = "cluster/robots/server/everything/confzData/redis.password";

    let json: serde_json::Value = serde_json::from_slice(&audit("json").stdout).unwrap();
    assert_eq!((json["result"].as_str(), json["commits"].as_u64(), json["errors"].as_u64()), (Some("leaks"), Some(1), Some(2)), "{json}");
    let findings = json["findings"].as_array().unwrap();
    let message = &findings[0];
    assert_eq!(
        (message["file"].is_null(), message["commit"].as_str(), message["secret"].as_str()),
        (true, Some(head.as_str()), Some(secret))
    );
    let file = &findings[1];
    assert_eq!(file["file"], "config, old.toml", "{file}");
    assert_eq!((file["line"].as_u64(), file["column"].as_u64(), file["encoding"].as_str()), (Some(2), Some(13), Some("raw")), "{file}");
    assert_eq!(file["rule"], "leaked-secret");

    let sarif = audit("sarif");
    if let Some(problems) = common::sarif_problems(&sarif.stdout) {
        assert_eq!(problems, "", "the SARIF log is invalid");
    }
    let log: serde_json::Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let run = &log["runs"][0];
    let root = common::directory_uri(&repo.canonicalize().unwrap());
    assert_eq!(run["originalUriBaseIds"]["SRCROOT"]["uri"], root.as_str(), "paths are the audited repository's");
    assert!(run["results"][0].get("locations").is_none(), "a commit message has no file");
    let location = &run["results"][1]["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "config%2C%20old.toml");
    assert_eq!((location["region"]["startLine"].as_u64(), location["region"]["startColumn"].as_u64()), (Some(2), Some(13)));
    assert_eq!(run["results"][1]["properties"]["commit"], head.as_str());

    let github = String::from_utf8(audit("github").stdout).unwrap();
    let lines: Vec<&str> = github.lines().collect();
    assert!(lines[0].starts_with("::error title=tfrs leaked-secret::secret `cluster/robots/"), "{github}");
    assert!(lines[1].starts_with("::error file=config%2C old.toml,line=2,col=13,title=tfrs leaked-secret::secret `"), "{github}");
    assert_eq!(lines[2], format!("2 leaks in 1 commits of `main` ({} secrets searched)", json["secretsSearched"]));
}
