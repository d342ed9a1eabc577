//! `tfrs validate --format json|sarif|github`: the machine-readable reports carry exactly the
//! findings of the text report (file, line, column, field, message, severity), with the same
//! exit status; the SARIF validates against the SARIF 2.1.0 JSON schema and points at the same
//! places; the GitHub annotations are well-formed workflow commands.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::{report, root};
use serde_json::Value;
use std::process::Output;

/// Every fixture directory.
fn fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("fixtures"))
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn validate(args: &[&str], master_key: bool) -> Output {
    let mut command = common::fixture_command();
    if !master_key {
        command.env_remove("TFRS_MASTER_KEY");
    }
    command.arg("validate").args(args).output().unwrap()
}

/// `(severity, file, line, column, field, message)` of each header line of a text report.
fn text_findings(stderr: &str) -> Vec<(String, String, usize, usize, String, String)> {
    let header = regex::Regex::new(r"^(fixtures/[^:]+):(\d+):(\d+): (warning: )?(\S+): (.*)$").unwrap();
    stderr
        .lines()
        .filter_map(|line| header.captures(line))
        .map(|c| {
            let severity = if c.get(4).is_some() { "warning" } else { "error" };
            (severity.to_owned(), c[1].to_owned(), c[2].parse().unwrap(), c[3].parse().unwrap(), c[5].to_owned(), c[6].to_owned())
        })
        .collect()
}

fn json_findings(document: &Value) -> Vec<(String, String, usize, usize, String, String)> {
    document["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let text = |key: &str| f[key].as_str().unwrap_or_default().to_owned();
            let number = |key: &str| usize::try_from(f[key].as_u64().unwrap_or(0)).unwrap();
            (text("severity"), text("file"), number("line"), number("column"), text("field"), text("message"))
        })
        .collect()
}

fn parse(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", report(output)))
}

#[test]
fn json_carries_the_text_reports_findings_and_exit_status() {
    for fixture in fixtures() {
        let dir = format!("fixtures/{fixture}");
        for (extra, master_key) in [(&[][..], true), (&["--render-env"][..], true), (&["--render-env"][..], false)] {
            let args: Vec<&str> = [dir.as_str()].into_iter().chain(extra.iter().copied()).collect();
            let text = validate(&args, master_key);
            let json = validate(&[args.as_slice(), &["--format", "json"]].concat(), master_key);
            let context = format!("{fixture} {extra:?} master key {master_key}");
            assert_eq!(json.status.code(), text.status.code(), "{context}: exit status\n{}\n{}", report(&text), report(&json));
            if json.stdout.is_empty() && json.status.code() == Some(2) {
                // The command could not run (no spec file): the same error, on stderr.
                assert_eq!(json.stderr, text.stderr, "{context}");
                continue;
            }
            assert!(json.stderr.is_empty(), "{context}: machine formats print nothing on stderr: {}", report(&json));
            let document = parse(&json);
            let expected = text_findings(&String::from_utf8_lossy(&text.stderr));
            assert_eq!(json_findings(&document), expected, "{context}\n{}", report(&text));
            let errors = expected.iter().filter(|f| f.0 == "error").count();
            assert_eq!(document["errors"], errors, "{context}");
            let result = match text.status.code() {
                Some(0) => "valid",
                Some(1) => "invalid",
                _ => "environment",
            };
            assert_eq!(document["result"], result, "{context}");
        }
    }
}

/// Fixtures whose SARIF is checked: errors in one and in two files, a syntax error, a warning,
/// a user overlay, and every environment problem at once (one cause with other places).
const SARIF_CASES: &[(&str, &[&str], bool)] = &[
    ("fixtures/err-many-problems", &[], true),
    ("fixtures/err-errors-in-two-files", &[], true),
    ("fixtures/err-yaml-syntax", &[], true),
    ("fixtures/warn-letsencrypt-unreachable", &[], true),
    ("fixtures/err-bad-user-overlay", &[], true),
    ("fixtures/env-broken-all", &["--render-env"], false),
    ("fixtures/demo", &["--render-env"], true),
];

