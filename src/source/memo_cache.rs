//! Where the render memo (`crate::render::memo`) of an output directory is kept between runs:
//! `<cache>/memo-<digest of the directory's absolute path>.json`, with `<cache>` the first of
//! `$TFRS_CACHE_DIR`, `$XDG_CACHE_HOME/tfrs`, `$HOME/.cache/tfrs`.
//!
//! It is outside the output directory on purpose: the tree stays exactly the layout
//! `docs/render.md` shows, and the memo, which names the tfrs executable it was made by, never
//! shows in a diff. It holds stamps, object identities and paths: no value. A missing,
//! unreadable or foreign memo is an empty one.

use crate::render::memo::Table;
use crate::tree::current::Records;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The memo file of output directory `out`; `None` when no cache directory is known.
pub(crate) fn path(out: &Path) -> Option<PathBuf> {
    let dir = match std::env::var_os("TFRS_CACHE_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir).join("tfrs"),
            None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache/tfrs"),
        },
    };
    let absolute = std::path::absolute(out).ok()?;
    let digest = Sha256::digest(absolute.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("memo-{}.json", crate::secrets::bytes::to_hex(&digest[..16]))))
}

/// What is kept between two renders into one directory: the memo's jobs and the records of the
/// files the last render left (`tree::current`).
#[derive(Debug, Default)]
pub(crate) struct Saved {
    /// The memo's entries.
    pub(crate) jobs: Table,
    /// The files' records.
    pub(crate) files: Records,
}

/// The records of memo file `file` are kept beside it, as text.
fn records_path(file: &Path) -> PathBuf {
    file.with_extension("files")
}

/// The memo in `file` and the records beside it, or empty ones.
pub(crate) fn load(file: &Path) -> Saved {
    let jobs = std::fs::read(file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
    let files = std::fs::read_to_string(records_path(file)).map(|text| Records::parse(&text)).unwrap_or_default();
    Saved { jobs, files }
}

/// A memo not written for this long is removed when another is saved (output directories come
/// and go; their memos should not pile up).
const STALE: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Writes `jobs` to `file` and `files` beside it (each through a temporary file and a rename,
/// so a reader sees the old one or the new one), and removes memos of other directories not
/// written for 30 days.
pub(crate) fn save(file: &Path, jobs: &Table, files: &Records) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    prune(dir);
    replace(file, &serde_json::to_vec(jobs).map_err(std::io::Error::other)?)?;
    replace(&records_path(file), files.to_text().as_bytes())
}

fn replace(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let temporary = dir.join(format!(".{}.{}", file.file_name().and_then(|n| n.to_str()).unwrap_or("memo"), std::process::id()));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

/// Names this tfrs build: its version and its executable (path, size, modification time), so a
/// rebuilt or upgraded tfrs renders everything again.
pub(crate) fn build_id() -> String {
    let exe = std::env::current_exe().ok();
    let meta = exe.as_deref().and_then(|e| std::fs::metadata(e).ok());
    let modified = meta.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    format!(
        "tfrs {} {} {} {}",
        env!("CARGO_PKG_VERSION"),
        exe.as_deref().map(|e| e.display().to_string()).unwrap_or_default(),
        meta.map_or(0, |m| m.len()),
        modified.map_or(0, |d| d.as_nanos()),
    )
}

/// Removes `memo-*.json` and `memo-*.files` files in `dir` last written more than [`STALE`] ago. Best effort.
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with("memo-") && (name.ends_with(".json") || name.ends_with(".files"))) {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified());
        if modified.is_ok_and(|m| now.duration_since(m).is_ok_and(|age| age > STALE)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
