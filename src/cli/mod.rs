//! The command line: parses arguments, runs a subcommand, prints reports, picks exit codes.
//!
//! Exit codes: 0 success, 1 the command's negative result (an invalid spec), 2 usage, I/O or
//! environment errors. A broken pipe on stdout exits 0.

mod args;
mod audit;
mod commit;
mod diff;
mod graph;
mod reconcile;
mod render;
mod schema;
mod stages;
mod unseal;
mod validate;
mod version;

use clap::Parser;
use std::io::{self, Write};
use std::process::ExitCode;

pub use args::Args;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// It did what was asked.
    Success,
    /// Its negative result: an invalid spec, a diff found.
    Failure,
    /// Usage, I/O or environment error.
    Error,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        ExitCode::from(match status {
            Status::Success => 0,
            Status::Failure => 1,
            Status::Error => 2,
        })
    }
}

/// Parses the process arguments and runs the command.
#[must_use]
pub fn run() -> Status {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { Status::Error } else { Status::Success };
        }
    };
    let mut stdout = io::stdout().lock();
    let result = match args.command {
        args::Command::Validate(a) => validate::run(&a, &mut stdout),
        args::Command::Schema(a) => schema::run(&a, &mut stdout),
        args::Command::Unseal(a) => unseal::run(&a, &mut stdout),
        args::Command::Render(a) => render::run(&a, &mut stdout),
        args::Command::Graph(a) => graph::run(&a, &mut stdout),
        args::Command::Audit(a) => audit::run(&a, &mut stdout),
        args::Command::Commit(a) => commit::run(&a, &mut stdout),
        args::Command::Diff(a) => diff::run(&a, &mut stdout),
        args::Command::Reconcile(a) => reconcile::run(&a, &mut stdout),
        args::Command::Version(a) => version::run(&a, &mut stdout),
    };
    match result {
        Ok(status) => status,
        Err(error) if is_broken_pipe(&error) => Status::Success,
        Err(error) => {
            let _ = stdout.flush();
            let mut message = format!("error: {error}");
            for cause in error.chain().skip(1) {
                message.push_str(&format!("\n  caused by: {cause}"));
            }
            eprintln!("{message}");
            Status::Error
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe))
}
