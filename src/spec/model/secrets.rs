//! [`SecretSource`]: how any credential-valued field of the three kinds gets its value.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Any credential-valued field: exactly one of `generate`, `fromEnv`, `fromFile`, `value`;
/// `{}` means `generate` with its defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schemars(extend("maxProperties" = 1))]
pub struct SecretSource {
    /// Derive the value from the master key (HMAC-SHA256 over the secret's logical path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generate: Option<Generate>,
    /// Read the value from this environment variable at render time.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "env-name"))]
    pub from_env: Option<String>,
    /// Read the value from this file, relative to the spec file's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "relative-path"))]
    pub from_file: Option<String>,
    /// A literal value (plaintext in Git: `tfrs validate` warns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// The keys of a [`SecretSource`], one of which it takes.
pub const SECRET_FORMS: [&str; 4] = ["generate", "fromEnv", "fromFile", "value"];

/// The resolved form of a [`SecretSource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretForm<'a> {
    /// Derived from the master key.
    Generate(Generate),
    /// From an environment variable.
    FromEnv(&'a str),
    /// From a file relative to the spec file.
    FromFile(&'a str),
    /// A literal.
    Value(&'a str),
}

impl SecretSource {
    /// A literal source.
    #[must_use]
    pub fn literal(value: &str) -> Self {
        SecretSource { value: Some(value.to_owned()), ..SecretSource::default() }
    }

    /// The form this source takes. Validation guarantees at most one key is set; if several
    /// were, the first in the order `generate`, `fromEnv`, `fromFile`, `value` wins.
    #[must_use]
    pub fn form(&self) -> SecretForm<'_> {
        if let Some(generate) = &self.generate {
            SecretForm::Generate(generate.clone())
        } else if let Some(name) = &self.from_env {
            SecretForm::FromEnv(name)
        } else if let Some(path) = &self.from_file {
            SecretForm::FromFile(path)
        } else if let Some(value) = &self.value {
            SecretForm::Value(value)
        } else {
            SecretForm::Generate(Generate::default())
        }
    }
}

/// Options of a generated secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Generate {
    /// Number of characters.
    #[schemars(range(min = 8, max = 4096))]
    pub length: u32,
    /// Alphabet of the value.
    pub charset: Charset,
    /// Bump to rotate the value.
    pub rotation: u32,
}

impl Default for Generate {
    fn default() -> Self {
        Generate { length: 32, charset: Charset::default(), rotation: 0 }
    }
}

/// Alphabet of a generated secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Charset {
    /// `A-Z a-z 0-9`: URL-safe, like `openssl rand -base64 24 | tr -d '/+='`.
    #[default]
    Alphanumeric,
    /// `0-9 a-f`.
    Hex,
    /// `A-Z a-z 0-9 + /`.
    Base64,
}
