//! `tfrs diff`: load -> build (render, lay out) -> seal against a ref -> compare per object ->
//! text, markdown or JSON.

use super::args::{DiffArgs, DiffFormat, FailOn};
use super::stages::{build, load, select};
use super::{Colour, Status};
use crate::git::{previous_object, read_files, remote};
use crate::layout::cluster_dirs;
use crate::tree::diff::{Change, Diff, Entry, SealedChange, counts_text, diff};
use crate::tree::review::Review;
use serde_json::json;
use std::io::Write;

/// A GitHub comment holds 65536 characters; details beyond this budget are left out.
const MARKDOWN_BUDGET: usize = 60_000;

/// Runs `tfrs diff`; `colour` is for the text format.
pub fn run(args: &DiffArgs, colour: Colour, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = load(&args.inputs, &args.settings.overlays)? else {
        return Ok(Status::Error);
    };
    let spec = select(spec, &bundle, &args.settings.clusters)?;
    let (repo, is_url) = crate::git::open(&args.repo)?;
    let reference = match &args.reference {
        Some(reference) => reference.clone(),
        None => crate::git::default_branch(&repo, is_url)?,
    };
    let commit = resolve(&repo, is_url, &reference)?;
    if commit.is_none() {
        eprintln!("note: `{reference}` does not exist in `{}` yet: compared with an empty tree (everything is added)", args.repo);
    }
    let tree = commit.as_ref().map(git2::Commit::tree).transpose()?;
    let Some(mut rendered) = build(&spec, &bundle, &args.settings)? else {
        return Ok(Status::Error);
    };
    let previous = |path: &str| tree.as_ref().and_then(|tree| previous_object(&repo, tree, path));
    rendered.seal(&previous, &mut crate::source::inputs::system_rng())?;
    let files = rendered.files();
    let mut old = crate::tree::Files::new();
    if let Some(tree) = &tree {
        for dir in cluster_dirs(files) {
            old.extend(read_files(&repo, tree, &dir)?);
        }
    }
    let found = diff(&old, files);
    let review = crate::tree::review::review(&old, files, &found);
    let text = match args.format {
        DiffFormat::Text if args.quiet => totals_line(&found, &reference),
        DiffFormat::Text => format!("{}{}", summary_text(&review, colour), text(&found, &reference, colour)),
        DiffFormat::Markdown => markdown(&found, &review, &reference),
        DiffFormat::Json => json_report(&found, &review, &reference, commit.as_ref().map(git2::Commit::id)),
    };
    stdout.write_all(text.as_bytes())?;
    let failed = match args.fail_on {
        FailOn::Changes => !found.is_empty(),
        FailOn::Risky => !review.risks.is_empty(),
    };
    Ok(if failed { Status::Failure } else { Status::Success })
}

/// The commit `reference` names: a branch fetched from a URL, or any revision of a local
/// repository. `None` for a branch that does not exist yet (a new repository's first pull
/// request); any other name that resolves to nothing is an error.
fn resolve<'r>(repo: &'r git2::Repository, is_url: bool, reference: &str) -> anyhow::Result<Option<git2::Commit<'r>>> {
    if is_url {
        let tip = remote::fetch(repo, "origin", reference)?;
        return Ok(tip.map(|tip| repo.find_commit(tip)).transpose()?);
    }
    match repo.revparse_single(reference).and_then(|object| object.peel_to_commit()) {
        Ok(commit) => Ok(Some(commit)),
        Err(error) if error.code() == git2::ErrorCode::NotFound && is_branch_name(reference) => Ok(None),
        Err(source) => Err(crate::git::Error::Resolve { name: reference.to_owned(), source }.into()),
    }
}

/// Whether `name` can only mean a branch: a valid branch name, not a revision expression or a
/// commit id.
fn is_branch_name(name: &str) -> bool {
    let hex = name.len() >= 7 && name.bytes().all(|b| b.is_ascii_hexdigit());
    !hex && !name.contains(['^', '~', ':', '@', '{']) && git2::Branch::name_is_valid(name).unwrap_or(false)
}

