//! The identity of a Kubernetes object, the one type every stage uses for it: the render's
//! objects, the plan (`plan.json`, written and read), the render memo, the integrity gate, the
//! diff and reconcile.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::fmt;

/// An object's `apiVersion`, `kind`, `metadata.namespace` and `metadata.name`.
///
/// Two ids name the same object on the API server when their [`ObjectId::server_key`]s are
/// equal: the server keeps one object per API group, kind, namespace and name, whatever its
/// version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectId {
    /// `apiVersion` (`v1`, `apps/v1`).
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace`; `None` for cluster-scoped objects (an empty string reads as `None`).
    #[serde(default, deserialize_with = "empty_is_none")]
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

fn empty_is_none<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.filter(|n| !n.is_empty()))
}

impl ObjectId {
    /// An id from its four parts.
    #[must_use]
    pub fn new(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> ObjectId {
        ObjectId {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: namespace.filter(|n| !n.is_empty()).map(str::to_owned),
            name: name.to_owned(),
        }
    }

    /// The id of an object's JSON; `None` when `apiVersion`, `kind` or `metadata.name` is
    /// missing or not a string.
    #[must_use]
    pub fn read(object: &Json) -> Option<ObjectId> {
        let field = |pointer: &str| object.pointer(pointer).and_then(Json::as_str);
        Some(ObjectId::new(field("/apiVersion")?, field("/kind")?, field("/metadata/namespace"), field("/metadata/name")?))
    }

    /// The id of an object's JSON, with missing fields empty (for objects read back from a
    /// cluster or a tree, whose shape was checked elsewhere).
    #[must_use]
    pub fn of(object: &Json) -> ObjectId {
        let field = |pointer: &str| object.pointer(pointer).and_then(Json::as_str);
        ObjectId::new(
            field("/apiVersion").unwrap_or(""),
            field("/kind").unwrap_or(""),
            field("/metadata/namespace"),
            field("/metadata/name").unwrap_or(""),
        )
    }

    /// The namespace, `None` for cluster-scoped objects.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The API group: the part of `apiVersion` before `/`, empty for the core group.
    #[must_use]
    pub fn group(&self) -> &str {
        api_group(&self.api_version)
    }

    /// The server's key of the object, as text: `group/Kind/namespace/name` (`Kind/…` in the
    /// core group; no namespace segment for cluster-scoped objects).
    #[must_use]
    pub fn server_key(&self) -> String {
        let group = self.group();
        let namespace = self.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default();
        if group.is_empty() {
            format!("{}/{namespace}{}", self.kind, self.name)
        } else {
            format!("{group}/{}/{namespace}{}", self.kind, self.name)
        }
    }

    /// The file the object is written to inside its component directory: `<kind>-<name>.yaml`
    /// in lowercase, the name the output layout gives every object file.
    #[must_use]
    pub fn file_name(&self) -> String {
        format!("{}-{}.yaml", self.kind.to_lowercase(), self.name.to_lowercase())
    }
}

/// The API group of an `apiVersion`: the part before `/`, empty for the core group (`v1`).
#[must_use]
pub fn api_group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// `Kind/namespace/name` (or `Kind/name`), as in messages.
impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{}/{namespace}/{}", self.kind, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// What a file holds, by content: the Git blob id of its bytes (SHA-1 over `blob <length>\0`
/// and the bytes), so the id of a file in an output directory and of the same file in a Git
/// tree are one value. The render memo trusts it for files it does not read again.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentId(pub [u8; 20]);

impl ContentId {
    /// The id of `bytes`.
    #[must_use]
    pub fn of(bytes: &[u8]) -> ContentId {
        use sha1::{Digest, Sha1};
        let mut hasher = Sha1::new();
        hasher.update(format!("blob {}\0", bytes.len()).as_bytes());
        hasher.update(bytes);
        ContentId(hasher.finalize().into())
    }

    /// Parses 40 hex digits.
    #[must_use]
    pub fn from_hex(hex: &str) -> Option<ContentId> {
        if hex.len() != 40 {
            return None;
        }
        let digit = |c: u8| char::from(c).to_digit(16);
        let mut id = [0u8; 20];
        for (byte, pair) in id.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
            *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
        }
        Some(ContentId(id))
    }
}

/// 40 lowercase hex digits, as Git prints a blob id.
impl fmt::Display for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // NB: one write, not one per byte: the render memo writes tens of thousands of ids.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0u8; 40];
        for (pair, byte) in hex.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 15)];
        }
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_read_print_and_compare_by_group() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}});
        let id = ObjectId::read(&object).expect("an id");
        assert_eq!(id.to_string(), "Deployment/shop/web");
        assert_eq!(id.server_key(), "apps/Deployment/shop/web");
        assert_eq!(id.file_name(), "deployment-web.yaml");
        assert_eq!(id.server_key(), ObjectId::new("apps/v1beta2", "Deployment", Some("shop"), "web").server_key());
        assert_ne!(id.server_key(), ObjectId::new("extensions/v1", "Deployment", Some("shop"), "web").server_key());
        let namespace = ObjectId::new("v1", "Namespace", Some(""), "shop");
        assert_eq!(
            (namespace.namespace(), namespace.to_string(), namespace.server_key()),
            (None, "Namespace/shop".into(), "Namespace/shop".into())
        );
        assert_eq!(ObjectId::read(&json!({"kind": "X"})), None);
        let parsed: ObjectId = serde_json::from_str(r#"{"apiVersion":"v1","kind":"Namespace","namespace":"","name":"shop"}"#).unwrap();
        assert_eq!(parsed, namespace);
    }

    #[test]
    fn a_content_id_is_the_git_blob_id() {
        // `printf 'hello\n' | git hash-object --stdin`
        let id = ContentId::of(b"hello\n");
        assert_eq!(id.to_string(), "ce013625030ba8dba906f756967f9e9ca394464a");
        assert_eq!(ContentId::from_hex(&id.to_string()), Some(id));
        assert_eq!(ContentId::from_hex("ce01"), None);
        assert_eq!(ContentId::of(b"").to_string(), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }
}
