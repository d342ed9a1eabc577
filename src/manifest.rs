//! Writing Kubernetes resources as YAML: one serializer, so every file has the same style.

use serde_json::Value as Json;

/// Serializes one resource as a YAML document (no leading `---`), ending in a newline.
///
/// Strings are never folded or wrapped (a 700-character SealedSecret blob stays on one line),
/// and strings YAML would read as another type (`"true"`, `"0123"`, `"null"`) are quoted.
///
/// # Errors
///
/// Only if `value` holds something YAML cannot represent (it cannot, for JSON values).
pub fn to_yaml(value: &Json) -> Result<String, serde_saphyr::ser::Error> {
    let options = serde_saphyr::ser_options! { folded_wrap_chars: usize::MAX / 2 };
    let mut text = serde_saphyr::to_string_with_options(value, options)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Reads back the first document of a file written as YAML, as JSON: `None` when the bytes are
/// not UTF-8, do not parse, or hold no document.
#[must_use]
pub fn read_object(bytes: &[u8]) -> Option<Json> {
    let documents = crate::spec::yaml::parse(0, std::str::from_utf8(bytes).ok()?).ok()?;
    documents.first().map(crate::spec::yaml::Node::to_json)
}

/// Serializes several resources as one YAML stream.
///
/// # Errors
///
/// As [`to_yaml`].
pub fn to_yaml_stream(values: &[Json]) -> Result<String, serde_saphyr::ser::Error> {
    let options = serde_saphyr::ser_options! { folded_wrap_chars: usize::MAX / 2 };
    serde_saphyr::to_string_multiple_with_options(values, options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::yaml;
    use serde_json::json;

    #[test]
    fn strings_round_trip_unchanged() {
        let hostile = [
            "true",
            "0123",
            "null",
            "~",
            "1.10",
            "a: b",
            "- x",
            "{{ x }}",
            "#c",
            "x\ny\n",
            "  lead",
            "trail ",
            "",
            "ENC[AES256_GCM,data:x]",
            "-----BEGIN AGE ENCRYPTED FILE-----\nYWdl\n-----END AGE ENCRYPTED FILE-----\n",
        ];
        let long = "A".repeat(3000);
        let mut map = serde_json::Map::new();
        for (index, text) in hostile.iter().copied().chain([long.as_str()]).enumerate() {
            map.insert(format!("k{index}"), json!(text));
        }
        let value = Json::Object(map);
        let text = to_yaml(&value).unwrap();
        assert!(text.lines().any(|line| line.len() > 3000), "long strings are not wrapped:\n{text}");
        let parsed = yaml::parse(0, &text).unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].to_json(), value);
    }
}
