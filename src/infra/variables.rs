//! The variables of `.env.infra` and of the manager's environment file, each generated value
//! derived from the master key at `infra/<environment>/<VARIABLE>` (and its rotation), so a
//! variable both files hold is the same value in both by construction.

use super::model::InfraSpec;
use crate::secrets::MasterKey;
use crate::spec::model::{Charset, Generate};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use zeroize::Zeroizing;

/// How a generated variable is formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `n` characters of `A-Z a-z 0-9` (safe in URLs, dotenv files and shells unquoted).
    Alphanumeric(u32),
    /// `n` bytes, written as `2n` lowercase hex characters.
    HexBytes(u32),
    /// `n` bytes, written as padded standard base64.
    Base64Bytes(u32),
}

/// Which file a variable goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Files {
    /// `.env.infra` only (the server's stack).
    Infra,
    /// The manager's environment only.
    Manager,
    /// Both: these must be equal, or the manager cannot reach the service.
    Both,
}

/// A generated variable.
#[derive(Debug, Clone, Copy)]
pub struct Generated {
    /// The variable's name.
    pub name: &'static str,
    /// Its length and alphabet.
    pub form: Form,
    /// Where it goes.
    pub files: Files,
    /// What it is for (docs, the plan).
    pub purpose: &'static str,
}

/// Every generated variable.
pub const GENERATED: &[Generated] = &[
    Generated { name: "DB_PASSWORD", form: Form::Alphanumeric(32), files: Files::Both, purpose: "business PostgreSQL password" },
    Generated { name: "REDIS_PASSWORD", form: Form::Alphanumeric(24), files: Files::Both, purpose: "business Redis password" },
    Generated { name: "OTLP_TS_PASSWORD", form: Form::Alphanumeric(32), files: Files::Both, purpose: "central TimescaleDB password" },
    Generated {
        name: "INFISICAL_ENCRYPTION_KEY",
        form: Form::HexBytes(16),
        files: Files::Infra,
        purpose: "Infisical's root encryption key: losing it loses every secret Infisical holds",
    },
    Generated {
        name: "INFISICAL_AUTH_SECRET",
        form: Form::Base64Bytes(32),
        files: Files::Infra,
        purpose: "Infisical's session signing key",
    },
    Generated {
        name: "INFISICAL_PG_PASSWORD",
        form: Form::Alphanumeric(32),
        files: Files::Infra,
        purpose: "Infisical's PostgreSQL password",
    },
    Generated {
        name: "INFISICAL_REDIS_PASSWORD",
        form: Form::Alphanumeric(24),
        files: Files::Infra,
        purpose: "Infisical's Redis password",
    },
    Generated { name: "JWT_SECRET", form: Form::Alphanumeric(64), files: Files::Manager, purpose: "the manager's token signing key" },
    Generated {
        name: "SECRET_ENCRYPTION_KEY",
        form: Form::Alphanumeric(32),
        files: Files::Manager,
        purpose: "the manager's encryption key: exactly 32 characters, used as raw bytes",
    },
];

/// The variables the two files share: equal in both, or the manager fails at start.
pub const SHARED: &[&str] = &["DB_PASSWORD", "REDIS_PASSWORD", "OTLP_TS_PASSWORD"];

/// The order of `.env.infra`.
pub const INFRA_ORDER: &[&str] = &[
    "DB_USER",
    "DB_PASSWORD",
    "DB_NAME",
    "REDIS_PASSWORD",
    "OTLP_TS_USER",
    "OTLP_TS_PASSWORD",
    "OTLP_TS_DBNAME",
    "INFISICAL_ENCRYPTION_KEY",
    "INFISICAL_AUTH_SECRET",
    "INFISICAL_SITE_URL",
    "INFISICAL_PG_PASSWORD",
    "INFISICAL_REDIS_PASSWORD",
];

/// The order of the manager's environment values that must match the infrastructure.
pub const MANAGER_ORDER: &[&str] = &[
    "DB_PASSWORD",
    "REDIS_PASSWORD",
    "OTLP_TS_PASSWORD",
    "JWT_SECRET",
    "SECRET_ENCRYPTION_KEY",
    "INFISICAL_PROJECT_ID",
    "INFISICAL_PROJECT_SLUG",
    "INFISICAL_ENVIRONMENT",
    "INFISICAL_INTERNAL_URL",
];

/// The manager variables that come from Infisical after its bootstrap (the manager's machine
/// identity): not derived, added to the manager's file by hand (the plan lists them).
pub const MANAGER_FROM_BOOTSTRAP: &[&str] = &["INFISICAL_CLIENT_ID", "INFISICAL_CLIENT_SECRET"];

/// Name and value pairs, in file order. Values are zeroized on drop and never printed by
/// `Debug`.
#[derive(Default)]
pub struct Values(pub Vec<(String, Zeroizing<String>)>);

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(name, _)| name)).finish()
    }
}

impl Values {
    /// The value of `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// The derivation path of a generated variable.
#[must_use]
pub fn path(spec: &InfraSpec, name: &str) -> String {
    format!("infra/{}/{name}", spec.environment.as_str())
}

/// The value of generated variable `generated` for `spec`.
#[must_use]
pub fn derive(key: &MasterKey, spec: &InfraSpec, generated: &Generated) -> Zeroizing<String> {
    let rotation = spec.rotation.get(generated.name).copied().unwrap_or(0);
    let path = path(spec, generated.name);
    match generated.form {
        Form::Alphanumeric(length) => key.derive(&path, &Generate { length, charset: Charset::Alphanumeric, rotation }),
        Form::HexBytes(bytes) => key.derive(&path, &Generate { length: 2 * bytes, charset: Charset::Hex, rotation }),
        Form::Base64Bytes(bytes) => {
            let hex = key.derive(&path, &Generate { length: 2 * bytes, charset: Charset::Hex, rotation });
            let raw: Zeroizing<Vec<u8>> =
                Zeroizing::new(hex.as_bytes().chunks(2).map(|pair| (nibble(pair[0]) << 4) | nibble(pair[1])).collect());
            Zeroizing::new(STANDARD.encode(raw.as_slice()))
        }
    }
}

fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        _ => c - b'a' + 10,
    }
}