/// The `tfrs.diff/v1` JSON document.
fn json_report(found: &Diff, review: &Review, reference: &str, commit: Option<git2::Oid>) -> String {
    let document = json!({
        "schema": "tfrs.diff/v1",
        "ref": reference,
        "commit": commit.map(|c| c.to_string()),
        "changed": !found.is_empty(),
        "totals": found.totals(),
        "components": found.components().into_iter().map(|((cluster, component), counts)| json!({
            "cluster": cluster,
            "component": component,
            "added": counts.added,
            "changed": counts.changed,
            "removed": counts.removed,
            "secrets": counts.secrets,
        })).collect::<Vec<_>>(),
        "summary": review,
        "objects": found.entries,
    });
    format!("{}\n", serde_json::to_string_pretty(&document).unwrap_or_default())
}

/// The review first: what is risky, what rolls and why, what happens to sealed values.
fn summary_lines(review: &Review) -> Vec<String> {
    let mut lines = Vec::new();
    for risk in &review.risks {
        lines.push(format!("RISKY: {} {}: {}", risk.cluster, risk.object, risk.reason));
    }
    for roll in &review.rolls {
        lines.push(format!("rolls: {} {} ({})", roll.cluster, roll.object, roll.reasons.join("; ")));
    }
    for (verb, values) in &review.secrets {
        let shown: Vec<&str> = values.iter().take(10).map(String::as_str).collect();
        let more = if values.len() > 10 { format!(" and {} more", values.len() - 10) } else { String::new() };
        lines.push(format!("secrets {verb}: {}{more}", shown.join(", ")));
    }
    lines
}

