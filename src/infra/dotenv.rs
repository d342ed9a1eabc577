//! dotenv files encrypted by `sops` (its dotenv store): the values stay `NAME=ENC[…]` lines
//! and the metadata is flattened into `sops_…` lines (`sops_age__list_0__map_enc=…`, newlines
//! written as `\n`). [`sops_document`] rebuilds the document `secrets::sops::decrypt` opens.

use super::check::Variable;
use serde_json::{Map, Value as Json};

/// The prefix of the metadata lines.
const PREFIX: &str = "sops_";

/// Whether dotenv `variables` are a SOPS-encrypted file (they carry `sops_mac`).
#[must_use]
pub fn is_sops(variables: &[Variable]) -> bool {
    variables.iter().any(|(name, value, _)| name == "sops_mac" && !value.is_empty())
}

/// The SOPS document of dotenv `variables`: the values as a flat map, in file order, and the
/// `sops` metadata rebuilt from the `sops_…` lines. `None` when a metadata line cannot be
/// placed (an index out of order, a list and a map at one place).
#[must_use]
pub fn sops_document(variables: &[Variable]) -> Option<Json> {
    let mut document = Map::new();
    let mut metadata = Json::Object(Map::new());
    for (name, value, _) in variables {
        match name.strip_prefix(PREFIX) {
            Some(path) => {
                let value = value.replace("\\n", "\n");
                place(&mut metadata, &path.split("__").collect::<Vec<_>>(), value)?;
            }
            None => {
                document.insert(name.clone(), Json::String(value.to_string()));
            }
        }
    }
    document.insert("sops".to_owned(), metadata);
    Some(Json::Object(document))
}

/// Puts `value` at `path` (`age`, `list_0`, `map_enc`) below `node`, creating lists and maps.
fn place(node: &mut Json, path: &[&str], value: String) -> Option<()> {
    let Some((first, rest)) = path.split_first() else {
        *node = Json::String(value);
        return Some(());
    };
    let child = if let Some(index) = first.strip_prefix("list_") {
        let index: usize = index.parse().ok()?;
        if node.is_null() {
            *node = Json::Array(Vec::new());
        }
        let list = node.as_array_mut()?;
        if index == list.len() {
            list.push(Json::Null);
        }
        list.get_mut(index)?
    } else {
        let key = first.strip_prefix("map_").unwrap_or(first);
        if node.is_null() {
            *node = Json::Object(Map::new());
        }
        node.as_object_mut()?.entry(key.to_owned()).or_insert(Json::Null)
    };
    place(child, rest, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    fn variables(lines: &[(&str, &str)]) -> Vec<Variable> {
        lines.iter().enumerate().map(|(i, (n, v))| ((*n).to_owned(), Zeroizing::new((*v).to_owned()), i + 1)).collect()
    }

    #[test]
    fn metadata_lines_become_the_sops_block() {
        let found = variables(&[
            ("DB_PASSWORD", "ENC[x]"),
            ("sops_age__list_0__map_enc", "-----BEGIN\\nabc\\n"),
            ("sops_age__list_0__map_recipient", "age1x"),
            ("sops_age__list_1__map_recipient", "age1y"),
            ("sops_mac", "ENC[m]"),
            ("sops_version", "3.11.0"),
        ]);
        assert!(is_sops(&found));
        let document = sops_document(&found).unwrap();
        assert_eq!(document["DB_PASSWORD"], "ENC[x]");
        assert_eq!(document["sops"]["age"][0]["enc"], "-----BEGIN\nabc\n");
        assert_eq!(document["sops"]["age"][1]["recipient"], "age1y");
        assert_eq!(document["sops"]["mac"], "ENC[m]");
        assert!(!is_sops(&variables(&[("DB_PASSWORD", "x")])));
        assert!(sops_document(&variables(&[("sops_age__list_3__map_enc", "x")])).is_none());
    }
}
