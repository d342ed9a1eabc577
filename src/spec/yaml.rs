//! A YAML document tree that remembers where every node came from.
//!
//! Specs are parsed into this tree (not straight into Rust types) so that validation can report
//! every problem with its file, line and column, and so that overlays can be merged while each
//! value keeps the location of the layer that set it.

mod de;
mod pieces;
pub mod stored;

pub use de::from_node;
use granit_parser::{Event, Parser, ScalarStyle};
use pieces::pieces;
use std::collections::HashMap;

/// Where a node starts: a file (an index into the caller's file table), a line and a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Origin {
    /// Index of the source file in [`super::Bundle::files`].
    pub file: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping with string keys, in source order.
    Map(Vec<(Key, Node)>),
}

/// A mapping key and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key text.
    pub name: String,
    /// Where the key starts.
    pub origin: Origin,
}

/// A YAML node: a value, its origin, and for plain scalars the text as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The resolved value.
    pub value: Value,
    /// Where the node starts.
    pub origin: Origin,
    /// The source text of a plain (unquoted) scalar, used to accept `tag: 1.10` as the string
    /// `"1.10"` where a string is expected.
    pub plain: Option<String>,
    /// Whether the scalar was written as a `|` or `>` block (its content starts on the next line).
    pub block: bool,
}

/// A problem found while parsing YAML.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    /// Where the problem is.
    pub origin: Origin,
    /// What is wrong.
    pub message: String,
}

/// Upper bound on nodes per file, so alias expansion cannot blow up memory ("billion laughs").
const MAX_NODES: usize = 1_000_000;
/// Deepest nesting accepted. Specs nest a handful of levels; a bound keeps every recursive
/// stage after parsing (merge, validation, rendering, drop) far from the stack's end.
pub const MAX_DEPTH: usize = 128;

impl Node {
    /// A node with no plain text.
    #[must_use]
    pub fn new(value: Value, origin: Origin) -> Self {
        Node { value, origin, plain: None, block: false }
    }

    /// The entry of a map node under `key`, if this is a map and has it.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The key entry of a map node under `key`.
    #[must_use]
    pub fn get_key(&self, key: &str) -> Option<&Key> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(k, _)| k),
            _ => None,
        }
    }

    /// The string value, if this is a string.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A short description for "found ..." messages: `"two"`, `a map`, `null`.
    #[must_use]
    pub fn describe(&self) -> String {
        match &self.value {
            Value::Null => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => self.plain.clone().unwrap_or_else(|| f.to_string()),
            Value::Str(s) => {
                let mut shown: String = s.chars().take(40).collect();
                if shown.len() < s.len() {
                    shown.push('…');
                }
                format!("{shown:?}")
            }
            Value::Seq(_) => "a list".to_owned(),
            Value::Map(_) => "a map".to_owned(),
        }
    }

    /// Converts the tree into JSON, for deserializing into typed specs.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(entries.iter().map(|(k, v)| (k.name.clone(), v.to_json())).collect()),
        }
    }

    fn count(&self) -> usize {
        match &self.value {
            Value::Seq(items) => 1 + items.iter().map(Node::count).sum::<usize>(),
            Value::Map(entries) => 1 + entries.iter().map(|(_, v)| v.count()).sum::<usize>(),
            _ => 1,
        }
    }
}

/// Resolves a plain scalar by the YAML 1.2 core schema.
fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Value::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    if let Some(octal) = text.strip_prefix("0o")
        && let Ok(i) = i64::from_str_radix(octal, 8)
    {
        return Value::Int(i);
    }
    if let Some(hex) = text.strip_prefix("0x")
        && let Ok(i) = i64::from_str_radix(hex, 16)
    {
        return Value::Int(i);
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(i) = text.parse::<i64>()
    {
        return Value::Int(i);
    }
    if is_core_float(digits)
        && let Ok(f) = text.parse::<f64>()
    {
        return Value::Float(f);
    }
    Value::Str(text.to_owned())
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, the core-schema float (sign stripped).
fn is_core_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            (!int.is_empty() || !frac.is_empty())
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
                && !(int.is_empty() && frac.is_empty())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    mantissa_ok && exponent_ok && (mantissa.contains('.') || exponent.is_some())
}

/// Parses every document of a YAML stream.
///
/// Empty documents (a lone `---`, comments only) are skipped.
///
/// # Errors
///
/// The first syntax error ends parsing (the parser cannot recover); structural problems such as
/// duplicate keys or non-string keys are collected and parsing goes on.
pub fn parse(file: usize, text: &str) -> Result<Vec<Node>, Vec<ParseError>> {
    parse_kept(file, text, None)
}