#[test]
fn sarif_validates_against_the_2_1_0_schema_and_points_where_the_text_does() {
    for (dir, extra, master_key) in SARIF_CASES {
        let args: Vec<&str> = [*dir].into_iter().chain(extra.iter().copied()).collect();
        let sarif = validate(&[args.as_slice(), &["--format", "sarif"]].concat(), *master_key);
        let json = parse(&validate(&[args.as_slice(), &["--format", "json"]].concat(), *master_key));
        let Some(problems) = common::sarif_problems(&sarif.stdout) else { return };
        assert_eq!(problems, "", "{dir}: the SARIF log is invalid");
        let log = parse(&sarif);
        let run = &log["runs"][0];
        let cwd = common::directory_uri(&root());
        assert_eq!(run["originalUriBaseIds"]["SRCROOT"]["uri"], cwd.as_str(), "{dir}");
        let results = run["results"].as_array().unwrap();
        let findings = json["findings"].as_array().unwrap();
        assert_eq!(results.len(), findings.len(), "{dir}");
        for (result, finding) in results.iter().zip(findings) {
            let location = &result["locations"][0]["physicalLocation"];
            assert_eq!(location["artifactLocation"]["uri"], finding["file"], "{dir}: {result}");
            assert_eq!(location["artifactLocation"]["uriBaseId"], "SRCROOT", "{dir}");
            assert_eq!(location["region"]["startLine"], finding["line"], "{dir}: {result}");
            assert_eq!(location["region"]["startColumn"], finding["column"], "{dir}: {result}");
            assert_eq!(result["level"], finding["severity"], "{dir}");
            assert_eq!(result["ruleId"], finding["rule"], "{dir}");
            let rule = usize::try_from(result["ruleIndex"].as_u64().unwrap()).unwrap();
            assert_eq!(run["tool"]["driver"]["rules"][rule]["id"], finding["rule"], "{dir}: ruleIndex names the rule");
            let related = result["relatedLocations"].as_array().map_or(0, Vec::len);
            assert_eq!(related, finding["also"].as_array().unwrap().len(), "{dir}: one related location per other place");
        }
    }
    // One cause said once, with its other places as related locations.
    let log = parse(&validate(&["fixtures/env-broken-all", "--render-env", "--format", "sarif"], false));
    let results = log["runs"][0]["results"].as_array().unwrap();
    let master = results.iter().find(|r| r["message"]["text"].as_str().unwrap().contains("master key")).unwrap();
    assert_eq!(master["ruleId"], "render-environment");
    assert_eq!(master["relatedLocations"].as_array().unwrap().len(), 2, "{master}");
}

#[test]
fn github_annotations_are_workflow_commands_on_the_findings_lines() {
    let command = regex::Regex::new(r"^::(error|warning) file=([^,:]+),line=(\d+),col=(\d+),title=tfrs [a-z-]+::([^\r\n]+)$").unwrap();
    let summary_line = regex::Regex::new(r"^(valid|invalid|environment): \d+ errors?, \d+ warnings?$").unwrap();
    for (dir, extra, master_key) in SARIF_CASES {
        let args: Vec<&str> = [*dir].into_iter().chain(extra.iter().copied()).collect();
        let github = validate(&[args.as_slice(), &["--format", "github"]].concat(), *master_key);
        let json = parse(&validate(&[args.as_slice(), &["--format", "json"]].concat(), *master_key));
        let stdout = String::from_utf8(github.stdout.clone()).unwrap();
        let (summary, annotations) = stdout.lines().collect::<Vec<_>>().split_last().map(|(s, a)| (*s, a.to_vec())).unwrap();
        assert!(summary_line.is_match(summary), "{summary}");
        let findings = json["findings"].as_array().unwrap();
        assert_eq!(annotations.len(), findings.len(), "{dir}: {stdout}");
        for (line, finding) in annotations.iter().zip(findings) {
            let c = command.captures(line).unwrap_or_else(|| panic!("{dir}: not a workflow command: {line}"));
            assert_eq!(&c[1], finding["severity"].as_str().unwrap(), "{line}");
            assert_eq!(&c[2], finding["file"].as_str().unwrap(), "{line}");
            assert_eq!(c[3].parse::<u64>().unwrap(), finding["line"].as_u64().unwrap(), "{line}");
            assert_eq!(c[4].parse::<u64>().unwrap(), finding["column"].as_u64().unwrap(), "{line}");
            let message = c[5].replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%");
            let first = format!("{}: {}", finding["field"].as_str().unwrap(), finding["message"].as_str().unwrap());
            assert!(message.starts_with(&first), "{line}");
            if let Some(help) = finding["help"].as_str() {
                assert!(message.ends_with(&format!("\nhelp: {help}")), "{line}");
            }
        }
        assert_eq!(
            github.status.code(),
            validate(&args, *master_key).status.code(),
            "{dir}: the exit status does not depend on the format"
        );
    }
}

#[test]
fn explain_is_text_only() {
    let output = validate(&["fixtures/demo", "--format", "json", "--explain", "spec.postgresql.instances"], true);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`--explain` prints text"), "{}", report(&output));
    assert!(output.stdout.is_empty());
}
