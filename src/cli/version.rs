//! `tfrs version`: the tool's version and, with `--components`, the version catalog.

use super::Status;
use super::args::{VersionArgs, VersionFormat};
use crate::catalog;
use std::io::Write;

/// Runs `tfrs version`.
pub fn run(args: &VersionArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let version = env!("CARGO_PKG_VERSION");
    match args.format {
        VersionFormat::Text => {
            writeln!(stdout, "tfrs {version}")?;
            if args.components {
                writeln!(stdout)?;
                stdout.write_all(catalog::table().as_bytes())?;
            }
        }
        VersionFormat::Json => {
            let mut document = serde_json::json!({ "version": version });
            if args.components {
                document["components"] = serde_json::to_value(catalog::CATALOG)?;
            }
            writeln!(stdout, "{}", serde_json::to_string_pretty(&document)?)?;
        }
    }
    Ok(Status::Success)
}
