//! Machine-readable reports of `tfrs validate` and `tfrs audit`: one JSON document, a SARIF
//! 2.1.0 log (what GitHub code scanning and GitLab read), or GitHub Actions workflow commands
//! (`::error file=…,line=…::`), so problems appear on the lines of a pull request.
//!
//! Every format carries the same findings as the text report: the rule, the severity, the file,
//! line and column, the field, the message and the help, and the other places one cause affects.
//! None carries a source excerpt, so no format can echo a line that holds a secret.

use crate::spec::Diagnostic;
use crate::spec::diagnostic::{FileTable, Rule, Severity};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;

/// A place a finding points at. `file` is `None` when it has no place in a file the user
/// wrote: a template error, a built-in overlay, a commit message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file, as the user named it (relative paths stay relative).
    pub file: Option<String>,
    /// 1-based line (with `file`).
    pub line: usize,
    /// 1-based column in characters (with `file`).
    pub column: usize,
    /// The field the finding is about, e.g. `spec.postgresql.instances`.
    pub field: Option<String>,
}

/// One finding of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Its rule's identifier (see [`RuleInfo`]).
    pub rule: &'static str,
    /// An error (else a warning).
    pub error: bool,
    /// What is wrong, lowercase, no final period; never a secret value.
    pub message: String,
    /// How to fix it, when known.
    pub help: Option<String>,
    /// Where.
    pub place: Place,
    /// The other places the same cause affects.
    pub also: Vec<Place>,
    /// Extra fields of the finding (audit: `commit`, `secret`, `encoding`).
    pub properties: Map<String, Value>,
}

/// A rule as a report describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleInfo {
    /// The stable identifier.
    pub id: &'static str,
    /// One line on what it checks.
    pub summary: &'static str,
}

/// The rules of spec diagnostics.
#[must_use]
pub fn spec_rules() -> Vec<RuleInfo> {
    Rule::ALL.iter().map(|rule| RuleInfo { id: rule.id(), summary: rule.summary() }).collect()
}

/// The findings of spec diagnostics, in order.
#[must_use]
pub fn findings(diagnostics: &[Diagnostic], files: &dyn FileTable) -> Vec<Finding> {
    diagnostics
        .iter()
        .map(|d| Finding {
            rule: d.rule.id(),
            error: d.severity == Severity::Error,
            message: d.message.clone(),
            help: d.help.clone(),
            place: place(files, d.origin, &d.path),
            also: d.also.iter().map(|p| place(files, p.origin, &p.path)).collect(),
            properties: Map::new(),
        })
        .collect()
}

/// A diagnostic's origin as a place: no file for line 0 (no position) or a name in angle
/// brackets (`<builtin>/…`, which the user did not write).
fn place(files: &dyn FileTable, origin: crate::spec::yaml::Origin, field: &str) -> Place {
    let name = files.name(origin.file);
    let file = (origin.line > 0 && !name.starts_with('<')).then(|| name.to_owned());
    Place { file, line: origin.line, column: origin.column, field: Some(field.to_owned()).filter(|f| !f.is_empty()) }
}

/// The JSON document: `summary` (the command's own fields) then the counts and the findings.
#[must_use]
pub fn json(summary: Map<String, Value>, findings: &[Finding]) -> Value {
    let mut document = Map::new();
    document.insert("tool".into(), json!("tfrs"));
    document.insert("version".into(), json!(super::version::VERSION));
    document.extend(summary);
    let errors = findings.iter().filter(|f| f.error).count();
    document.insert("errors".into(), json!(errors));
    document.insert("warnings".into(), json!(findings.len() - errors));
    let listed: Vec<Value> = findings
        .iter()
        .map(|f| {
            let mut item = Map::new();
            item.insert("rule".into(), json!(f.rule));
            item.insert("severity".into(), json!(if f.error { "error" } else { "warning" }));
            item.extend(place_json(&f.place));
            item.insert("message".into(), json!(f.message));
            item.insert("help".into(), json!(f.help));
            item.insert("also".into(), Value::Array(f.also.iter().map(|p| Value::Object(place_json(p))).collect()));
            item.extend(f.properties.clone());
            Value::Object(item)
        })
        .collect();
    document.insert("findings".into(), Value::Array(listed));
    Value::Object(document)
}

