//! Where tfrs keeps what it caches between runs: the render memos and spec caches of output
//! directories (`crate::source::memo_cache`) and the clones of URL repositories
//! (`crate::git`). One directory for all: the first of `$TFRS_CACHE_DIR`,
//! `$XDG_CACHE_HOME/tfrs`, `$HOME/.cache/tfrs`.

use std::path::PathBuf;

/// tfrs's cache directory; `None` when none of its variables is set.
#[must_use]
pub fn dir() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("TFRS_CACHE_DIR").or_else(|| set("XDG_CACHE_HOME").map(|dir| dir.join("tfrs"))).or_else(|| Some(set("HOME")?.join(".cache/tfrs")))
}
