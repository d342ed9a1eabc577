//! A compact binary form of parsed documents, for the spec cache (`crate::source::spec_cache`):
//! decoding it is several times cheaper than parsing the YAML again, and it gives back exactly
//! the nodes the parser made (values, origins, plain texts, block flags).
//!
//! `stream = varint(documents) ‖ varint(nodes counted) ‖ node*`; a node is one tag byte (its
//! kind in the low three bits, `PLAIN` and `BLOCK` flags above), `varint(line) ‖
//! varint(column)`, its plain text when it has one, then its value: a zigzag varint, eight
//! bytes of a float, a text (`varint(length) ‖ bytes`), or a count of items or entries (each
//! entry its key's text, line and column, then its node). Lines are counted from the piece's
//! start, so that a piece moved by an edit above it decodes in its new place; the file of every
//! origin, and the lines before the piece, are the caller's, given when decoding.

use super::{Key, MAX_DEPTH, Node, Origin, Value};
use crate::codec::{put_text as text, put_varint as varint};

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 4;
const STR: u8 = 5;
const SEQ: u8 = 6;
const MAP: u8 = 7;
const KIND: u8 = 0b111;
const PLAIN: u8 = 0b1000;
const BLOCK: u8 = 0b1_0000;

/// The documents of one parsed piece (after `lines` lines) and how many nodes the parser
/// counted, encoded.
#[must_use]
pub fn encode(documents: &[Node], nodes: usize, lines: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * nodes.max(1));
    varint(&mut out, documents.len() as u64);
    varint(&mut out, nodes as u64);
    let mut writer = Writer { out, lines };
    for document in documents {
        writer.node(document);
    }
    writer.out
}

/// The documents and node count [`encode`] wrote, every origin in file `file` and after
/// `lines` lines; `None` when `bytes` are not such an encoding.
#[must_use]
pub fn decode(bytes: &[u8], file: usize, lines: usize) -> Option<(Vec<Node>, usize)> {
    let mut reader = Reader { fields: crate::codec::Reader::new(bytes), file, lines };
    let count = usize::try_from(reader.varint()?).ok()?;
    let nodes = usize::try_from(reader.varint()?).ok()?;
    let mut documents = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        documents.push(reader.node(0)?);
    }
    reader.is_done().then_some((documents, nodes))
}

/// Writes nodes with their lines counted from the piece's start.
struct Writer {
    out: Vec<u8>,
    lines: usize,
}

impl Writer {
    fn origin(&mut self, origin: Origin) {
        varint(&mut self.out, origin.line.saturating_sub(self.lines) as u64);
        varint(&mut self.out, origin.column as u64);
    }

    fn node(&mut self, node: &Node) {
        let kind = match &node.value {
            Value::Null => NULL,
            Value::Bool(false) => FALSE,
            Value::Bool(true) => TRUE,
            Value::Int(_) => INT,
            Value::Float(_) => FLOAT,
            Value::Str(_) => STR,
            Value::Seq(_) => SEQ,
            Value::Map(_) => MAP,
        };
        let flags = if node.plain.is_some() { PLAIN } else { 0 } | if node.block { BLOCK } else { 0 };
        self.out.push(kind | flags);
        self.origin(node.origin);
        if let Some(plain) = &node.plain {
            text(&mut self.out, plain);
        }
        match &node.value {
            Value::Null | Value::Bool(_) => {}
            Value::Int(i) => varint(&mut self.out, ((i << 1) ^ (i >> 63)) as u64),
            Value::Float(f) => self.out.extend_from_slice(&f.to_bits().to_le_bytes()),
            Value::Str(s) => text(&mut self.out, s),
            Value::Seq(items) => {
                varint(&mut self.out, items.len() as u64);
                items.iter().for_each(|item| self.node(item));
            }
            Value::Map(entries) => {
                varint(&mut self.out, entries.len() as u64);
                for (key, value) in entries {
                    text(&mut self.out, &key.name);
                    self.origin(key.origin);
                    self.node(value);
                }
            }
        }
    }
}

/// Reads nodes whose origins are in `file`, their lines counted after `lines`.
struct Reader<'a> {
    fields: crate::codec::Reader<'a>,
    file: usize,
    lines: usize,
}

