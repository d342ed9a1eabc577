//! Helpers shared by the integration test crates.

use std::process::Output;

/// A command's whole result as text: exit code, stdout, stderr (the shape of CLI snapshots).
#[must_use]
pub fn report(output: &Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The repository root (where `fixtures/` lives).
#[allow(dead_code)]
#[must_use]
pub fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Copies the directory `from` (recursively) to `to`, e.g. a fixture into a temp dir to edit it.
#[allow(dead_code)]
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// The `tfrs` binary as a command run from the repository root, keeping render memos in the
/// build directory instead of the user's cache.
#[allow(dead_code)]
#[must_use]
pub fn tfrs_command() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tfrs"));
    command.current_dir(root()).env("TFRS_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/tfrs-memo"));
    command
}
