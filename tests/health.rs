//! `readiness()` agrees with Argo CD's own health checks for the custom kinds we render: every test
//! case of Argo CD's `resource_customizations/<group>/<Kind>/health_test.yaml` (read from the pinned
//! upstream copy beside the checkout, `../shared/upstream/argo-cd/<tag>/`) is run through
//! [`readiness`] and must agree:
//!
//! - Argo `Healthy` <=> our `Ready`;
//! - `Progressing` => `InProgress` (never `Failed`: the controller is still working);
//! - `Degraded` => not ready: `Failed` where the signal is terminal for a rollout (waiting cannot
//!   help), else `InProgress` (the controller retries; the deadline decides);
//! - `Suspended` => `InProgress`, saying it is suspended or hibernated;
//! - `Unknown`, `Missing` => not ready.
//!
//! One difference is kept and reported as "stricter": a `Healthy` object whose
//! `status.observedGeneration` is not its `metadata.generation` is not ready here (rule 2 of
//! docs/reconcile.md: its status describes an older spec); Argo CD's Lua checks never read it.
//!
//! Without `../shared/upstream` the test prints one `skipping:` line, or fails under `CI=true`.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tfrs_gitops::reconcile::wait::{Readiness, readiness};

/// The API groups of the custom kinds we render, each checked for every kind Argo CD has a health
/// check for.
const GROUPS: [&str; 9] = [
    "bitnami.com",
    "cert-manager.io",
    "external-secrets.io",
    "helm.toolkit.fluxcd.io",
    "kustomize.toolkit.fluxcd.io",
    "minio.min.io",
    "postgresql.cnpg.io",
    "rabbitmq.com",
    "source.toolkit.fluxcd.io",
];

/// One test case of a `health_test.yaml`.
struct Case {
    /// `<group>/<Kind>`.
    kind: String,
    /// The test data file, relative to the kind's directory.
    input: String,
    /// Argo CD's verdict: `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing`, `Unknown`.
    argo: String,
    argo_message: String,
    object: Value,
}

/// A YAML file as JSON. A repeated key keeps its last value, as Go's YAML reader does in Argo
/// CD's tests: one RabbitMQ `User` test object has two `status:` keys, and its expected `Unknown`
/// is the verdict on the last one, `{}`.
fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let options = serde_saphyr::options! { duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::LastWins };
    serde_saphyr::from_str_with_options(&text, options).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The Argo CD release directory (`argo-cd/<tag>/`), or `None` after one `skipping:` line.
fn argo_cd() -> Option<PathBuf> {
    let upstream = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/upstream");
    if !upstream.is_dir() {
        let line = "skipping: Argo CD's health test cases (needs ../shared/upstream beside the checkout)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {line}");
        eprintln!("{line}");
        return None;
    }
    let releases = sorted_dirs(&upstream.join("argo-cd"));
    assert_eq!(releases.len(), 1, "expected one pinned Argo CD release under ../shared/upstream/argo-cd: {releases:?}");
    releases.into_iter().next()
}

/// Every test case of every kind of [`GROUPS`].
fn cases(release: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    for group in GROUPS {
        let kinds = sorted_dirs(&release.join("resource_customizations").join(group));
        let mut checked = 0;
        for kind_dir in kinds {
            let tests = kind_dir.join("health_test.yaml");
            if !tests.is_file() {
                continue; // a kind with actions only
            }
            checked += 1;
            let kind = format!("{group}/{}", kind_dir.file_name().unwrap().to_string_lossy());
            let listed = yaml(&tests);
            let listed = listed["tests"].as_array().unwrap_or_else(|| panic!("{}: no `tests` list", tests.display()));
            assert!(!listed.is_empty(), "{}: no test cases", tests.display());
            for test in listed {
                let input = test["inputPath"].as_str().unwrap_or_else(|| panic!("{kind}: a test without inputPath")).to_owned();
                let argo = test["healthStatus"]["status"].as_str().unwrap_or_else(|| panic!("{kind} {input}: no status")).to_owned();
                let argo_message = test["healthStatus"]["message"].as_str().unwrap_or("").to_owned();
                let object = yaml(&kind_dir.join(&input));
                cases.push(Case { kind: kind.clone(), input, argo, argo_message, object });
            }
        }
        assert!(checked > 0, "no health checks for {group} in {}", release.display());
    }
    cases
}