/// Where parsed pieces of streams are kept between runs (`crate::source::spec_cache`): a piece
/// is a run of whole documents, parsed from its text and the number of lines before it alone.
pub trait Pieces: Sync {
    /// The documents of `text` (after `lines` lines), in file `file`, and their node count, as
    /// parsed before; `None` when not kept.
    fn get(&self, file: usize, text: &str, lines: usize) -> Option<(Vec<Node>, usize)>;
    /// Keeps what `text` (after `lines` lines) parsed into.
    fn put(&self, text: &str, lines: usize, documents: &[Node], nodes: usize);
}

/// [`parse`], taking each piece that `kept` has from it and giving it each piece parsed.
///
/// # Errors
///
/// As [`parse`].
pub fn parse_kept(file: usize, text: &str, kept: Option<&dyn Pieces>) -> Result<Vec<Node>, Vec<ParseError>> {
    use rayon::prelude::*;
    let pieces = pieces(text);
    let one = |piece: &str, line: usize| -> Parsed {
        let Some(kept) = kept else { return parse_stream(file, piece, line) };
        if let Some(found) = kept.get(file, piece, line) {
            return Ok(found);
        }
        let parsed = parse_stream(file, piece, line);
        if let Ok((documents, nodes)) = &parsed {
            kept.put(piece, line, documents, *nodes);
        }
        parsed
    };
    if pieces.len() == 1 {
        return one(text, 0).map(|(documents, _)| documents);
    }
    // NB: documents share nothing (an alias names an anchor of its own document), so runs of
    // whole documents parse apart. Anything unusual (an error, too many nodes in all) is
    // parsed again in one piece, for the same answer and the same errors.
    let parsed: Vec<Parsed> = pieces.par_iter().map(|&(piece, line)| one(piece, line)).collect();
    let mut documents = Vec::new();
    let mut nodes = 0;
    for chunk in parsed {
        let Ok((found, counted)) = chunk else { return parse_stream(file, text, 0).map(|(documents, _)| documents) };
        documents.extend(found);
        nodes += counted;
    }
    if nodes <= MAX_NODES { Ok(documents) } else { parse_stream(file, text, 0).map(|(documents, _)| documents) }
}

/// The documents of a stream and how many nodes they hold, or why it does not parse.
type Parsed = Result<(Vec<Node>, usize), Vec<ParseError>>;

/// Parses a stream (or the part of one after `lines` lines: its origins are those of the
/// whole); returns its documents and how many nodes they hold.
fn parse_stream(file: usize, text: &str, lines: usize) -> Parsed {
    let mut builder = Builder { file, anchors: HashMap::new(), errors: Vec::new(), nodes: 0 };
    let mut documents = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    for next in Parser::new_from_str(text) {
        let (event, span) = match next {
            Ok(pair) => pair,
            Err(error) => {
                let marker = error.marker();
                builder.errors.push(ParseError {
                    origin: Origin { file, line: marker.line() + lines, column: marker.col() + 1 },
                    message: format!("invalid YAML: {}", error.info()),
                });
                return Err(builder.errors);
            }
        };
        let origin = Origin { file, line: span.start.line() + lines, column: span.start.col() + 1 };
        let Ok(completed) = builder.event(event, origin, &mut stack) else { return Err(builder.errors) };
        if builder.nodes > MAX_NODES {
            builder.error(origin, format!("document too large: more than {MAX_NODES} nodes after expanding aliases"));
            return Err(builder.errors);
        }
        if let Some(node) = completed {
            builder.attach(node, &mut stack, &mut documents);
        }
    }
    if builder.errors.is_empty() {
        documents.retain(|d| d.value != Value::Null);
        Ok((documents, builder.nodes))
    } else {
        Err(builder.errors)
    }
}

/// Nesting past [`MAX_DEPTH`], which ends parsing.
struct TooDeep;

enum Frame {
    Seq { anchor: usize, origin: Origin, items: Vec<Node> },
    Map { anchor: usize, origin: Origin, entries: Vec<(Key, Node)>, key: Option<Key> },
}

struct Builder {
    file: usize,
    anchors: HashMap<usize, Node>,
    errors: Vec<ParseError>,
    nodes: usize,
}