impl<'a> std::ops::Deref for Reader<'a> {
    type Target = crate::codec::Reader<'a>;

    fn deref(&self) -> &Self::Target {
        &self.fields
    }
}

impl std::ops::DerefMut for Reader<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.fields
    }
}

impl Reader<'_> {
    fn origin(&mut self) -> Option<Origin> {
        let line = usize::try_from(self.varint()?).ok()?.checked_add(self.lines)?;
        let column = usize::try_from(self.varint()?).ok()?;
        Some(Origin { file: self.file, line, column })
    }

    fn node(&mut self, depth: usize) -> Option<Node> {
        let tag = self.byte()?;
        let origin = self.origin()?;
        let plain = if tag & PLAIN == 0 { None } else { Some(self.text()?) };
        let value = match tag & KIND {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            INT => {
                let z = self.varint()?;
                Value::Int(((z >> 1) as i64) ^ -((z & 1) as i64))
            }
            FLOAT => Value::Float(f64::from_bits(u64::from_le_bytes(self.take(8)?.try_into().ok()?))),
            STR => Value::Str(self.text()?),
            _ if depth >= MAX_DEPTH => return None,
            SEQ => {
                let count = self.count()?;
                let mut items = Vec::with_capacity(count);
                for _ in 0..count {
                    items.push(self.node(depth + 1)?);
                }
                Value::Seq(items)
            }
            _ => {
                let count = self.count()?;
                let mut entries = Vec::with_capacity(count);
                for _ in 0..count {
                    let name = self.text()?;
                    let origin = self.origin()?;
                    entries.push((Key { name, origin }, self.node(depth + 1)?));
                }
                Value::Map(entries)
            }
        };
        Some(Node { value, origin, plain, block: tag & BLOCK != 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "---\n# a comment\nkind: TFRServer\nmetadata: { name: r1 }\nspec:\n  tag: 1.10\n  port: 8080\n  negative: -42\n  big: 9223372036854775807\n  small: -9223372036854775808\n  ratio: .5\n  nan: .nan\n  on: true\n  off: False\n  none: ~\n  quoted: \"1.10\"\n  script: |\n    echo hi\n  folded: >\n    a\n    b\n  list: [a, {b: c}, [], {}]\n  anchored: &x {k: v}\n  again: *x\n---\n---\nplain: text\n";

    #[test]
    fn decoding_gives_back_what_the_parser_made() {
        let (documents, nodes) = super::super::parse_stream(3, TEXT, 7).expect("parses");
        let encoded = encode(&documents, nodes, 7);
        let (decoded, counted) = decode(&encoded, 3, 7).expect("decodes");
        assert_eq!(counted, nodes);
        assert_eq!(format!("{decoded:?}"), format!("{documents:?}"), "NaN compares by its debug form");
        let (moved, _) = decode(&encoded, 9, 20).expect("decodes");
        let (below, _) = super::super::parse_stream(9, TEXT, 20).expect("parses");
        assert_eq!(format!("{moved:?}"), format!("{below:?}"), "the caller's file and lines");
    }

    #[test]
    fn anything_else_is_refused_not_misread() {
        let (documents, nodes) = super::super::parse_stream(0, TEXT, 0).expect("parses");
        let encoded = encode(&documents, nodes, 0);
        for cut in 0..encoded.len() {
            assert!(decode(&encoded[..cut], 0, 0).is_none(), "cut at {cut}");
        }
        let mut longer = encoded.clone();
        longer.push(0);
        assert!(decode(&longer, 0, 0).is_none(), "trailing bytes");
        assert!(decode(&[0xff; 12], 0, 0).is_none(), "an overlong varint");
        // A forged count larger than the input reserves nothing.
        assert!(decode(&[1, 1, SEQ, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f], 0, 0).is_none());
        // Nesting past the parser's bound.
        let mut deep = vec![1, 1];
        for _ in 0..=MAX_DEPTH {
            deep.extend([SEQ, 1, 1, 1]);
        }
        deep.extend([NULL, 1, 1]);
        assert!(decode(&deep, 0, 0).is_none());
    }
}