/// The review as text, before the listing.
fn summary_text(review: &Review, colour: Colour) -> String {
    let mut out = String::new();
    for line in summary_lines(review) {
        let painted = if line.starts_with("RISKY") { colour.paint("1;31", &line) } else { line };
        out.push_str(&painted);
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Whether a report shows an entry's unified diff: not for a removed object (its one line says
/// all a reviewer needs; the old file is in Git), nor for the bookkeeping files every change
/// touches (`kustomization.yaml` resource lists, `plan.json`). The JSON format has them all.
fn shows_diff(entry: &Entry) -> bool {
    entry.change != Change::Removed && !is_bookkeeping(&entry.path)
}

/// A `kustomization.yaml` resource list or a cluster's `plan.json`.
fn is_bookkeeping(path: &str) -> bool {
    path.ends_with(&format!("/{}", crate::layout::KUSTOMIZATION)) || path.ends_with("/plan.json")
}

fn sigil(change: Change) -> char {
    match change {
        Change::Added => '+',
        Change::Changed => '~',
        Change::Removed => '-',
    }
}

fn sealed_lines(entry: &Entry) -> Vec<String> {
    entry.sealed.iter().map(|s| format!("{}: <sealed: {}>", s.key, s.change)).collect()
}

/// The last line of the text format alone (`--quiet`).
fn totals_line(found: &Diff, reference: &str) -> String {
    if found.is_empty() {
        return format!("no changes against `{reference}`\n");
    }
    format!("{} against `{reference}`\n", counts_text(&found.totals()))
}

/// Per component a header, then per object its line, sealed values and indented unified diff.
fn text(found: &Diff, reference: &str, colour: Colour) -> String {
    let paint = |code: &str, text: &str| colour.paint(code, text);
    if found.is_empty() {
        return totals_line(found, reference);
    }
    let mut out = String::new();
    for ((cluster, component), counts) in found.components() {
        out.push_str(&paint("1", &format!("{cluster} {component}: {}", counts_text(&counts))));
        out.push('\n');
        for entry in found.entries.iter().filter(|e| e.cluster == cluster && e.component == component) {
            let code = match entry.change {
                Change::Added => "32",
                Change::Changed => "33",
                Change::Removed => "31",
            };
            out.push_str(&paint(code, &format!("  {} {} {}", sigil(entry.change), entry.change, entry.title())));
            out.push('\n');
            for line in sealed_lines(entry) {
                out.push_str(&format!("      {line}\n"));
            }
            if !shows_diff(entry) {
                continue;
            }
            for line in entry.diff.lines() {
                let painted = if line.starts_with("+++") || line.starts_with("---") {
                    paint("1", line)
                } else if line.starts_with('+') {
                    paint("32", line)
                } else if line.starts_with('-') {
                    paint("31", line)
                } else if line.starts_with("@@") {
                    paint("36", line)
                } else {
                    line.to_owned()
                };
                out.push_str(&format!("      {painted}\n"));
            }
        }
    }
    out.push_str(&totals_line(found, reference));
    out
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A code fence longer than any backtick run inside `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// A summary table per component, then one collapsed `<details>` per object.
fn markdown(found: &Diff, review: &Review, reference: &str) -> String {
    let mut out = format!("### tfrs diff against `{reference}`\n\n");
    if found.is_empty() {
        out.push_str("No changes.\n");
        return out;
    }
    for line in summary_lines(review) {
        out.push_str(&format!("- {}\n", escape_html(&line)));
    }
    if !review.rolls.is_empty() || !review.secrets.is_empty() || !review.risks.is_empty() {
        out.push('\n');
    }
    markdown_table(found, &mut out);
    let (shown, listed): (Vec<&Entry>, Vec<&Entry>) = found.entries.iter().partition(|entry| shows_diff(entry));
    if !listed.is_empty() {
        out.push_str(&markdown_list(&listed));
    }
    let mut left_out = 0;
    for entry in shown {
        let details = markdown_details(entry);
        if out.len() + details.len() > MARKDOWN_BUDGET {
            left_out += 1;
        } else {
            out.push_str(&details);
        }
    }
    if left_out > 0 {
        out.push_str(&format!(
            "_{left_out} more object{} not shown (comment size limit); run `tfrs diff` for all of them._\n",
            if left_out == 1 { "" } else { "s" }
        ));
    }
    out
}

/// The totals and one table row per component.
fn markdown_table(found: &Diff, out: &mut String) {
    let components = found.components();
    out.push_str(&format!(
        "**{}** in {} component{}.\n\n",
        counts_text(&found.totals()),
        components.len(),
        if components.len() == 1 { "" } else { "s" }
    ));
    out.push_str("| cluster | component | added | changed | removed | secrets |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
    for (index, ((cluster, component), counts)) in components.iter().enumerate() {
        // NB: the table alone must leave room under the comment limit for the details.
        if out.len() > MARKDOWN_BUDGET / 2 {
            out.push_str(&format!("| … | {} more components |  |  |  |  |\n", components.len() - index));
            break;
        }
        out.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            escape_html(cluster),
            component,
            counts.added,
            counts.changed,
            counts.removed,
            counts.secrets
        ));
    }
    out.push('\n');
}

/// Removed objects and bookkeeping files, one line each (collapsed when there are many).
fn markdown_list(entries: &[&Entry]) -> String {
    let mut lines = String::new();
    for entry in entries {
        let sealed = if entry.sealed.is_empty() { String::new() } else { format!(", {} sealed values", entry.sealed.len()) };
        lines.push_str(&format!(
            "- {} {} <code>{}</code> (<code>{}</code>{sealed})\n",
            entry.change,
            escape_html(&entry.title()),
            escape_html(&entry.cluster),
            escape_html(&entry.component)
        ));
        if lines.len() > MARKDOWN_BUDGET / 4 {
            lines.push_str("- …\n");
            break;
        }
    }
    if entries.len() <= 10 {
        return format!("{lines}\n");
    }
    format!("<details>\n<summary>{} removed objects and bookkeeping files</summary>\n\n{lines}\n</details>\n\n", entries.len())
}

/// One object's collapsed `<details>`: its sealed values, then its unified diff.
fn markdown_details(entry: &Entry) -> String {
    let mut details = format!(
        "<details>\n<summary>{} <code>{}</code> ({} <code>{}</code>)</summary>\n\n",
        entry.change,
        escape_html(&entry.title()),
        escape_html(&entry.cluster),
        escape_html(&entry.component)
    );
    for sealed in &entry.sealed {
        let mark = if sealed.change == SealedChange::Unchanged { "" } else { "**" };
        details.push_str(&format!("- `{}`: {mark}`<sealed: {}>`{mark}\n", sealed.key, sealed.change));
    }
    if !entry.sealed.is_empty() {
        details.push('\n');
    }
    if !entry.diff.is_empty() {
        let fence = fence(&entry.diff);
        details.push_str(&format!("{fence}diff\n{}{}{fence}\n\n", entry.diff, if entry.diff.ends_with('\n') { "" } else { "\n" }));
    }
    details.push_str("</details>\n\n");
    details
}
