//! Helpers shared by the integration test crates.

pub mod sandbox;

use std::process::Output;

/// A command's whole result as text: exit code, stdout, stderr (the shape of CLI snapshots).
#[must_use]
pub fn report(output: &Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The repository root (where `fixtures/` lives).
#[allow(dead_code)]
#[must_use]
pub fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Copies the directory `from` (recursively) to `to`, e.g. a fixture into a temp dir to edit it.
#[allow(dead_code)]
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// The `tfrs` binary as a command run from the repository root, keeping render memos in the
/// build directory instead of the user's cache.
#[allow(dead_code)]
#[must_use]
pub fn tfrs_command() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tfrs"));
    command.current_dir(root()).env("TFRS_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/tfrs-memo"));
    command
}

/// The render fixtures, each a directory below `fixtures/`.
/// The `stringData` of the sealed Secret at `path`, opened with `tfrs unseal` and the demo's
/// key (DEV ONLY).
#[allow(dead_code)]
#[must_use]
pub fn unsealed(path: &std::path::Path) -> serde_json::Value {
    let output =
        tfrs_command().args(["unseal", "--private-key", "fixtures/demo/keys/sealed-secrets.key"]).arg(path).output().expect("run tfrs");
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    tfrs_gitops::spec::yaml::parse(0, &text).expect("YAML")[0].to_json()["stringData"].clone()
}

#[allow(dead_code)]
pub const RENDER_FIXTURES: &[&str] = &[
    "demo",
    "render-argocd-tke",
    "render-sops-docker-desktop",
    "render-minimal",
    "render-hostile",
    "render-enterprise-full",
    "render-enterprise-minimal",
    "render-servers",
    "render-billing",
];

/// The `fromEnv` values the render fixtures read (test-only values).
#[allow(dead_code)]
pub const OPENAI_KEY: &str = "sk-env-openai-test-5c1d";
#[allow(dead_code)]
pub const ESO_CLIENT_ID: &str = "eso-client-id-test-81f0";
#[allow(dead_code)]
pub const ESO_CLIENT_SECRET: &str = "eso-client-secret-test-c7a2";
#[allow(dead_code)]
pub const REDIS_PASSWORD: &str = "test-redis-password-2b1e";
#[allow(dead_code)]
pub const REGISTRY_PASSWORD: &str = "test-registry-token-7f3a9c";
/// The literal Redis password `render-servers` gives its server `everything` in `confzData`
/// (named in `confzCredentialOverrides`; a test-only value).
#[allow(dead_code)]
pub const OUTSIDE_REDIS_PASSWORD: &str = "outside-redis-literal-4c8e";

/// `tfrs_command()` with the environment the render fixtures read: the demo master key and the
/// `fromEnv` values of the fixtures (all test-only values).
#[allow(dead_code)]
#[must_use]
pub fn fixture_command() -> std::process::Command {
    let key = std::fs::read_to_string(root().join("fixtures/demo/keys/master.key")).expect("the demo master key");
    let mut command = tfrs_command();
    command
        .env("TFRS_MASTER_KEY", key.trim())
        .env("TFRS_TEST_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        .env("TFRS_TEST_REDIS_PASSWORD", REDIS_PASSWORD)
        .env("TFRS_TEST_OPENAI_KEY", OPENAI_KEY)
        .env("TFRS_TEST_ESO_CLIENT_ID", ESO_CLIENT_ID)
        .env("TFRS_TEST_ESO_CLIENT_SECRET", ESO_CLIENT_SECRET)
        .env("ACME_OPENAI_API_KEY", "sk-test-acme-openai-key")
        .env_remove("OPERATOR_HELM_REPO_URL")
        .env_remove("OPERATOR_CHART_VERSION")
        .env_remove("OPERATOR_IMAGE_TAG")
        .env_remove("OPERATOR_RELEASE_NAME");
    command
}

/// What the SARIF 2.1.0 JSON schema finds wrong with `log` (empty when it is valid), checked by
/// `tests/tools/validate_sarif.py`. `None` when its Python packages are missing outside CI
/// (one line says so); under `CI=true` that fails.
#[allow(dead_code)]
#[must_use]
pub fn sarif_problems(log: &[u8]) -> Option<String> {
    let venv = root().join("target/venv/bin/python");
    let python = if venv.exists() { venv } else { std::path::PathBuf::from("python3") };
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), log).expect("write the log");
    let output = std::process::Command::new(&python)
        .arg(root().join("tests/tools/validate_sarif.py"))
        .arg(file.path())
        .output()
        .expect("run the SARIF validator");
    match output.status.code() {
        Some(0) => Some(String::new()),
        Some(1) => Some(String::from_utf8_lossy(&output.stdout).into_owned()),
        _ => {
            let why = String::from_utf8_lossy(&output.stderr);
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the SARIF validator is required under CI=true (.ci/run installs it): {why}"
            );
            eprintln!("skipped: SARIF schema check ({}; run .ci/run)", why.trim());
            None
        }
    }
}

/// A directory as a SARIF `file:` URI with a trailing `/`: every byte but unreserved ones and
/// `/` percent-encoded (RFC 3986), whatever characters the checkout's path holds.
#[allow(dead_code)]
#[must_use]
pub fn directory_uri(dir: &std::path::Path) -> String {
    let mut uri = String::from("file://");
    for byte in dir.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push('/');
    uri
}

/// Whether the tests run under `CI=true` (where a missing outside tool is a failure).
#[allow(dead_code)]
pub fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// An outside tool from the CI venv (`target/venv/bin`) or PATH; `None` when it is missing,
/// which fails under `CI=true` (`.ci/run` installs it). The caller prints its own skip line.
#[allow(dead_code)]
pub fn outside_tool(name: &str) -> Option<std::path::PathBuf> {
    let venv = root().join("target/venv/bin").join(name);
    if venv.exists() {
        return Some(venv);
    }
    let found = std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()));
    assert!(found.is_some() || !ci(), "`{name}` is required under CI=true (.ci/run installs it)");
    found
}

/// [`outside_tool`], printing one skip line when it is missing.
#[allow(dead_code)]
pub fn tool_or_skip(name: &str) -> Option<std::path::PathBuf> {
    let found = outside_tool(name);
    if found.is_none() {
        eprintln!("skipped: `{name}` not installed (run .ci/run)");
    }
    found
}

/// A Python that can import `modules` (`"a, b"`), or `None` with one skip line (a failure
/// under `CI=true`).
#[allow(dead_code)]
pub fn python_with(modules: &str) -> Option<std::path::PathBuf> {
    let python = tool_or_skip("python3")?;
    let ok = std::process::Command::new(&python).args(["-c", &format!("import {modules}")]).status().is_ok_and(|s| s.success());
    if !ok {
        assert!(!ci(), "python `{modules}` is required under CI=true (.ci/run installs it)");
        eprintln!("skipped: python `{modules}` not installed (run .ci/run)");
        return None;
    }
    Some(python)
}
