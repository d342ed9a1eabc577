//! The edge of the secrets stage: environment, files, the master key, the clock and the system RNG.

use crate::secrets::{MasterKey, SecretInputs};
use anyhow::Context;
use std::path::{Path, PathBuf};

/// `fromEnv` from the process environment, `fromFile` relative to the spec file's directory.
///
/// A `fromFile` path must stay inside the spec file's directory once `..` and symlinks are
/// resolved, unless `allow_outside` (`--allow-outside`): a spec from a pull request must not be
/// able to seal `~/.ssh/id_rsa` into the cluster.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OsInputs {
    /// Accept `fromFile` paths that resolve outside the spec file's directory.
    pub(crate) allow_outside: bool,
}

impl SecretInputs for OsInputs {
    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn file(&self, spec_file: &str, path: &str) -> Result<Vec<u8>, String> {
        let base = Path::new(spec_file).parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let base = if base.as_os_str().is_empty() { PathBuf::from(".") } else { base };
        let full = base.join(path);
        if !self.allow_outside {
            let inside = match (std::fs::canonicalize(&base), std::fs::canonicalize(&full)) {
                (Ok(base), Ok(target)) => target.starts_with(&base),
                // A missing file is reported below, as such.
                (_, Err(_)) => !Path::new(path).components().any(|c| matches!(c, std::path::Component::ParentDir)),
                (Err(_), _) => false,
            };
            if !inside {
                return Err(format!(
                    "`{path}` resolves outside the spec file's directory (`..` or a symlink); pass `--allow-outside` if that is intended"
                ));
            }
        }
        // NB: the error names the kind of failure only, never content.
        std::fs::read(&full).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("no such file (looked at `{}`)", full.display()),
            _ => e.kind().to_string(),
        })
    }
}

/// The master key from `--master-key-file`, else `TFRS_MASTER_KEY`; `None` when neither is set.
///
/// # Errors
///
/// The file cannot be read, or the key is not 64 hex characters (the key is never shown).
pub(crate) fn master_key(file: Option<&Path>) -> anyhow::Result<Option<MasterKey>> {
    if let Some(file) = file {
        let text = zeroize::Zeroizing::new(
            std::fs::read_to_string(file).with_context(|| format!("cannot read master key file `{}`", file.display()))?,
        );
        return MasterKey::from_hex(&text).map(Some).with_context(|| format!("invalid master key in `{}`", file.display()));
    }
    match std::env::var("TFRS_MASTER_KEY") {
        Ok(text) => {
            let text = zeroize::Zeroizing::new(text);
            MasterKey::from_hex(&text).map(Some).context("invalid `TFRS_MASTER_KEY`")
        }
        Err(_) => Ok(None),
    }
}

/// The system RNG for sealing (OS-seeded, cryptographically secure).
pub(crate) fn system_rng() -> rand::rngs::ThreadRng {
    rand::rng()
}

/// Seconds since the Unix epoch (for certificate validity).
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// `unix_seconds` as RFC 3339 UTC with whole seconds and `Z` (SOPS `lastmodified`).
#[must_use]
pub fn rfc3339(unix_seconds: i64) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let secs = unix_seconds.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_735_787_045), "2025-01-02T03:04:05Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn files_are_relative_to_the_spec_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("specs/secrets")).unwrap();
        std::fs::write(dir.path().join("specs/secrets/a.txt"), "x\n").unwrap();
        let spec = dir.path().join("specs/cluster.yaml");
        let inputs = OsInputs::default();
        assert_eq!(inputs.file(&spec.to_string_lossy(), "secrets/a.txt").unwrap(), b"x\n");
        let error = inputs.file(&spec.to_string_lossy(), "nope.txt").unwrap_err();
        assert!(error.starts_with("no such file"), "{error}");
    }

    #[test]
    fn files_outside_the_spec_directory_need_allow_outside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("specs")).unwrap();
        std::fs::write(dir.path().join("outside.txt"), "secret\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.txt"), dir.path().join("specs/link.txt")).unwrap();
        let spec = dir.path().join("specs/cluster.yaml").to_string_lossy().into_owned();
        let inputs = OsInputs::default();
        for path in ["../outside.txt", "link.txt", "./../specs/../outside.txt"] {
            let error = inputs.file(&spec, path).unwrap_err();
            assert!(error.contains("outside the spec file's directory"), "{path}: {error}");
            assert!(!error.contains("secret"), "never the content");
        }
        assert_eq!(OsInputs { allow_outside: true }.file(&spec, "../outside.txt").unwrap(), b"secret\n");
        assert_eq!(OsInputs { allow_outside: true }.file(&spec, "link.txt").unwrap(), b"secret\n");
    }
}
