//! Problems found in specs, with their location, and how they are printed.

use super::yaml::Origin;
use std::fmt::Write as _;

/// How serious a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The spec is invalid.
    Error,
    /// The spec is valid but probably not what was meant.
    Warning,
}

/// The kind of a problem: its rule in machine-readable reports (SARIF `ruleId`), so a code
/// scanning view can group and filter them. Stable identifiers; new kinds are added, never
/// renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A file is not valid YAML (or has a duplicate key).
    Syntax,
    /// A document does not match its kind's schema: unknown field, wrong type, missing field.
    Schema,
    /// An overlay is malformed.
    Overlay,
    /// A name that no input defines: a tenant, a cluster, an overlay.
    Reference,
    /// Fields that are each valid but do not fit together (within an object or across objects).
    Consistency,
    /// `confzData`: invalid TOML, or a credential it would replace.
    Confz,
    /// What a render needs from the environment: the master key, `fromEnv` variables,
    /// `fromFile` files, sealing certificates, `OPERATOR_*` overrides.
    Environment,
    /// A template failed or rendered objects that are not valid.
    Template,
}

impl Rule {
    /// Every rule, in the order reports list them.
    pub const ALL: [Rule; 8] =
        [Rule::Syntax, Rule::Schema, Rule::Overlay, Rule::Reference, Rule::Consistency, Rule::Confz, Rule::Environment, Rule::Template];

    /// The stable identifier (`yaml-syntax`, `spec-schema`, ...).
    #[must_use]
    pub fn id(self) -> &'static str {
        match self {
            Rule::Syntax => "yaml-syntax",
            Rule::Schema => "spec-schema",
            Rule::Overlay => "overlay",
            Rule::Reference => "unknown-reference",
            Rule::Consistency => "consistency",
            Rule::Confz => "confz-data",
            Rule::Environment => "render-environment",
            Rule::Template => "template",
        }
    }

    /// One line on what the rule checks.
    #[must_use]
    pub fn summary(self) -> &'static str {
        match self {
            Rule::Syntax => "A spec or overlay file is not valid YAML",
            Rule::Schema => "A document does not match the schema of its kind",
            Rule::Overlay => "An overlay is malformed",
            Rule::Reference => "A reference names a tenant, cluster or overlay that no input defines",
            Rule::Consistency => "Fields that are each valid do not fit together",
            Rule::Confz => "confzData is invalid TOML or replaces a credential tfrs writes",
            Rule::Environment => "Something a render needs from the environment is missing or unusable",
            Rule::Template => "A template failed or rendered invalid objects",
        }
    }
}

/// One problem: where, which field, what.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Diagnostic {
    /// Where it is.
    pub origin: Origin,
    /// Error or warning.
    pub severity: Severity,
    /// Its kind.
    pub rule: Rule,
    /// The field path, e.g. `spec.postgresql.instances`.
    pub path: String,
    /// What is wrong, lowercase, no final period.
    pub message: String,
    /// How to fix it, when known.
    pub help: Option<String>,
    /// The source line may hold a secret: the report shows no excerpt.
    pub sensitive: bool,
    /// What the problem comes from when other diagnostics can share it (no master key, an unset
    /// variable, an unreadable file): diagnostics with one cause are said once ([`said_once`]).
    pub cause: Option<String>,
    /// The other places the same cause affects, gathered by [`said_once`].
    pub also: Vec<Place>,
    /// A reference to an object that no input defines. Not said when an input could not be
    /// parsed, since that input may define it ([`without_follow_ons`]).
    pub reference: bool,
}

/// Another place a diagnostic's cause affects: where, and which field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Place {
    /// Where it is.
    pub origin: Origin,
    /// The field path.
    pub path: String,
}

impl Diagnostic {
    /// An error.
    #[must_use]
    pub fn error(rule: Rule, origin: Origin, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic::new(rule, origin, Severity::Error, path.into(), message.into())
    }

    /// A warning.
    #[must_use]
    pub fn warning(rule: Rule, origin: Origin, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic::new(rule, origin, Severity::Warning, path.into(), message.into())
    }

    fn new(rule: Rule, origin: Origin, severity: Severity, path: String, message: String) -> Self {
        Diagnostic { origin, severity, rule, path, message, help: None, sensitive: false, cause: None, also: Vec::new(), reference: false }
    }

    /// Names the cause this diagnostic may share with others (see [`said_once`]).
    #[must_use]
    pub fn with_cause(mut self, cause: impl Into<String>) -> Self {
        self.cause = Some(cause.into());
        self
    }

    /// Marks this as a reference to an undefined object (see [`without_follow_ons`]).
    #[must_use]
    pub fn as_reference(mut self) -> Self {
        self.reference = true;
        self
    }

    /// Adds a fix hint.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Marks the source line as possibly holding a secret, so it is never echoed.
    #[must_use]
    pub fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }

    /// Whether this is an error.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A file as shown in reports: its display name and its text.
pub trait FileTable: Sync {
    /// Display name of file `index`.
    fn name(&self, index: usize) -> &str;
    /// Text of file `index`.
    fn text(&self, index: usize) -> &str;
    /// `file:line:col` of `origin`, as messages cite a place.
    fn place(&self, origin: Origin) -> String {
        format!("{}:{}:{}", self.name(origin.file), origin.line, origin.column)
    }
}

