//! The command line: parses arguments, runs a subcommand, prints reports, picks exit codes.
//!
//! Exit codes: 0 success, 1 the command's negative result (an invalid spec), 2 usage, I/O or
//! environment errors. A broken pipe on stdout exits 0.

mod args;
mod audit;
mod base;
mod bootstrap;
mod cert;
mod colour;
mod commit;
mod completions;
mod diff;
mod diff_live;
mod diff_markdown;
mod diff_report;
mod graph;
mod infra;
mod infra_args;
mod kube;
mod live_args;
mod log;
mod man;
mod plan;
mod reconcile;
mod render;
mod report;
mod schema;
mod stages;
mod unseal;
mod validate;
mod version;

use clap::{CommandFactory, FromArgMatches};
use std::io::{self, Write};
use std::process::ExitCode;

pub use args::Args;
pub use colour::Colour;

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

/// The command-line interface as clap sees it, with the full version line (`--version`, the
/// manual page); shared by parsing, `tfrs completions` and `tfrs man`.
#[must_use]
pub fn command() -> clap::Command {
    // NB: clap keeps a `&'static str`; this runs once or twice per process.
    let version: &'static str = Box::leak(version::line().into_boxed_str());
    Args::command().version(version)
}

/// Parses the process arguments and runs the command.
#[must_use]
pub fn run() -> Status {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let command = command().color(Colour::for_clap(colour::choice_in(&argv)));
    let args = match command.try_get_matches_from(argv).and_then(|matches| Args::from_arg_matches(&matches)) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { Status::Error } else { Status::Success };
        }
    };
    let colour = Colour::stdout(args.color);
    let mut stdout = io::stdout().lock();
    let result = match args.command {
        args::Command::Validate(a) => validate::run(&a, &mut stdout),
        args::Command::Schema(a) => schema::run(&a, &mut stdout),
        args::Command::Unseal(a) => unseal::run(&a, &mut stdout),
        args::Command::Render(a) => render::run(&a, &mut stdout),
        args::Command::Graph(a) => graph::run(&a, &mut stdout),
        args::Command::Plan(a) => plan::run(&a, &mut stdout),
        args::Command::Log(a) => log::run(&a, &mut stdout),
        args::Command::Audit(a) => audit::run(&a, &mut stdout),
        args::Command::Commit(a) => commit::run(&a, &mut stdout),
        args::Command::Diff(a) if a.live => diff_live::run(&a, colour, &mut stdout),
        args::Command::Diff(a) => diff::run(&a, colour, &mut stdout),
        args::Command::Reconcile(a) => reconcile::run(&a, &mut stdout),
        args::Command::Bootstrap(a) => bootstrap::run(&a, &mut stdout),
        args::Command::Cert(a) => cert::run(&a, &mut stdout),
        args::Command::Infra(a) => infra::run(&a, &mut stdout),
        args::Command::Version(a) => version::run(&a, &mut stdout),
        args::Command::Completions(a) => completions::run(&a, &mut stdout),
        args::Command::Man(a) => man::run(&a, &mut stdout),
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