fn place_json(place: &Place) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("file".into(), json!(place.file));
    out.insert("line".into(), if place.file.is_some() { json!(place.line) } else { Value::Null });
    out.insert("column".into(), if place.file.is_some() { json!(place.column) } else { Value::Null });
    out.insert("field".into(), json!(place.field));
    out
}

/// The SARIF 2.1.0 log of one run. Relative file names are relative to `SRCROOT`: the directory
/// `root` when known (the working directory for specs, the repository for an audit), which is
/// where code scanning expects the repository root.
#[must_use]
pub fn sarif(rules: &[RuleInfo], findings: &[Finding], root: Option<&std::path::Path>) -> Value {
    let descriptors: Vec<Value> = rules
        .iter()
        .map(|rule| {
            json!({
                "id": rule.id,
                "shortDescription": { "text": rule.summary },
                "defaultConfiguration": { "level": "error" },
            })
        })
        .collect();
    let results: Vec<Value> = findings.iter().map(|f| sarif_result(rules, f)).collect();
    let mut log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "tfrs",
                "semanticVersion": super::version::VERSION,
                "version": super::version::line(),
                "rules": descriptors,
            } },
            "columnKind": "unicodeCodePoints",
            "invocations": [{ "executionSuccessful": true }],
            "results": results,
        }],
    });
    if let Some(root) = root {
        log["runs"][0]["originalUriBaseIds"] = json!({ "SRCROOT": { "uri": directory_uri(root) } });
    }
    log
}

fn sarif_result(rules: &[RuleInfo], finding: &Finding) -> Value {
    let mut text = match &finding.place.field {
        Some(field) => format!("{field}: {}", finding.message),
        None => finding.message.clone(),
    };
    if let Some(help) = &finding.help {
        let _ = write!(text, "\nhelp: {help}");
    }
    let mut result = Map::new();
    result.insert("ruleId".into(), json!(finding.rule));
    if let Some(index) = rules.iter().position(|r| r.id == finding.rule) {
        result.insert("ruleIndex".into(), json!(index));
    }
    result.insert("level".into(), json!(if finding.error { "error" } else { "warning" }));
    result.insert("message".into(), json!({ "text": text }));
    if let Some(location) = sarif_location(&finding.place) {
        result.insert("locations".into(), json!([location]));
    }
    let related: Vec<Value> = finding
        .also
        .iter()
        .filter_map(sarif_location)
        .enumerate()
        .map(|(index, mut location)| {
            location["id"] = json!(index + 1);
            location
        })
        .collect();
    if !related.is_empty() {
        result.insert("relatedLocations".into(), Value::Array(related));
    }
    if !finding.properties.is_empty() {
        result.insert("properties".into(), Value::Object(finding.properties.clone()));
    }
    Value::Object(result)
}

fn sarif_location(place: &Place) -> Option<Value> {
    let file = place.file.as_deref()?;
    let mut location = json!({
        "physicalLocation": {
            "artifactLocation": artifact(file),
            "region": { "startLine": place.line.max(1), "startColumn": place.column.max(1) },
        },
    });
    if let Some(field) = &place.field {
        location["logicalLocations"] = json!([{ "fullyQualifiedName": field, "kind": "member" }]);
        location["message"] = json!({ "text": field });
    }
    Some(location)
}

/// An artifact location: an absolute path as a `file:` URI, a relative one against `SRCROOT`.
fn artifact(file: &str) -> Value {
    let path = std::path::Path::new(file);
    if path.is_absolute() {
        json!({ "uri": format!("file://{}", uri_path(file)) })
    } else {
        json!({ "uri": uri_path(file.trim_start_matches("./")), "uriBaseId": "SRCROOT" })
    }
}

