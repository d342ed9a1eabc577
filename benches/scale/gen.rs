//! `gen-scale`: writes the scale platform (see `platform.rs` beside this file) into a directory.
//!
//! ```console
//! $ cargo run --release --example gen-scale -- --tenants 200 --servers 2000 --out /tmp/scale
//! $ target/release/tfrs render /tmp/scale --master-key-file /tmp/scale/keys/master.key --out /tmp/scale-out
//! ```
//!
//! `--change J` gives server `J` a different `configData` (for the one-server-changed run).
//! `--image-tag TAG` sets every server's image tag to `TAG` (each server has its own otherwise):
//! a change of every server at once, as an image bump of the whole platform is.
//!
//! `--clusters K` writes a fleet instead: K clusters (`fleet00`, …), each naming its own
//! environment, with the tenants and servers declared once and placed in every cluster (so each
//! cluster has all of them); `--change-environment K` changes cluster K's environment.

#[path = "platform.rs"]
mod platform;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut tenants = platform::DEFAULT_TENANTS;
    let mut servers = platform::DEFAULT_SERVERS;
    let mut changed = None;
    let mut clusters = None;
    let mut changed_environment = None;
    let mut image_tag = None;
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        let number = value.as_deref().and_then(|v| v.parse::<usize>().ok());
        match (arg.as_str(), number) {
            ("--tenants", Some(n)) if n >= 1 => tenants = n,
            ("--servers", Some(n)) => servers = n,
            ("--change", Some(n)) => changed = Some(n),
            ("--clusters", Some(n)) if n >= 1 => clusters = Some(n),
            ("--change-environment", Some(n)) => changed_environment = Some(n),
            ("--image-tag", _) if value.as_deref().is_some_and(|v| !v.is_empty()) => image_tag = value,
            ("--out", _) if value.is_some() => out = value.map(PathBuf::from),
            _ => return usage(),
        }
    }
    let Some(out) = out else { return usage() };
    let written = match clusters {
        // NB: the fleet has no image bump: its servers keep their own tags.
        Some(_) if image_tag.is_some() => return usage(),
        Some(clusters) => platform::write_fleet(&out, clusters, tenants, servers, changed_environment),
        None => platform::write(&out, tenants, servers, changed, image_tag.as_deref()),
    };
    match written {
        Ok(()) => {
            let fleet = clusters.map(|k| format!(", each placed in {k} clusters,")).unwrap_or_default();
            println!("wrote {tenants} tenants and {servers} servers{fleet} to `{}`", out.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: cannot write `{}`: {error}", out.display());
            ExitCode::from(2)
        }
    }
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: gen-scale [--tenants N] [--servers M] [--change J] [--image-tag TAG | --clusters K [--change-environment K]] --out DIR"
    );
    ExitCode::from(2)
}
