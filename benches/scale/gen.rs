//! `gen-scale`: writes the scale platform (see `platform.rs` beside this file) into a directory.
//!
//! ```console
//! $ cargo run --release --example gen-scale -- --tenants 200 --servers 2000 --out /tmp/scale
//! $ target/release/tfrs render /tmp/scale --master-key-file /tmp/scale/keys/master.key --out /tmp/scale-out
//! ```
//!
//! `--change J` gives server `J` a different `configData` (for the one-server-changed run).
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
            ("--out", _) if value.is_some() => out = value.map(PathBuf::from),
            _ => {
                eprintln!("usage: gen-scale [--tenants N] [--servers M] [--change J] [--clusters K [--change-environment K]] --out DIR");
                return ExitCode::from(2);
            }
        }
    }
    let Some(out) = out else {
        eprintln!("usage: gen-scale [--tenants N] [--servers M] [--change J] [--clusters K [--change-environment K]] --out DIR");
        return ExitCode::from(2);
    };
    let written = match clusters {
        Some(clusters) => platform::write_fleet(&out, clusters, tenants, servers, changed_environment),
        None => platform::write(&out, tenants, servers, changed),
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