/// How our verdict on one case compares with Argo CD's.
enum Verdict {
    /// Agrees; the label is our verdict (`Ready`, `InProgress`, `Failed`).
    Agrees(&'static str),
    /// Argo CD says `Healthy` of an object whose controller has not observed its current
    /// generation: its Lua checks never read `observedGeneration`; our rule 2 does (the status,
    /// `Ready` included, describes an older spec), so not ready is expected.
    Stricter,
    /// Disagrees, and why.
    Disagrees(String),
}

/// Our verdict `ours` on `object` against Argo CD's `argo`.
fn compare(argo: &str, object: &Value, ours: &Readiness) -> Verdict {
    let label = match ours {
        Readiness::Ready => "Ready",
        Readiness::InProgress(_) => "InProgress",
        Readiness::Failed(_) => "Failed",
    };
    let generation = object.pointer("/metadata/generation").and_then(Value::as_i64);
    let observed = object.pointer("/status/observedGeneration").and_then(Value::as_i64);
    let unobserved = generation.is_some() && observed.is_some() && generation != observed;
    let ok = match (argo, ours) {
        ("Healthy", Readiness::InProgress(reason)) if unobserved && reason.starts_with("generation ") => return Verdict::Stricter,
        ("Healthy", Readiness::Ready) => true,
        ("Healthy", _) | (_, Readiness::Ready) => false,
        ("Degraded", _) => true,
        ("Progressing", Readiness::InProgress(_)) => true,
        ("Suspended", Readiness::InProgress(reason)) => {
            let reason = reason.to_lowercase();
            reason.contains("suspended") || reason.contains("hibernated")
        }
        ("Unknown" | "Missing", _) => true,
        _ => false,
    };
    if ok { Verdict::Agrees(label) } else { Verdict::Disagrees(format!("Argo CD says {argo}, we say {ours:?}")) }
}

/// Agreement of one kind's cases.
#[derive(Default)]
struct Tally<'a> {
    total: usize,
    agreed: usize,
    stricter: usize,
    /// Our verdicts on the cases Argo CD calls `Degraded`.
    degraded: BTreeMap<&'a str, usize>,
}

#[test]
fn readiness_agrees_with_argo_cd_health_checks() {
    let Some(release) = argo_cd() else { return };
    let cases = cases(&release);
    let mut per_kind: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut disagreements = Vec::new();
    let mut stricter = Vec::new();
    for case in &cases {
        let ours = readiness(&case.object);
        let tally = per_kind.entry(&case.kind).or_default();
        tally.total += 1;
        match compare(&case.argo, &case.object, &ours) {
            Verdict::Agrees(label) => {
                tally.agreed += 1;
                if case.argo == "Degraded" {
                    *tally.degraded.entry(label).or_default() += 1;
                }
            }
            Verdict::Stricter => {
                tally.stricter += 1;
                stricter.push(format!("{} {}: Argo CD says {}, we say {ours:?}", case.kind, case.input, case.argo));
            }
            Verdict::Disagrees(why) => disagreements.push(format!("{} {} ({:?}): {why}", case.kind, case.input, case.argo_message)),
        }
    }
    let agreed: usize = per_kind.values().map(|t| t.agreed).sum();
    let mut table = format!(
        "readiness vs Argo CD {}: {agreed} of {} cases agree, {} stricter (generation not observed)\n",
        release.file_name().unwrap().to_string_lossy(),
        cases.len(),
        stricter.len()
    );
    for (kind, tally) in &per_kind {
        let mut notes: Vec<String> = Vec::new();
        if !tally.degraded.is_empty() {
            let degraded: Vec<String> = tally.degraded.iter().map(|(label, n)| format!("{n} {label}")).collect();
            notes.push(format!("Degraded: {}", degraded.join(", ")));
        }
        if tally.stricter > 0 {
            notes.push(format!("{} stricter", tally.stricter));
        }
        let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
        writeln!(table, "  {kind:<45} {:>2}/{}{notes}", tally.agreed, tally.total).unwrap();
    }
    for line in &stricter {
        writeln!(table, "  stricter: {line}").unwrap();
    }
    eprint!("{table}");
    assert!(disagreements.is_empty(), "{table}{} disagreements:\n  {}", disagreements.len(), disagreements.join("\n  "));
}
