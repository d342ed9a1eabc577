//! `tfrs version`: the tool's version, the commit it was built from, the catalog's digest and,
//! with `--components`, the version catalog.

use super::Status;
use super::args::{VersionArgs, VersionFormat};
use crate::catalog;
use sha2::{Digest, Sha256};
use std::io::Write;

/// The crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Git commit the binary was built from: a short hash, with `-dirty` when the work tree
/// had uncommitted changes, or `unknown` (see `build.rs`).
pub const COMMIT: &str = env!("TFRS_GIT_COMMIT");

/// The first 12 hex digits of the SHA-256 of the catalog as `tfrs version --components
/// --format json` prints it: any change of a pin changes it.
#[must_use]
pub fn catalog_digest() -> String {
    let json = serde_json::to_vec(catalog::CATALOG).unwrap_or_default();
    crate::secrets::bytes::to_hex(&Sha256::digest(&json)[..6])
}

/// What follows `tfrs ` on the first line of `tfrs version` and `tfrs --version`:
/// `0.1.0 (commit 1a2b3c4d5e6f, catalog sha256:0123456789ab)`.
#[must_use]
pub fn line() -> String {
    format!("{VERSION} (commit {COMMIT}, catalog sha256:{})", catalog_digest())
}

/// Runs `tfrs version`.
pub fn run(args: &VersionArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    match args.format {
        VersionFormat::Text => {
            writeln!(stdout, "tfrs {}", line())?;
            if args.components {
                writeln!(stdout)?;
                stdout.write_all(catalog::table().as_bytes())?;
            }
        }
        VersionFormat::Json => {
            let mut document = serde_json::json!({ "version": VERSION, "commit": COMMIT, "catalog_digest": catalog_digest() });
            if args.components {
                document["components"] = serde_json::to_value(catalog::CATALOG)?;
            }
            writeln!(stdout, "{}", serde_json::to_string_pretty(&document)?)?;
        }
    }
    Ok(Status::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_version_commit_and_catalog() {
        let line = line();
        assert!(line.starts_with(&format!("{VERSION} (commit ")), "{line}");
        assert!(!COMMIT.is_empty());
        let digest = catalog_digest();
        assert_eq!(digest.len(), 12);
        assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()), "{digest}");
        assert!(line.ends_with(&format!(", catalog sha256:{digest})")), "{line}");
    }
}