fn value(key: &MasterKey, spec: &InfraSpec, name: &str) -> Zeroizing<String> {
    if let Some(generated) = GENERATED.iter().find(|g| g.name == name) {
        return derive(key, spec, generated);
    }
    let plain = match name {
        "DB_USER" => &spec.postgres.user,
        "DB_NAME" => &spec.postgres.database,
        "OTLP_TS_USER" => &spec.timescaledb.user,
        "OTLP_TS_DBNAME" => &spec.timescaledb.database,
        "INFISICAL_SITE_URL" | "INFISICAL_INTERNAL_URL" => &spec.infisical.url,
        "INFISICAL_PROJECT_ID" => &spec.infisical.project_id,
        "INFISICAL_PROJECT_SLUG" => &spec.infisical.project_slug,
        "INFISICAL_ENVIRONMENT" => &spec.infisical.environment,
        // NB: every name of the two orders is listed above or in GENERATED (a test holds this).
        _ => unreachable!("variable `{name}` has no source"),
    };
    Zeroizing::new(plain.clone())
}

/// The values of `.env.infra`.
#[must_use]
pub fn infra(key: &MasterKey, spec: &InfraSpec) -> Values {
    Values(INFRA_ORDER.iter().map(|name| ((*name).to_owned(), value(key, spec, name))).collect())
}

/// The manager's environment values that must match the infrastructure.
#[must_use]
pub fn manager(key: &MasterKey, spec: &InfraSpec) -> Values {
    Values(MANAGER_ORDER.iter().map(|name| ((*name).to_owned(), value(key, spec, name))).collect())
}

/// `.env.infra` as text: a comment line, then `NAME=value` lines (every value is alphanumeric,
/// hex, base64 or a URL: nothing to quote).
#[must_use]
pub fn to_dotenv(values: &Values, environment: &str) -> Zeroizing<String> {
    let mut out = Zeroizing::new(format!(
        "# Central infrastructure of `{environment}`, generated by tfrs from the master key: do not edit, re-render.\n"
    ));
    for (name, value) in &values.0 {
        out.push_str(name);
        out.push('=');
        out.push_str(value);
        out.push('\n');
    }
    out
}

/// The values as a flat JSON map (for YAML and SOPS).
#[must_use]
pub fn to_map(values: &Values) -> serde_json::Value {
    serde_json::Value::Object(values.0.iter().map(|(name, value)| (name.clone(), serde_json::Value::String(value.to_string()))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::spec::tests::spec;

    fn key() -> MasterKey {
        MasterKey::from_bytes([3; 32])
    }

    #[test]
    fn every_variable_has_a_source_and_shared_ones_are_equal() {
        let spec = spec();
        let (infra, manager) = (infra(&key(), &spec), manager(&key(), &spec));
        for name in SHARED {
            assert_eq!(infra.get(name), manager.get(name), "{name}");
            assert!(infra.get(name).is_some_and(|v| !v.is_empty()), "{name}");
        }
        for generated in GENERATED {
            let in_infra = INFRA_ORDER.contains(&generated.name);
            let in_manager = MANAGER_ORDER.contains(&generated.name);
            let expected = match generated.files {
                Files::Infra => (true, false),
                Files::Manager => (false, true),
                Files::Both => (true, true),
            };
            assert_eq!((in_infra, in_manager), expected, "{}", generated.name);
            assert_eq!(SHARED.contains(&generated.name), generated.files == Files::Both, "{}", generated.name);
        }
    }

    #[test]
    fn lengths_and_charsets_hold() {
        let spec = spec();
        let infra = infra(&key(), &spec);
        let manager = manager(&key(), &spec);
        let encryption = infra.get("INFISICAL_ENCRYPTION_KEY").unwrap();
        assert!(encryption.len() == 32 && encryption.bytes().all(|b| b.is_ascii_hexdigit()));
        let auth = infra.get("INFISICAL_AUTH_SECRET").unwrap();
        assert_eq!(STANDARD.decode(auth).unwrap().len(), 32);
        let secret = manager.get("SECRET_ENCRYPTION_KEY").unwrap();
        assert_eq!(secret.chars().count(), 32);
        assert!(secret.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(manager.get("JWT_SECRET").unwrap().len(), 64);
    }

    #[test]
    fn rotation_changes_one_variable_only_and_environments_differ() {
        let mut spec = spec();
        let before = infra(&key(), &spec);
        spec.rotation.insert("REDIS_PASSWORD".to_owned(), 1);
        let after = infra(&key(), &spec);
        for (name, value) in &before.0 {
            assert_eq!(after.get(name) == Some(value.as_str()), name != "REDIS_PASSWORD", "{name}");
        }
        let mut prod = spec.clone();
        prod.environment = crate::infra::model::Environment::Prod;
        assert_ne!(infra(&key(), &prod).get("DB_PASSWORD"), after.get("DB_PASSWORD"));
        assert_eq!(format!("{before:?}"), format!("{:?}", INFRA_ORDER));
    }
}
