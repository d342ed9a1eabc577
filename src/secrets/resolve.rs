//! Turning a [`SecretSource`] into its plaintext.
//!
//! The outside world (environment, files) comes in through [`SecretInputs`], so this stays pure;
//! the CLI passes one backed by `std::env` and the filesystem, tests pass [`MapInputs`].
//!
//! `fromFile`: exactly one trailing `"\n"` is stripped (what `echo x > file` and editors add);
//! anything else, including `"\r"` and further newlines, is kept byte for byte.

use super::derive::MasterKey;
use crate::spec::model::{SecretForm, SecretSource};
use std::collections::BTreeMap;
use zeroize::Zeroizing;

/// Where `fromEnv` and `fromFile` values come from.
pub trait SecretInputs: Sync {
    /// The value of environment variable `name`, if set.
    fn env(&self, name: &str) -> Option<String>;
    /// The bytes of `path` as written in the spec, relative to the directory of `spec_file` (the
    /// display name of the spec file). The error is a reason without the file's content.
    ///
    /// # Errors
    ///
    /// The file cannot be read.
    fn file(&self, spec_file: &str, path: &str) -> Result<Vec<u8>, String>;
}

/// Errors of resolving a secret source. None holds a value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResolveError {
    /// A generated secret and no master key.
    #[error(
        "generated secrets need a master key: set `TFRS_MASTER_KEY` to 64 hex characters, e.g. from `openssl rand -hex 32`, or pass `--master-key-file`"
    )]
    MissingMasterKey,
    /// `fromEnv` names an unset variable.
    #[error("environment variable `{name}` is not set")]
    MissingEnv {
        /// The variable.
        name: String,
    },
    /// `fromFile` cannot be read.
    #[error("cannot read `{path}`: {reason}")]
    File {
        /// The path as written in the spec.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Resolves `source`, the secret at `logical_path` (e.g. `tenant/acme/postgresql/password`), in a
/// spec read from `spec_file`.
///
/// # Errors
///
/// A generated secret without `master`, an unset `fromEnv` variable, an unreadable `fromFile`.
pub fn resolve(
    source: &SecretSource,
    logical_path: &str,
    spec_file: &str,
    inputs: &dyn SecretInputs,
    master: Option<&MasterKey>,
) -> Result<Zeroizing<Vec<u8>>, ResolveError> {
    match source.form() {
        SecretForm::Generate(generate) => {
            let master = master.ok_or(ResolveError::MissingMasterKey)?;
            let value = master.derive(logical_path, &generate);
            Ok(Zeroizing::new(value.as_bytes().to_vec()))
        }
        SecretForm::FromEnv(name) => {
            inputs.env(name).map(|v| Zeroizing::new(v.into_bytes())).ok_or_else(|| ResolveError::MissingEnv { name: name.to_owned() })
        }
        SecretForm::FromFile(path) => {
            let mut bytes =
                Zeroizing::new(inputs.file(spec_file, path).map_err(|reason| ResolveError::File { path: path.to_owned(), reason })?);
            if bytes.last() == Some(&b'\n') {
                bytes.pop();
            }
            Ok(bytes)
        }
        SecretForm::Value(value) => Ok(Zeroizing::new(value.as_bytes().to_vec())),
    }
}

/// In-memory inputs for tests: `files` are keyed by the path as written in the spec, or by that
/// path joined to the spec file's directory (`dir/of/spec/path`), tried in that order.
#[derive(Default, Clone)]
pub struct MapInputs {
    /// Environment variables.
    pub env: BTreeMap<String, String>,
    /// Files.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl std::fmt::Debug for MapInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapInputs")
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("files", &self.files.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl SecretInputs for MapInputs {
    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }

    fn file(&self, spec_file: &str, path: &str) -> Result<Vec<u8>, String> {
        let joined = match spec_file.rfind('/') {
            Some(slash) => format!("{}/{path}", &spec_file[..slash]),
            None => path.to_owned(),
        };
        self.files.get(path).or_else(|| self.files.get(&joined)).cloned().ok_or_else(|| "no such file".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::model::Generate;

    fn inputs() -> MapInputs {
        MapInputs {
            env: BTreeMap::from([("TOKEN".to_owned(), "t0k3n".to_owned())]),
            files: BTreeMap::from([
                ("specs/secrets/one.txt".to_owned(), b"line\n".to_vec()),
                ("two.txt".to_owned(), b"a\n\n".to_vec()),
                ("crlf.txt".to_owned(), b"a\r\n".to_vec()),
            ]),
        }
    }

    fn key() -> MasterKey {
        MasterKey::from_bytes([3; 32])
    }

    #[test]
    fn every_form_resolves() {
        let i = inputs();
        let get = |s: SecretSource| resolve(&s, "t/x/p", "specs/cluster.yaml", &i, Some(&key())).map(|v| v.to_vec());
        assert_eq!(get(SecretSource::literal("lit")).unwrap(), b"lit");
        assert_eq!(get(SecretSource { from_env: Some("TOKEN".to_owned()), ..SecretSource::default() }).unwrap(), b"t0k3n");
        assert_eq!(get(SecretSource { from_file: Some("secrets/one.txt".to_owned()), ..SecretSource::default() }).unwrap(), b"line");
        assert_eq!(get(SecretSource { from_file: Some("two.txt".to_owned()), ..SecretSource::default() }).unwrap(), b"a\n");
        assert_eq!(get(SecretSource { from_file: Some("crlf.txt".to_owned()), ..SecretSource::default() }).unwrap(), b"a\r");
        let generated = get(SecretSource::default()).unwrap();
        assert_eq!(generated, key().derive("t/x/p", &Generate::default()).as_bytes());
        let explicit = SecretSource { generate: Some(Generate { length: 12, ..Generate::default() }), ..SecretSource::default() };
        assert_eq!(get(explicit).unwrap().len(), 12);
    }

    #[test]
    fn failures_say_what_to_do_and_never_show_values() {
        let i = inputs();
        let error = resolve(&SecretSource::default(), "p", "s.yaml", &i, None).unwrap_err();
        assert_eq!(error, ResolveError::MissingMasterKey);
        let text = error.to_string();
        assert!(
            text.contains("`TFRS_MASTER_KEY`") && text.contains("openssl rand -hex 32") && text.contains("`--master-key-file`"),
            "{text}"
        );
        let error =
            resolve(&SecretSource { from_env: Some("NOPE".to_owned()), ..SecretSource::default() }, "p", "s.yaml", &i, None).unwrap_err();
        assert_eq!(error.to_string(), "environment variable `NOPE` is not set");
        let error =
            resolve(&SecretSource { from_file: Some("missing.txt".to_owned()), ..SecretSource::default() }, "p", "s.yaml", &i, None)
                .unwrap_err();
        assert_eq!(error.to_string(), "cannot read `missing.txt`: no such file");
        // A literal never needs the master key.
        assert!(resolve(&SecretSource::literal("v"), "p", "s.yaml", &i, None).is_ok());
        assert!(!format!("{i:?}").contains("t0k3n"));
    }
}
