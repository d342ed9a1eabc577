//! `tfrs infra`: the rendered stack against the real tools that consume it (`docker-compose
//! config`, `sops`), a real PostgreSQL and Redis started with `.env.infra`'s credentials and
//! reached with the manager's values, and `infra check` on hand-broken files.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::{report, root, tfrs_command};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SPEC: &str = "fixtures/infra/staging.yaml";

fn tfrs(args: &[&str]) -> Output {
    tfrs_command().args(args).env_remove("TFRS_MASTER_KEY").output().expect("the tfrs binary runs")
}

/// A render of the staging fixture into `dir/out`, with both plaintext copies in `dir`.
struct Rendered {
    out: PathBuf,
    infra: BTreeMap<String, String>,
    manager: BTreeMap<String, String>,
    infra_path: PathBuf,
    manager_path: PathBuf,
}

/// `tfrs infra render SPEC` with the demo's master key into `out`, the plaintext copy at
/// `plaintext`, and `extra` arguments.
fn infra_render(spec: &str, out: &Path, plaintext: &Path, extra: &[&str]) -> Output {
    let key = root().join("fixtures/demo/keys/master.key");
    let mut args = vec!["infra", "render", spec, "--master-key-file", key.to_str().unwrap()];
    args.extend(["--out", out.to_str().unwrap(), "--plaintext-out", plaintext.to_str().unwrap()]);
    args.extend_from_slice(extra);
    tfrs(&args)
}

fn render(dir: &Path) -> Rendered {
    let out = dir.join("out");
    let (infra_path, manager_path) = (dir.join(".env.infra"), dir.join("tfrsmanager_env.staging.yml"));
    let output = infra_render(SPEC, &out, &infra_path, &["--manager-plaintext-out", manager_path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("wrote ")).count(), 8, "{stdout}");
    assert!(
        stdout.lines().last().is_some_and(|l| l.starts_with("rendered the staging infrastructure into ") && l.ends_with("(8 files)")),
        "{stdout}"
    );
    let infra = std::fs::read_to_string(&infra_path).unwrap();
    let infra = infra
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_once('=').unwrap())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let manager: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&manager_path).unwrap()).unwrap();
    let manager = serde_json::from_value(manager).unwrap();
    Rendered { out, infra, manager, infra_path, manager_path }
}

/// The generated values (passwords and keys: what must never appear in plaintext).
fn secret_values(rendered: &Rendered) -> Vec<String> {
    let secret = |name: &str| name.contains("PASSWORD") || name.contains("SECRET") || name.contains("KEY");
    rendered.infra.iter().chain(&rendered.manager).filter(|(k, _)| secret(k)).map(|(_, v)| v.clone()).collect()
}

#[test]
fn render_writes_encrypted_files_and_plaintext_only_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path());
    let values = secret_values(&rendered);
    assert_eq!(values.len(), 12, "{:?}", rendered.infra.keys().chain(rendered.manager.keys()).collect::<Vec<_>>());
    let mut names: Vec<String> =
        std::fs::read_dir(&rendered.out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".tfrs-infra-fingerprints.json",
            "docker-compose.cloud.yml",
            "env.infra.sops.yaml",
            "infisical-bootstrap.json",
            "infisical-bootstrap.md",
            "tfrsmanager_env.staging.yml"
        ]
    );
    for name in &names {
        let text = std::fs::read_to_string(rendered.out.join(name)).unwrap();
        for value in &values {
            assert!(!text.contains(value.as_str()), "{name} holds a plaintext value");
        }
    }
    for path in [&rendered.infra_path, &rendered.manager_path] {
        assert_eq!(std::fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600, "{}", path.display());
    }
    // Shared by construction.
    for name in ["DB_PASSWORD", "REDIS_PASSWORD", "OTLP_TS_PASSWORD"] {
        assert_eq!(rendered.infra[name], rendered.manager[name], "{name}");
    }
    assert_eq!(rendered.manager["SECRET_ENCRYPTION_KEY"].chars().count(), 32);
    let key = &rendered.infra["INFISICAL_ENCRYPTION_KEY"];
    assert!(key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit()), "INFISICAL_ENCRYPTION_KEY is not 32 hex");
    // A re-render derives the same values.
    let again = render(&dir.path().join("again"));
    assert_eq!((again.infra, again.manager), (rendered.infra.clone(), rendered.manager.clone()));
    // The encrypted files open with the age identity, and say the same as the plaintext copies.
    let identity = root().join("fixtures/demo/keys/age.txt");
    let check = tfrs(&[
        "infra",
        "check",
        rendered.out.join("env.infra.sops.yaml").to_str().unwrap(),
        rendered.out.join("tfrsmanager_env.staging.yml").to_str().unwrap(),
        rendered.infra_path.to_str().unwrap(),
        rendered.manager_path.to_str().unwrap(),
        "--age-identity",
        identity.to_str().unwrap(),
    ]);
    assert_eq!(check.status.code(), Some(0), "{}", report(&check));
}