impl Builder {
    /// Takes one parser event: opens a collection on `stack`, or returns the node it completes.
    fn event(&mut self, event: Event<'_>, origin: Origin, stack: &mut Vec<Frame>) -> Result<Option<Node>, TooDeep> {
        let completed = match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentStart(..) => None,
            Event::DocumentEnd => None,
            #[allow(unreachable_patterns)]
            Event::Anchor(..) => None,
            Event::Alias(id) => match self.anchors.get(&id) {
                Some(node) => {
                    let mut node = node.clone();
                    self.nodes += node.count();
                    node.origin = origin;
                    Some(node)
                }
                None => {
                    self.error(origin, "invalid YAML: alias to an unknown anchor".to_owned());
                    Some(Node::new(Value::Null, origin))
                }
            },
            Event::UnresolvedAlias(name) => {
                self.error(origin, format!("invalid YAML: alias `*{name}` has no anchor"));
                Some(Node::new(Value::Null, origin))
            }
            Event::Scalar(text, style, anchor, tag) => {
                let tag = tag.map(|t| t.to_string());
                let node = self.scalar(&text, style, tag.as_deref(), origin);
                self.nodes += 1;
                self.remember(anchor, &node);
                Some(node)
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if stack.len() >= MAX_DEPTH => {
                self.error(origin, format!("invalid YAML: nested deeper than {MAX_DEPTH} levels"));
                return Err(TooDeep);
            }
            Event::SequenceStart(_, anchor, _) => {
                stack.push(Frame::Seq { anchor, origin, items: Vec::new() });
                None
            }
            Event::MappingStart(_, anchor, _) => {
                stack.push(Frame::Map { anchor, origin, entries: Vec::new(), key: None });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Frame::Seq { anchor, origin, items }) => {
                    let node = Node::new(Value::Seq(items), origin);
                    self.remember(anchor, &node);
                    Some(node)
                }
                Some(Frame::Map { anchor, origin, entries, .. }) => {
                    let node = Node::new(Value::Map(entries), origin);
                    self.remember(anchor, &node);
                    Some(node)
                }
                None => None,
            },
            #[allow(unreachable_patterns)]
            _ => None,
        };
        Ok(completed)
    }

    /// Puts a completed node where it belongs: a document, an item of the open list, or the
    /// key or value of the open map.
    fn attach(&mut self, node: Node, stack: &mut [Frame], documents: &mut Vec<Node>) {
        match stack.last_mut() {
            None => documents.push(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => match &node.value {
                    Value::Str(name) => *key = Some(Key { name: name.clone(), origin: node.origin }),
                    Value::Seq(_) | Value::Map(_) => {
                        self.error(node.origin, "invalid YAML: a map key must be a string, found a collection".to_owned());
                        *key = Some(Key { name: String::new(), origin: node.origin });
                    }
                    _ => {
                        // NB: `8080: x` is a valid key in YAML; Kubernetes and our schema use
                        // string keys, so the key's text stands in.
                        let name = node.plain.clone().unwrap_or_default();
                        *key = Some(Key { name, origin: node.origin });
                    }
                },
                Some(k) => {
                    if let Some((first, _)) = entries.iter().find(|(e, _)| e.name == k.name) {
                        let message =
                            format!("duplicate key `{}` (first set at line {}, column {})", k.name, first.origin.line, first.origin.column);
                        self.error(k.origin, message);
                    } else {
                        entries.push((k, node));
                    }
                }
            },
        }
    }

    fn error(&mut self, origin: Origin, message: String) {
        debug_assert_eq!(origin.file, self.file);
        self.errors.push(ParseError { origin, message });
    }

    fn remember(&mut self, anchor: usize, node: &Node) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
    }

    fn scalar(&mut self, text: &str, style: ScalarStyle, tag: Option<&str>, origin: Origin) -> Node {
        let plain = matches!(style, ScalarStyle::Plain);
        let suffix = tag.map(|t| t.rsplit(':').next().unwrap_or(t).trim_start_matches('!'));
        let value = match suffix {
            None if plain => resolve_plain(text),
            None => Value::Str(text.to_owned()),
            Some("str") => Value::Str(text.to_owned()),
            Some(kind @ ("int" | "float" | "bool" | "null")) => {
                let value = resolve_plain(text);
                let matches = matches!(
                    (kind, &value),
                    ("int", Value::Int(_)) | ("float", Value::Float(_) | Value::Int(_)) | ("bool", Value::Bool(_)) | ("null", Value::Null)
                );
                if !matches {
                    self.error(origin, format!("invalid YAML: `{text}` is not a valid !!{kind}"));
                }
                match (kind, value) {
                    ("float", Value::Int(i)) => Value::Float(i as f64),
                    (_, value) => value,
                }
            }
            Some(other) => {
                self.error(origin, format!("unsupported YAML tag `!{other}`"));
                Value::Str(text.to_owned())
            }
        };
        let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
        Node { value, origin, plain: plain.then(|| text.to_owned()), block }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Node {
        parse(0, text).expect("valid yaml").remove(0)
    }

    /// A stream of `n` documents large enough to be cut, with anchors, block scalars holding
    /// `---` (indented: not a marker), comments and an empty document.
    fn large(n: usize) -> String {
        let mut text = String::from("# head\n");
        for i in 0..n {
            text.push_str(&format!(
                "---\nkind: TFRServer\nmetadata: {{name: robot{i:05}}}\nspec:\n  tenant: t{}\n  labels: &l{i} {{a: b{i}}}\n  text: |\n    line one\n    --- not a marker\n  copy: *l{i}\n  padding: \"{}\"\n",
                i % 7,
                "x".repeat(200)
            ));
            if i == n / 2 {
                text.push_str("---\n# an empty document\n");
            }
        }
        text
    }

    #[test]
    fn a_large_stream_parses_in_pieces_to_what_one_piece_gives() {
        let text = large(3000);
        let cut = pieces(&text);
        assert!(cut.len() > 2, "cut into pieces: {}", cut.len());
        assert_eq!(cut.iter().map(|(piece, _)| *piece).collect::<String>(), text, "the pieces are the whole");
        let mut start = 0;
        for (piece, line) in &cut {
            assert!(start == 0 || piece.starts_with("---\n"), "a cut starts a document");
            assert_eq!(*line, text[..start].lines().count(), "the lines before it");
            start += piece.len();
        }
        let whole = parse_stream(0, &text, 0).expect("valid").0;
        let parsed = parse(0, &text).expect("valid");
        assert_eq!(whole.len(), 3000);
        assert_eq!(parsed.len(), 3000);
        assert_eq!(parsed, whole, "the same documents, values and origins");
        assert_eq!(parsed[2999].get("metadata").unwrap().origin, whole[2999].get("metadata").unwrap().origin);

        // An error late in the stream is reported where it is, as one piece reports it.
        let broken = text.replacen("name: robot02900}", "name: robot02900", 1);
        let errors = parse(0, &broken).expect_err("invalid");
        let line = broken[..broken.find("name: robot02900").unwrap()].lines().count() + 1;
        assert_eq!(errors, parse_stream(0, &broken, 0).expect_err("invalid"));
        assert!(errors[0].origin.line >= line, "{:?} at or after line {line}", errors[0].origin);
        // Directives apply past a cut: such a stream is parsed in one piece.
        assert_eq!(pieces(&format!("%YAML 1.2\n{text}")).len(), 1);
        assert_eq!(pieces(&large(10)).len(), 1, "a small stream is one piece");
    }

    #[test]
    fn resolves_core_schema_scalars() {
        let doc = one("a: 1\nb: 1.5\nc: true\nd: ~\ne: '1'\nf: yes\ng: 1.10\nh: 0x1f\n");
        assert_eq!(doc.get("a").map(|n| &n.value), Some(&Value::Int(1)));
        assert_eq!(doc.get("b").map(|n| &n.value), Some(&Value::Float(1.5)));
        assert_eq!(doc.get("c").map(|n| &n.value), Some(&Value::Bool(true)));
        assert_eq!(doc.get("d").map(|n| &n.value), Some(&Value::Null));
        assert_eq!(doc.get("e").map(|n| &n.value), Some(&Value::Str("1".into())));
        // YAML 1.2: `yes` is a string, not a boolean.
        assert_eq!(doc.get("f").map(|n| &n.value), Some(&Value::Str("yes".into())));
        assert_eq!(doc.get("g").and_then(|n| n.plain.clone()), Some("1.10".into()));
        assert_eq!(doc.get("h").map(|n| &n.value), Some(&Value::Int(31)));
    }

    #[test]
    fn records_line_and_column() {
        let doc = one("spec:\n  postgresql:\n    instances: two\n");
        let node = doc.get("spec").and_then(|s| s.get("postgresql")).and_then(|p| p.get("instances"));
        let origin = node.map(|n| n.origin).expect("present");
        assert_eq!((origin.line, origin.column), (3, 16));
        let key = doc.get("spec").and_then(|s| s.get("postgresql")).and_then(|p| p.get_key("instances"));
        assert_eq!(key.map(|k| (k.origin.line, k.origin.column)), Some((3, 5)));
    }

    #[test]
    fn reports_duplicate_keys() {
        let errors = parse(0, "a: 1\nb: 2\na: 3\n").expect_err("duplicate");
        assert_eq!(errors[0].origin.line, 3);
        assert!(errors[0].message.contains("duplicate key `a`"), "{}", errors[0].message);
    }

    #[test]
    fn expands_aliases_and_splits_documents() {
        let docs = parse(0, "a: &x {b: 1}\nc: *x\n---\n---\nd: 2\n").expect("valid");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].get("c").and_then(|c| c.get("b")).map(|n| &n.value), Some(&Value::Int(1)));
    }

    #[test]
    fn reports_syntax_errors_with_location() {
        let errors = parse(0, "a: [1, 2\nb: 3\n").expect_err("syntax");
        assert!(errors[0].message.starts_with("invalid YAML"));
        assert!(errors[0].origin.line >= 1);
    }

    #[test]
    fn bounds_alias_expansion() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..8 {
            let prev = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let errors = parse(0, &text).expect_err("too large");
        assert!(errors[0].message.contains("too large"));
    }
}
