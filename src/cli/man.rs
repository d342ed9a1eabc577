//! `tfrs man`: manual pages (roff) for `tfrs` and each of its commands, from the same
//! definition clap parses with.

use super::Status;
use super::args::ManArgs;
use anyhow::Context as _;
use std::io::Write;

/// Runs `tfrs man`.
pub fn run(args: &ManArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let pages = pages()?;
    let Some(out) = &args.out else {
        // The first page is `tfrs.1`.
        stdout.write_all(&pages[0].1)?;
        return Ok(Status::Success);
    };
    std::fs::create_dir_all(out).with_context(|| format!("cannot create `{}`", out.display()))?;
    for (name, page) in &pages {
        let file = out.join(name);
        std::fs::write(&file, page).with_context(|| format!("cannot write `{}`", file.display()))?;
    }
    writeln!(stdout, "wrote {} manual pages into `{}`", pages.len(), out.display())?;
    Ok(Status::Success)
}

/// Every page as (file name, roff): `tfrs.1` first, then `tfrs-<command>.1` per command in the
/// order of `tfrs --help`.
///
/// # Errors
///
/// When clap_mangen cannot write into memory (it does not).
pub fn pages() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut command = super::command().disable_help_subcommand(true);
    // NB: building fills in what the pages show: each command's full name (`tfrs-render`), the
    // global `--color`, the version on every page.
    command.build();
    let mut pages = vec![page(&command)?];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages.push(page(sub)?);
    }
    Ok(pages)
}

fn page(command: &clap::Command) -> anyhow::Result<(String, Vec<u8>)> {
    let man = clap_mangen::Man::new(command.clone());
    let mut roff = Vec::new();
    man.render(&mut roff)?;
    Ok((man.get_filename(), roff))
}
