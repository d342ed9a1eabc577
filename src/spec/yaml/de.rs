//! A typed value read straight from a [`Node`], as `serde_json::from_value(node.to_json())`
//! would read it, without the JSON tree in between (a platform's spec has hundreds of
//! thousands of nodes).
//!
//! The same answers as through JSON: an integer is visited as unsigned when it is not negative
//! and signed otherwise, a float that JSON cannot hold (infinite, NaN) as null, a map as a map
//! in source order, an enum as a string (a unit variant) or a map of one key (a variant with
//! content).

use super::{Key, Node, Value};
use serde::de::value::{MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

/// The error of reading a [`Node`] as a type: what the type expected.
pub type Error = de::value::Error;

/// `node` read as a `T`.
///
/// # Errors
///
/// When `node` is not a `T`.
pub fn from_node<T: DeserializeOwned>(node: &Node) -> Result<T, Error> {
    T::deserialize(NodeDeserializer(node))
}

/// A [`Node`] as a serde deserializer.
#[derive(Clone, Copy)]
struct NodeDeserializer<'a>(&'a Node);

impl<'de> IntoDeserializer<'de, Error> for NodeDeserializer<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for NodeDeserializer<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.0.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => match u64::try_from(*i) {
                Ok(unsigned) => visitor.visit_u64(unsigned),
                Err(_) => visitor.visit_i64(*i),
            },
            Value::Float(f) if f.is_finite() => visitor.visit_f64(*f),
            Value::Float(_) => visitor.visit_unit(),
            Value::Str(s) => visitor.visit_str(s),
            Value::Seq(items) => {
                let mut items = SeqDeserializer::new(items.iter().map(NodeDeserializer));
                let value = visitor.visit_seq(&mut items)?;
                items.end()?;
                Ok(value)
            }
            Value::Map(entries) => {
                let mut entries = map_of(entries);
                let value = visitor.visit_map(&mut entries)?;
                entries.end()?;
                Ok(value)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.0.value {
            Value::Null => visitor.visit_none(),
            Value::Float(f) if !f.is_finite() => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match &self.0.value {
            Value::Str(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::Map(entries) if entries.len() == 1 => visitor.visit_enum(MapAccessDeserializer::new(map_of(entries))),
            _ => Err(de::Error::invalid_type(self.unexpected(), &"a string or a map of one key")),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// A map node's entries as serde reads a map: each key's text with its node.
fn map_of<'a, 'de>(entries: &'a [(Key, Node)]) -> MapDeserializer<'de, impl Iterator<Item = (&'a str, NodeDeserializer<'a>)>, Error> {
    MapDeserializer::new(entries.iter().map(|(key, node)| (key.name.as_str(), NodeDeserializer(node))))
}

impl NodeDeserializer<'_> {
    /// What the node is, for an error.
    fn unexpected(&self) -> de::Unexpected<'_> {
        match &self.0.value {
            Value::Null => de::Unexpected::Unit,
            Value::Bool(b) => de::Unexpected::Bool(*b),
            Value::Int(i) => de::Unexpected::Signed(*i),
            Value::Float(f) => de::Unexpected::Float(*f),
            Value::Str(s) => de::Unexpected::Str(s),
            Value::Seq(_) => de::Unexpected::Seq,
            Value::Map(_) => de::Unexpected::Map,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Sample {
        name: String,
        count: u32,
        offset: i64,
        ratio: f64,
        on: bool,
        missing: Option<String>,
        nothing: Option<u8>,
        #[serde(default)]
        tags: Vec<String>,
        labels: BTreeMap<String, String>,
        mode: Mode,
        shaped: Shape,
        free: serde_json::Value,
        wrapped: Wrapped,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    enum Mode {
        Fast,
        Careful,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    enum Shape {
        Circle { radius: u32 },
        Named(String),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Wrapped(u16);

    const TEXT: &str = "name: a\ncount: 3\noffset: -4\nratio: 2\non: true\nnothing: null\ntags: [x, y]\nlabels: {b: '1', a: '2'}\nmode: careful\nshaped: {circle: {radius: 5}}\nfree: {z: [1, -2, 2.5, .inf, ~, s], a: {}}\nwrapped: 7\n";

    fn node(text: &str) -> Node {
        crate::spec::yaml::parse(0, text).expect("yaml").remove(0)
    }

    #[test]
    fn a_node_reads_as_its_json_would() {
        let node = node(TEXT);
        let direct: Sample = from_node(&node).expect("direct");
        let through_json: Sample = serde_json::from_value(node.to_json()).expect("through JSON");
        assert_eq!(direct, through_json);
        assert_eq!(direct.mode, Mode::Careful);
        assert_eq!(direct.shaped, Shape::Circle { radius: 5 });
        assert_eq!((direct.missing, direct.nothing), (None, None));
        assert_eq!(direct.free.to_string(), r#"{"z":[1,-2,2.5,null,null,"s"],"a":{}}"#, "a free value keeps its order");
        let named: Shape = from_node(&super::super::parse(0, "{named: x}").unwrap()[0]).unwrap();
        assert_eq!(named, Shape::Named("x".into()));
    }

    #[test]
    fn a_node_of_another_shape_is_refused_as_through_json() {
        let cases = [
            ("count", "-1"),
            ("count", "x"),
            ("ratio", "[1]"),
            ("mode", "slow"),
            ("shaped", "{circle: {radius: 1}, named: x}"),
            ("wrapped", "70000"),
        ];
        for (field, value) in cases {
            let text: String = TEXT
                .lines()
                .map(|line| if line.starts_with(&format!("{field}:")) { format!("{field}: {value}\n") } else { format!("{line}\n") })
                .collect();
            let node = node(&text);
            assert!(from_node::<Sample>(&node).is_err(), "{field}: {value}");
            assert!(serde_json::from_value::<Sample>(node.to_json()).is_err(), "{field}: {value}");
        }
        let extra = node(&format!("{TEXT}extra: 1\n"));
        assert!(from_node::<Sample>(&extra).is_err(), "an unknown field");
    }
}
