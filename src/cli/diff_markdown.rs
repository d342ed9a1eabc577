//! `tfrs diff --format markdown`: a pull-request comment. The review first, a table per
//! component, removed objects and bookkeeping files one line each, then one collapsed
//! `<details>` per object with its risks, rolls, causes, sealed values and unified diff.
//!
//! One comment holds 65,536 characters. Alone, the report leaves out the objects that do not
//! fit and says how many; with `--parts DIR` it is cut into numbered parts, each a comment of
//! its own, and nothing is left out (a single object too large for a comment is shortened, and
//! says so).

use super::diff_report::{Report, is_bookkeeping, shows_diff, summary_lines};
use crate::tree::diff::{Change, Entry, SealedChange, counts_text};
use std::path::{Path, PathBuf};

/// An entry and its index in the diff.
type Indexed<'a> = (usize, &'a Entry);

/// The size of one comment, with room to spare for the host's own additions.
const BUDGET: usize = 60_000;

/// The report as one comment.
pub(crate) fn markdown(report: &Report<'_>) -> String {
    let mut out = heading(report.reference, None);
    let blocks = blocks(report);
    // NB: room for the closing note on what was left out.
    const NOTE: usize = 200;
    let mut left_out = 0;
    for block in blocks {
        if out.len() + block.len() > BUDGET - NOTE {
            left_out += 1;
        } else {
            out.push_str(&block);
        }
    }
    if left_out > 0 {
        out.push_str(&format!(
            "_{left_out} more object{} not shown (comment size limit); `tfrs diff --parts DIR` writes them all as several comments._\n",
            if left_out == 1 { "" } else { "s" }
        ));
    }
    out
}

/// The report cut into parts of at most `budget` characters, in order.
pub(crate) fn parts(report: &Report<'_>, budget: usize) -> Vec<String> {
    // NB: the heading is written once the count is known; reserve room for the longest.
    let room = budget.saturating_sub(heading(report.reference, Some((999, 999))).len());
    let mut bodies: Vec<String> = vec![String::new()];
    for block in blocks(report) {
        let block = if block.len() > room { shorten(&block, room) } else { block };
        let last = bodies.last_mut().expect("one part at least");
        if !last.is_empty() && last.len() + block.len() > room {
            bodies.push(block);
        } else {
            last.push_str(&block);
        }
    }
    let count = bodies.len();
    bodies
        .into_iter()
        .enumerate()
        .map(|(index, body)| format!("{}{body}", heading(report.reference, (count > 1).then_some((index + 1, count)))))
        .collect()
}

/// Writes the parts as `dir/part-<n>.md` (removing parts a longer report left there) and
/// returns their paths.
///
/// # Errors
///
/// I/O errors.
pub(crate) fn write_parts(report: &Report<'_>, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    use anyhow::Context;
    let cannot = |what: &str, path: &Path| format!("--parts: cannot {what} `{}`", path.display());
    std::fs::create_dir_all(dir).with_context(|| cannot("create the directory", dir))?;
    for entry in std::fs::read_dir(dir).with_context(|| cannot("read the directory", dir))? {
        let path = entry.with_context(|| cannot("read the directory", dir))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("part-") && name.ends_with(".md") {
            std::fs::remove_file(&path).with_context(|| cannot("remove the earlier part", &path))?;
        }
    }
    let mut paths = Vec::new();
    for (index, part) in parts(report, BUDGET).into_iter().enumerate() {
        let path = dir.join(format!("part-{}.md", index + 1));
        std::fs::write(&path, part).with_context(|| cannot("write", &path))?;
        paths.push(path);
    }
    Ok(paths)
}

fn heading(reference: &str, part: Option<(usize, usize)>) -> String {
    match part {
        Some((index, count)) => format!("### tfrs diff against `{reference}` (part {index} of {count})\n\n"),
        None => format!("### tfrs diff against `{reference}`\n\n"),
    }
}

/// The report's blocks after its heading: the summary and table, the one-line list, then one
/// block per object shown in full.
fn blocks(report: &Report<'_>) -> Vec<String> {
    let found = &report.found;
    if found.is_empty() {
        return vec!["No changes.\n".to_owned()];
    }
    let mut summary = String::new();
    for line in summary_lines(report) {
        summary.push_str(&format!("- {}\n", escape_html(&line)));
    }
    if !summary.is_empty() {
        summary.push('\n');
    }
    markdown_table(report, &mut summary);
    let mut out = vec![summary];
    let (shown, listed): (Vec<Indexed<'_>>, Vec<Indexed<'_>>) = found.entries.iter().enumerate().partition(|(_, e)| shows_diff(e));
    if !listed.is_empty() {
        out.push(markdown_list(report, &listed));
    }
    out.extend(shown.into_iter().map(|(index, entry)| markdown_details(report, index, entry)));
    out
}