/// Says every cause once: a diagnostic whose [`Diagnostic::cause`] an earlier one already
/// names becomes a [`Place`] of that one's `also`, in order. Diagnostics without a cause stay
/// as they are.
#[must_use]
pub fn said_once(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::with_capacity(diagnostics.len());
    let mut first: std::collections::HashMap<(Severity, String), usize> = std::collections::HashMap::new();
    // NB: each place once per diagnostic kept, its own included (a fleet places one document in
    // several clusters: the same field of the same text, said once); a set, not a search of
    // `also` (a large platform without a master key has thousands of places).
    let mut seen: std::collections::HashSet<(usize, Place)> = std::collections::HashSet::new();
    for diagnostic in diagnostics {
        let Some(cause) = diagnostic.cause.clone() else {
            out.push(diagnostic);
            continue;
        };
        match first.entry((diagnostic.severity, cause)) {
            std::collections::hash_map::Entry::Occupied(at) => {
                let index = *at.get();
                let place = Place { origin: diagnostic.origin, path: diagnostic.path };
                for place in std::iter::once(place).chain(diagnostic.also) {
                    if seen.insert((index, place.clone())) {
                        out[index].also.push(place);
                    }
                }
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                let index = out.len();
                slot.insert(index);
                seen.insert((index, Place { origin: diagnostic.origin, path: diagnostic.path.clone() }));
                for place in &diagnostic.also {
                    seen.insert((index, place.clone()));
                }
                out.push(diagnostic);
            }
        }
    }
    out
}

/// Drops the references to undefined objects when some input could not be parsed
/// (`unparsed`): that input may define them, so they follow from its syntax error.
#[must_use]
pub fn without_follow_ons(diagnostics: Vec<Diagnostic>, unparsed: bool) -> Vec<Diagnostic> {
    if !unparsed {
        return diagnostics;
    }
    diagnostics.into_iter().filter(|d| !d.reference).collect()
}

/// How many places of `also` a report lists before it says how many more there are.
const ALSO_SHOWN: usize = 20;

/// Prints diagnostics: the `file:line:col: path: message` line, the source line with a caret
/// under the column, and the help. Warnings say `warning:` after the location.
#[must_use]
pub fn render(diagnostics: &[Diagnostic], files: &dyn FileTable) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        let origin = diagnostic.origin;
        let name = files.name(origin.file);
        let severity = match diagnostic.severity {
            Severity::Error => "",
            Severity::Warning => "warning: ",
        };
        let _ = writeln!(out, "{name}:{}:{}: {severity}{}: {}", origin.line, origin.column, diagnostic.path, diagnostic.message);
        let line = files.text(origin.file).lines().nth(origin.line.saturating_sub(1));
        // NB: never echo a line that may hold a secret literal (`value: ...`).
        let inside_literal = diagnostic.path.split(['.', '[']).any(|segment| segment == "value");
        let line = line.filter(|l| !diagnostic.sensitive && !inside_literal && !holds_literal(l));
        if let Some(line) = line {
            let number = origin.line.to_string();
            let pad = " ".repeat(number.len());
            // NB: a very long line (a minified or hostile file) is shown as a window around the
            // column, marked with `…`, so a report stays readable.
            let (line, column) = window(line, origin.column.saturating_sub(1));
            let caret_at: String = line.chars().take(column).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{number} | {line}");
            let _ = writeln!(out, "{pad} | {caret_at}^");
        }
        for place in diagnostic.also.iter().take(ALSO_SHOWN) {
            let _ = writeln!(out, "  = also at {}: {}", files.place(place.origin), place.path);
        }
        if diagnostic.also.len() > ALSO_SHOWN {
            let _ = writeln!(out, "  = and {} more places", diagnostic.also.len() - ALSO_SHOWN);
        }
        if let Some(help) = &diagnostic.help {
            let _ = writeln!(out, "  = help: {help}");
        }
    }
    out
}

/// At most `EXCERPT` characters of `line` around character `column`; the column within them.
fn window(line: &str, column: usize) -> (String, usize) {
    const EXCERPT: usize = 120;
    let length = line.chars().count();
    if length <= EXCERPT {
        return (line.to_owned(), column);
    }
    let start = column.saturating_sub(EXCERPT / 2).min(length - EXCERPT);
    let mut text: String = line.chars().skip(start).take(EXCERPT).collect();
    let mut column = column - start;
    if start > 0 {
        text.insert(0, '…');
        column += 1;
    }
    if start + EXCERPT < length {
        text.push('…');
    }
    (text, column)
}

fn holds_literal(line: &str) -> bool {
    line.match_indices("value").any(|(at, _)| line[at + 5..].trim_start().starts_with(':'))
}

/// The closest candidate to `word` by edit distance, if it is close enough to be a likely typo.
#[must_use]
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (levenshtein(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(distance, c)| *distance <= (c.len().max(3) / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current.push((previous[j] + cost).min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let fields = ["instances", "storage", "storageClass", "image"];
        assert_eq!(did_you_mean("instance", fields), Some("instances"));
        assert_eq!(did_you_mean("storageclass", fields), Some("storageClass"));
        assert_eq!(did_you_mean("replicas", fields), None);
    }
}

#[cfg(test)]
mod window_tests {
    use super::window;

    #[test]
    fn long_lines_are_cut_around_the_column() {
        let line = format!("{}X{}", "a".repeat(500), "b".repeat(500));
        let (text, column) = window(&line, 500);
        assert!(text.chars().count() <= 122, "{text}");
        assert_eq!(text.chars().nth(column), Some('X'));
        assert_eq!(window("short", 2), ("short".to_owned(), 2));
    }
}