fn directory_uri(directory: &std::path::Path) -> String {
    let mut path = uri_path(&directory.to_string_lossy());
    if !path.ends_with('/') {
        path.push('/');
    }
    format!("file://{path}")
}

/// A path as the path of a URI: `/` separators, every byte that is not unreserved or `/`
/// percent-encoded (RFC 3986).
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.replace('\\', "/").bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// GitHub Actions workflow commands, one line per finding: `::error file=…,line=…,col=…,
/// title=…::message`, with the field, the help and the other places in the message.
#[must_use]
pub fn github(findings: &[Finding]) -> String {
    let mut out = String::new();
    for finding in findings {
        let mut properties = Vec::new();
        if let Some(file) = &finding.place.file {
            properties.push(format!("file={}", escape_property(file)));
            properties.push(format!("line={}", finding.place.line));
            properties.push(format!("col={}", finding.place.column));
        }
        properties.push(format!("title={}", escape_property(&format!("tfrs {}", finding.rule))));
        let mut message = match &finding.place.field {
            Some(field) => format!("{field}: {}", finding.message),
            None => finding.message.clone(),
        };
        for place in &finding.also {
            let _ = write!(message, "\nalso at {}", describe(place));
        }
        if let Some(help) = &finding.help {
            let _ = write!(message, "\nhelp: {help}");
        }
        let command = if finding.error { "error" } else { "warning" };
        let _ = writeln!(out, "::{command} {}::{}", properties.join(","), escape_data(&message));
    }
    out
}

fn describe(place: &Place) -> String {
    let field = place.field.as_deref().unwrap_or("");
    match &place.file {
        Some(file) => format!("{file}:{}:{}: {field}", place.line, place.column),
        None => field.to_owned(),
    }
}

/// The message of a workflow command: `%`, CR and LF escaped (GitHub's `escapeData`).
fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A property value of a workflow command: also `:` and `,` (GitHub's `escapeProperty`).
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(file: Option<&str>, message: &str) -> Finding {
        Finding {
            rule: "spec-schema",
            error: true,
            message: message.to_owned(),
            help: Some("did you mean `instances`?".to_owned()),
            place: Place { file: file.map(str::to_owned), line: 7, column: 5, field: Some("spec.postgresql.instance".to_owned()) },
            also: Vec::new(),
            properties: Map::new(),
        }
    }

    #[test]
    fn workflow_commands_escape_properties_and_data() {
        let out = github(&[finding(Some("specs/a,b:c.yaml"), "100% wrong\nreally")]);
        assert_eq!(
            out,
            "::error file=specs/a%2Cb%3Ac.yaml,line=7,col=5,title=tfrs spec-schema::spec.postgresql.instance: 100%25 wrong%0Areally%0Ahelp: did you mean `instances`?\n"
        );
        let out = github(&[Finding { error: false, ..finding(None, "no file") }]);
        assert!(out.starts_with("::warning title=tfrs spec-schema::spec.postgresql.instance: no file"), "{out}");
    }

    #[test]
    fn uris_are_percent_encoded_and_relative_to_the_source_root() {
        assert_eq!(artifact("./specs/my file#1.yaml"), json!({ "uri": "specs/my%20file%231.yaml", "uriBaseId": "SRCROOT" }));
        assert_eq!(artifact("/srv/spécs/a.yaml"), json!({ "uri": "file:///srv/sp%C3%A9cs/a.yaml" }));
        assert_eq!(directory_uri(std::path::Path::new("/work/repo")), "file:///work/repo/");
    }

    #[test]
    fn a_finding_without_a_file_has_no_location() {
        let log = sarif(&spec_rules(), &[finding(None, "template error")], Some(std::path::Path::new("/r")));
        let result = &log["runs"][0]["results"][0];
        assert!(result.get("locations").is_none(), "{result}");
        assert_eq!(result["ruleIndex"], json!(1));
        let document = json(Map::new(), &[finding(None, "x")]);
        assert_eq!(document["findings"][0]["line"], Value::Null);
        assert_eq!(document["errors"], json!(1));
    }
}