/// A block cut to `room` characters at a line boundary, closing what it opened.
fn shorten(block: &str, room: usize) -> String {
    const TAIL: &str = "\n…\n```\n\n_Shortened to fit one comment; `tfrs diff` shows it whole._\n\n</details>\n\n";
    let keep = room.saturating_sub(TAIL.len() + 40);
    let mut end = keep.min(block.len());
    while !block.is_char_boundary(end) {
        end -= 1;
    }
    let mut cut = block[..end].to_owned();
    if let Some(end) = cut.rfind('\n') {
        cut.truncate(end);
    }
    // NB: the details' fence may be longer than three backticks; close with the one it opened.
    let fence = cut.lines().rev().find(|l| l.starts_with("```")).map(|l| l.trim_end_matches("diff").to_owned());
    let tail = TAIL.replace("```", fence.as_deref().unwrap_or("```"));
    format!("{cut}{tail}")
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

/// The totals and one table row per component.
fn markdown_table(report: &Report<'_>, out: &mut String) {
    let components = report.found.components();
    out.push_str(&format!(
        "**{}** in {} component{}.\n\n",
        counts_text(&report.found.totals()),
        components.len(),
        if components.len() == 1 { "" } else { "s" }
    ));
    out.push_str("| cluster | component | added | changed | removed | secrets |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
    for (index, ((cluster, component), counts)) in components.iter().enumerate() {
        // NB: the table alone must leave room under the comment limit for the details.
        if out.len() > BUDGET / 2 {
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
fn markdown_list(report: &Report<'_>, entries: &[Indexed<'_>]) -> String {
    let mut lines = String::new();
    for &(index, entry) in entries {
        let risky = if report.risks(index).next().is_some() { "**RISKY** " } else { "" };
        let sealed = match entry.sealed.len() {
            0 => String::new(),
            1 => ", 1 sealed value".to_owned(),
            n => format!(", {n} sealed values"),
        };
        lines.push_str(&format!(
            "- {risky}{} {} <code>{}</code> (<code>{}</code>{sealed})\n",
            entry.change,
            escape_html(&entry.title()),
            escape_html(&entry.cluster),
            escape_html(&entry.component)
        ));
        if lines.len() > BUDGET / 4 {
            lines.push_str("- …\n");
            break;
        }
    }
    if entries.len() <= 10 {
        return format!("{lines}\n");
    }
    let removed = entries.iter().filter(|(_, e)| e.change == Change::Removed && !is_bookkeeping(&e.path)).count();
    let files = entries.iter().filter(|(_, e)| is_bookkeeping(&e.path)).count();
    format!("<details>\n<summary>{removed} removed objects, {files} bookkeeping files</summary>\n\n{lines}\n</details>\n\n")
}

/// One object's collapsed `<details>`: its risks, rolls and causes, its sealed values, then its
/// unified diff.
fn markdown_details(report: &Report<'_>, index: usize, entry: &Entry) -> String {
    // NB: markdown is not read inside an HTML block's `<summary>`: bold is `<b>`.
    let risky = if report.risks(index).next().is_some() { "<b>RISKY</b> " } else { "" };
    let mut details = format!(
        "<details>\n<summary>{risky}{} <code>{}</code> ({} <code>{}</code>)</summary>\n\n",
        entry.change,
        escape_html(&entry.title()),
        escape_html(&entry.cluster),
        escape_html(&entry.component)
    );
    for note in report.notes(index) {
        details.push_str(&format!("- {}\n", escape_html(&note)));
    }
    for sealed in &entry.sealed {
        let mark = if sealed.change == SealedChange::Unchanged { "" } else { "**" };
        details.push_str(&format!("- `{}`: {mark}`<sealed: {}>`{mark}\n", sealed.key, sealed.change));
    }
    details.push('\n');
    if !entry.diff.is_empty() {
        let fence = fence(&entry.diff);
        details.push_str(&format!("{fence}diff\n{}{}{fence}\n\n", entry.diff, if entry.diff.ends_with('\n') { "" } else { "\n" }));
    }
    details.push_str("</details>\n\n");
    details
}
