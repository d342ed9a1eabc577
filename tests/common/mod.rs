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
