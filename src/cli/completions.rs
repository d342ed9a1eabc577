//! `tfrs completions`: a shell completion script for every command and flag, from the same
//! definition clap parses with.

use super::Status;
use super::args::{CompletionsArgs, Shell};
use std::io::Write;

/// Runs `tfrs completions`.
pub fn run(args: &CompletionsArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    stdout.write_all(&script(args.shell))?;
    Ok(Status::Success)
}

/// The completion script for `shell`.
#[must_use]
pub fn script(shell: Shell) -> Vec<u8> {
    use clap_complete::Shell as Generator;
    let generator = match shell {
        Shell::Bash => Generator::Bash,
        Shell::Zsh => Generator::Zsh,
        Shell::Fish => Generator::Fish,
        Shell::Powershell => Generator::PowerShell,
    };
    // NB: generated into memory: clap_complete panics on a failed write, and a closed pipe
    // must end quietly like every other command's.
    let mut script = Vec::new();
    clap_complete::generate(generator, &mut super::command(), "tfrs", &mut script);
    script
}
