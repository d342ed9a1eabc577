//! The `tfrs` binary: see [`tfrs_gitops::cli`].
use std::process::ExitCode;

fn main() -> ExitCode {
    tfrs_gitops::cli::run().into()
}