#[test]
fn a_plaintext_copy_inside_the_output_directory_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let with_plaintext = |spec: &str, out: &Path, plaintext: &Path| infra_render(spec, out, plaintext, &[]);
    let inside = out.join(".env.infra");
    let output = with_plaintext(SPEC, &out, &inside);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is inside `--out"), "{}", report(&output));
    assert!(!out.exists());
    let sneaky = out.join("../out/sub/.env.infra");
    let output = with_plaintext(SPEC, &out, &sneaky);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    // A plaintext path that cannot be written (no such directory): no file is replaced, not
    // even the ones that could be.
    let first = render(dir.path());
    let files = || -> Vec<Vec<u8>> {
        ["docker-compose.cloud.yml", "env.infra.sops.yaml"].iter().map(|f| std::fs::read(first.out.join(f)).unwrap()).collect()
    };
    let before = files();
    let rotated = dir.path().join("rotated.yaml");
    std::fs::write(&rotated, format!("{}  rotation:\n    DB_PASSWORD: 3\n", std::fs::read_to_string(root().join(SPEC)).unwrap())).unwrap();
    let nowhere = dir.path().join("no/such/dir/.env.infra");
    let output = with_plaintext(rotated.to_str().unwrap(), &first.out, &nowhere);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert_eq!(files(), before, "a failed render replaced files");
    let leftovers: Vec<String> = std::fs::read_dir(&first.out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // No master key: an environment error that says how to give one, and nothing written.
    let elsewhere = dir.path().join("elsewhere");
    let output = tfrs(&["infra", "render", SPEC, "--out", elsewhere.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--master-key-file"), "{}", report(&output));
    assert!(!elsewhere.exists());
}

#[test]
fn an_invalid_spec_reports_every_problem_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join(SPEC))
        .unwrap()
        .replace("memoryLimit: 2g", "memoryLimit: 1g")
        .replace("projectSlug: tfrs-staging", "projectSlug: 6f1c7f4e-8a2b-4c3d-9e0f-112233445566")
        .replace("url: https://secret-staging.example.com", "url: https://secret.example.com")
        .replace("  timescaledb:\n    port: 5433", "  timescaledb:\n    image: timescale/timescaledb:latest\n    port: 5433\n    typo: 1");
    let spec = dir.path().join("broken.yaml");
    std::fs::write(&spec, text).unwrap();
    let output = tfrs(&["infra", "plan", spec.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let located: Vec<&str> = stderr.lines().filter(|l| l.starts_with(spec.to_str().unwrap())).collect();
    // The schema error comes alone first (the rules run on a document that fits the schema).
    assert!(located.iter().any(|l| l.contains("spec.timescaledb.typo")), "{stderr}");
    let text = std::fs::read_to_string(&spec).unwrap().replace("    typo: 1\n", "");
    std::fs::write(&spec, text).unwrap();
    let output = tfrs(&["infra", "render", spec.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        ":20:18: spec.infisical.memoryLimit: Infisical needs a memory limit of at least 1536m",
        ":18:18: spec.infisical.projectSlug: this is a project id, not a slug",
        ":16:10: spec.infisical.url: the URL's host names the prod instance, but this is the staging environment",
        ":22:12: spec.timescaledb.image: expected an image pinned to a release",
    ] {
        assert!(stderr.lines().any(|l| l.starts_with(spec.to_str().unwrap()) && l.contains(expected)), "{expected}\n{stderr}");
    }
    assert!(!dir.path().join("out").exists());
}

#[test]
fn the_plan_lists_the_bootstrap_without_values() {
    let markdown = tfrs(&["infra", "plan", SPEC]);
    assert_eq!(markdown.status.code(), Some(0), "{}", report(&markdown));
    let json = tfrs(&["infra", "plan", SPEC, "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", report(&json));
    let plan: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let folders: Vec<&str> = plan["folders"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(folders, ["/kubeconfig", "/registry", "/otlp", "/otlp-eso-auth"]);
    assert_eq!(plan["identities"][0]["projectRole"], "Admin");
    assert_eq!(plan["identities"][1]["projectRole"], "No Access");
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path());
    let text = String::from_utf8_lossy(&markdown.stdout);
    for value in secret_values(&rendered) {
        assert!(!text.contains(value.as_str()) && !plan.to_string().contains(value.as_str()), "the plan holds a value");
    }
    assert_eq!(std::fs::read_to_string(rendered.out.join("infisical-bootstrap.md")).unwrap(), text);
}

#[test]
fn check_names_each_broken_invariant_by_variable_and_file_never_by_value() {
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path());
    let manager = std::fs::read_to_string(&rendered.manager_path).unwrap();
    let infra = std::fs::read_to_string(&rendered.infra_path).unwrap();
    let otlp = &rendered.manager["OTLP_TS_PASSWORD"];
    let secret_key = &rendered.manager["SECRET_ENCRYPTION_KEY"];
    let long_key = "0123456789abcdef".repeat(4);
    let broken_manager = manager
        .replace(otlp.as_str(), "DifferentOtlpPassword4242")
        .replace(secret_key.as_str(), &long_key)
        .replace("INFISICAL_PROJECT_SLUG: tfrs-staging", "INFISICAL_PROJECT_SLUG: 6f1c7f4e-8a2b-4c3d-9e0f-112233445566")
        .replace("INFISICAL_INTERNAL_URL: https://secret-staging.example.com", "INFISICAL_INTERNAL_URL: https://secret.example.com");
    let encryption = &rendered.infra["INFISICAL_ENCRYPTION_KEY"];
    let broken_infra =
        infra.replace(encryption.as_str(), &format!("{encryption}{encryption}")).replace(&rendered.infra["REDIS_PASSWORD"], "OtherRedis77");
    let manager_path = dir.path().join("broken/tfrsmanager_env.staging.yml");
    let infra_path = dir.path().join("broken/.env.infra");
    std::fs::create_dir_all(manager_path.parent().unwrap()).unwrap();
    std::fs::write(&manager_path, &broken_manager).unwrap();
    std::fs::write(&infra_path, &broken_infra).unwrap();
    assert_ne!(broken_manager, manager);
    let output = tfrs(&["infra", "check", infra_path.to_str().unwrap(), manager_path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (m, i) = (manager_path.to_str().unwrap(), infra_path.to_str().unwrap());
    for expected in [
        format!("{m}:3: OTLP_TS_PASSWORD: differs from `{i}`"),
        format!("{m}:2: REDIS_PASSWORD: differs from `{i}`"),
        format!("{m}:5: SECRET_ENCRYPTION_KEY: has 64 characters"),
        format!("{m}:7: INFISICAL_PROJECT_SLUG: holds a project id"),
        format!("{m}:9: INFISICAL_INTERNAL_URL: names the prod instance but `INFISICAL_ENVIRONMENT` is the staging environment"),
        format!("{i}:9: INFISICAL_ENCRYPTION_KEY: must be 16 bytes as hex"),
    ] {
        assert!(stdout.lines().any(|l| l.starts_with(&expected)), "{expected}\n{stdout}");
    }
    assert_eq!(stdout.lines().count(), 6, "{stdout}");
    let all = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    for value in ["DifferentOtlpPassword4242", "OtherRedis77", long_key.as_str(), encryption.as_str(), otlp.as_str(), secret_key.as_str()] {
        assert!(!all.contains(value), "a value was printed");
    }
    // Unreadable input is a usage error, not a finding.
    let missing = tfrs(&["infra", "check", dir.path().join("nope.env").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2), "{}", report(&missing));
    let sops = tfrs(&["infra", "check", rendered.out.join("env.infra.sops.yaml").to_str().unwrap()]);
    assert_eq!(sops.status.code(), Some(2), "{}", report(&sops));
    assert!(String::from_utf8_lossy(&sops.stderr).contains("--age-identity"), "{}", report(&sops));
}

#[test]
fn docker_compose_accepts_the_stack_with_its_env_file() {
    let Some(compose) = common::tool_or_skip("docker-compose") else { return };
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path());
    let output = Command::new(compose)
        .arg("-f")
        .arg(rendered.out.join("docker-compose.cloud.yml"))
        .arg("--env-file")
        .arg(&rendered.infra_path)
        .arg("config")
        .env_remove("COMPOSE_FILE")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", report(&output));
    let config: serde_json::Value = serde_saphyr::from_slice(&output.stdout).unwrap();
    let services = config["services"].as_object().unwrap();
    let names: Vec<&String> = services.keys().collect();
    assert_eq!(names, ["infisical", "infisical-postgres", "infisical-redis", "postgres", "redis", "timescaledb"]);
    for (name, service) in services {
        assert!(service["healthcheck"]["test"].is_array(), "{name}: no health check");
        assert_eq!(
            service["networks"].as_object().map(|n| n.keys().map(String::as_str).collect::<Vec<_>>()),
            Some(vec!["tfrs-net"]),
            "{name}"
        );
        // docker-compose 1.x prints `127.0.0.1:5433:5432/tcp`, 2.x a map with `host_ip`.
        for port in service["ports"].as_array().into_iter().flatten() {
            let loopback = port.as_str().map_or_else(|| port["host_ip"] == "127.0.0.1", |p| p.starts_with("127.0.0.1:"));
            assert!(loopback, "{name}: {port}");
        }
    }
    assert_eq!(services["infisical"]["mem_limit"], "2g");
    let timescaledb = &services["timescaledb"]["ports"][0];
    assert!(
        timescaledb
            .as_str()
            .map_or_else(|| timescaledb["published"].to_string().contains("5433"), |p| p.starts_with("127.0.0.1:5433:5432")),
        "{timescaledb}"
    );
    // Compose filled the credentials from `.env.infra`.
    assert_eq!(services["timescaledb"]["environment"]["POSTGRES_PASSWORD"], rendered.infra["OTLP_TS_PASSWORD"].as_str());
    assert_eq!(services["postgres"]["environment"]["POSTGRES_USER"], rendered.infra["DB_USER"].as_str());
    let volumes: Vec<&str> = config["volumes"].as_object().unwrap().values().map(|v| v["name"].as_str().unwrap()).collect();
    assert!(volumes.contains(&"tfrs_tsdata") && volumes.contains(&"tfrs_ts_wal_archive"), "{volumes:?}");
    assert_eq!(config["networks"]["tfrs-net"]["name"], "tfrs-net");
}

#[test]
fn real_sops_opens_the_encrypted_files() {
    let Some(sops) = common::tool_or_skip("sops") else { return };
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path());
    let decrypt = |file: &str, format: &str| {
        let output = Command::new(&sops)
            .args(["--disable-version-check", "--decrypt", "--output-type", format])
            .arg(rendered.out.join(file))
            .env("SOPS_AGE_KEY_FILE", root().join("fixtures/demo/keys/age.txt"))
            .env_remove("SOPS_AGE_KEY")
            .output()
            .unwrap();
        assert!(output.status.success(), "{file}: {}", report(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    // `.env.infra` for the server, in the dotenv form compose reads.
    let dotenv = decrypt("env.infra.sops.yaml", "dotenv");
    let lines: Vec<String> = rendered.infra.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut got: Vec<String> = dotenv.lines().map(str::to_owned).collect();
    got.sort();
    assert_eq!(got, lines);
    let manager: BTreeMap<String, String> = serde_json::from_str(&decrypt("tfrsmanager_env.staging.yml", "json")).unwrap();
    assert_eq!(manager, rendered.manager);
    // A `.env.infra` that `sops` itself encrypted (its dotenv form, `sops_…` lines) is read by
    // `infra check`, its MAC verified; a broken invariant inside it is still found.
    let broken = std::fs::read_to_string(&rendered.infra_path).unwrap().replace(&rendered.infra["DB_PASSWORD"], "NotTheManagersPassword1");
    let plain = dir.path().join("hand.env.infra");
    std::fs::write(&plain, broken).unwrap();
    let output = Command::new(&sops)
        .args(["--disable-version-check", "--encrypt", "--input-type", "dotenv", "--output-type", "dotenv", "--age"])
        .arg(common_recipient())
        .arg(&plain)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", report(&output));
    let encrypted = dir.path().join("sops.env.infra");
    std::fs::write(&encrypted, &output.stdout).unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("sops_mac="));
    let identity = root().join("fixtures/demo/keys/age.txt");
    let check = tfrs(&[
        "infra",
        "check",
        encrypted.to_str().unwrap(),
        rendered.manager_path.to_str().unwrap(),
        "--age-identity",
        identity.to_str().unwrap(),
    ]);
    assert_eq!(check.status.code(), Some(1), "{}", report(&check));
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("DB_PASSWORD: differs from") && !stdout.contains("NotTheManagersPassword1"), "{stdout}");
    let tampered = String::from_utf8_lossy(&output.stdout).replacen("DB_USER=ENC[AES256_GCM,data:", "DB_USER=ENC[AES256_GCM,data:AA", 1);
    std::fs::write(&encrypted, tampered).unwrap();
    let check = tfrs(&["infra", "check", encrypted.to_str().unwrap(), "--age-identity", identity.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(2), "{}", report(&check));
}

/// The age recipient of the demo identity (DEV ONLY).
fn common_recipient() -> String {
    let identity = std::fs::read_to_string(root().join("fixtures/demo/keys/age.txt")).unwrap();
    identity.lines().find_map(|l| l.strip_prefix("# public key: ")).unwrap().trim().to_owned()
}

#[path = "infra/services.rs"]
mod services;

#[test]
fn the_json_schema_accepts_the_example_and_refuses_what_the_loader_refuses() {
    let Some(python) = common::python_with("jsonschema, yaml") else { return };
    let output = tfrs(&["infra", "schema"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, &output.stdout).unwrap();
    let example = std::fs::read_to_string(root().join(SPEC)).unwrap();
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, example.replace("environment: staging\n  infisical", "environment: qa\n  postgress: {}\n  infisical")).unwrap();
    let script = "import json, sys, yaml, jsonschema\nschema = json.load(open(sys.argv[1]))\nv = jsonschema.Draft202012Validator(schema)\nfor path in sys.argv[2:]:\n    errors = list(v.iter_errors(yaml.safe_load(open(path))))\n    print(path, len(errors))\n";
    let output = Command::new(python).args(["-c", script]).arg(&schema).arg(root().join(SPEC)).arg(&broken).output().unwrap();
    assert!(output.status.success(), "{}", report(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let counts: Vec<usize> = stdout.lines().map(|l| l.rsplit(' ').next().unwrap().parse().unwrap()).collect();
    assert_eq!(counts.len(), 2, "{stdout}");
    assert_eq!(counts[0], 0, "the example does not match the schema: {stdout}");
    assert!(counts[1] >= 2, "the schema accepts an unknown field and an unknown environment: {stdout}");
}

#[test]
fn a_re_render_keeps_unchanged_encrypted_files_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("staging.yaml");
    let example = std::fs::read_to_string(root().join(SPEC)).unwrap();
    std::fs::write(&spec, &example).unwrap();
    let out = dir.path().join("out");
    let key = root().join("fixtures/demo/keys/master.key");
    let render = || {
        let output = tfrs(&[
            "infra",
            "render",
            spec.to_str().unwrap(),
            "--master-key-file",
            key.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 1, "{}", report(&output));
        ["env.infra.sops.yaml", "tfrsmanager_env.staging.yml", ".tfrs-infra-fingerprints.json"].map(|f| std::fs::read(out.join(f)).unwrap())
    };
    let first = render();
    assert_eq!(render(), first, "an unchanged spec changed an encrypted file");
    // A rotated manager-only value re-encrypts the manager's file only.
    std::fs::write(&spec, format!("{example}  rotation:\n    JWT_SECRET: 1\n")).unwrap();
    let rotated = render();
    assert_eq!(rotated[0], first[0], "`.env.infra` holds no JWT_SECRET and must not change");
    assert_ne!(rotated[1], first[1]);
    assert_ne!(rotated[2], first[2]);
    // A file changed behind tfrs's back (its MAC no longer matches the record) is re-encrypted.
    let text = String::from_utf8(rotated[0].clone()).unwrap();
    let mac_at = text.find("mac: ENC[AES256_GCM,data:").unwrap() + "mac: ENC[AES256_GCM,data:".len();
    let other = if text.as_bytes()[mac_at] == b'A' { 'B' } else { 'A' };
    let tampered = format!("{}{other}{}", &text[..mac_at], &text[mac_at + 1..]);
    assert_ne!(tampered, text);
    std::fs::write(out.join("env.infra.sops.yaml"), &tampered).unwrap();
    let again = render();
    assert_eq!(again[1], rotated[1]);
    assert_ne!(again[0], tampered.as_bytes(), "a changed file was kept");
}

#[test]
fn the_platform_commands_point_an_infra_spec_at_tfrs_infra() {
    let output = tfrs(&["validate", "fixtures/infra"]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fixtures/infra/staging.yaml:10:7: kind: unknown kind"), "{stderr}");
    assert!(stderr.contains("read alone by `tfrs infra render` and `tfrs infra plan`"), "{stderr}");
}
