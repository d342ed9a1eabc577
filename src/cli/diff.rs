//! `tfrs diff`: load -> build (render, lay out) -> seal against a ref -> compare per object ->
//! text, markdown or JSON.

use super::args::{DiffArgs, DiffFormat, FailOn};
use super::diff_report::{Report, sealed_lines, shows_diff, summary_lines};
use super::stages::{build, load, select};
use super::{Colour, Status};
use crate::git::{previous_object, read_files, remote};
use crate::layout::cluster_dirs;
use crate::tree::cause::{self, Side};
use crate::tree::diff::{Change, Diff, counts_text, diff};
use serde_json::json;
use std::collections::BTreeSet;
use std::io::Write;

/// Runs `tfrs diff`; `colour` is for the text format.
pub fn run(args: &DiffArgs, colour: Colour, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    if args.parts.is_some() && args.format != DiffFormat::Markdown {
        anyhow::bail!("`--parts` writes the markdown report in parts: use it with `--format markdown`");
    }
    let repo_arg = args.repo.as_deref().unwrap_or_default();
    let Some((spec, bundle)) = load(&args.inputs, &args.settings.overlays, super::stages::Effect::Reads)? else {
        return Ok(Status::Error);
    };
    let spec = select(spec, &bundle, &args.settings.clusters)?;
    let (repo, is_url) = crate::git::open(repo_arg)?;
    let reference = match &args.reference {
        Some(reference) => reference.clone(),
        None => crate::git::default_branch(&repo, is_url)?,
    };
    let commit = resolve(&repo, is_url, &reference)?;
    let mut notes = Vec::new();
    if commit.is_none() {
        notes.push(missing_branch(&repo, &reference, repo_arg));
        eprintln!("note: {}", notes[0]);
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
    let mut found = diff(&old, files);
    let base = if found.is_empty() {
        None
    } else {
        let clusters = spec.clusters.iter().map(|o| o.cluster.clone()).collect();
        Some(super::base::read(commit.as_ref(), &args.inputs, &args.settings.overlays, &clusters))
    };
    if let Some(base) = &base {
        found.mark_resealed(&rendered.resealed(&base.sealers, &previous));
    }
    let mut review = crate::tree::review::review(&old, files, &found);
    let causes = base.as_ref().map(|base| traced(&found, &spec, &bundle, base)).unwrap_or_default();
    let (version, base_notes) = base.map(|b| (b.version, b.notes)).unwrap_or_default();
    refine(&mut review, &causes, &found, &spec, version.is_none());
    notes.extend(base_notes);
    let report = Report { reference: &reference, found, review, causes, version, notes };
    write_report(&report, args, commit.as_ref().map(git2::Commit::id), colour, stdout)?;
    let failed = match args.fail_on {
        FailOn::Changes => !report.found.is_empty(),
        FailOn::Risky => !report.review.risks.is_empty(),
    };
    Ok(if failed { Status::Failure } else { Status::Success })
}

/// The causes of every entry: each group of clusters of the base (rendered from one commit of
/// the specs) traced against the specs of that commit, and the clusters without known specs
/// traced without.
fn traced(found: &Diff, spec: &crate::spec::Spec, bundle: &crate::spec::Bundle, base: &super::base::Base) -> cause::Causes {
    let mut out = cause::Causes { entries: vec![Vec::new(); found.entries.len()], spec: Vec::new() };
    let known: BTreeSet<String> = base.groups.iter().flat_map(|(clusters, ..)| clusters.iter().cloned()).collect();
    let unknown: BTreeSet<String> = spec.clusters.iter().map(|o| o.cluster.clone()).filter(|c| !known.contains(c)).collect();
    let groups = base.groups.iter().map(|(clusters, spec, bundle)| (clusters, Some((spec, bundle))));
    for (clusters, old) in groups.chain((!unknown.is_empty()).then_some((&unknown, None))) {
        let now = spec.only(clusters);
        let new_side = Side::new(&now, bundle);
        let old_side = old.map(|(spec, bundle)| Side::new(spec, bundle));
        let traced = cause::trace(&found.entries, &new_side, old_side.as_ref());
        for ((entry, causes), mine) in found.entries.iter().zip(traced.entries).zip(&mut out.entries) {
            if clusters.contains(&entry.cluster) {
                *mine = causes;
            }
        }
        out.spec.extend(traced.spec);
    }
    // NB: each group's spec changes are in order; the groups' clusters interleave.
    out.spec.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    out
}

/// What the review learns from the causes: changed sealed values told apart, and removed
/// tenants (a tenant sharing its namespace removes no Namespace or data service of its own).
fn refine(review: &mut crate::tree::review::Review, causes: &cause::Causes, found: &Diff, spec: &crate::spec::Spec, same_tfrs: bool) {
    review.classify_changes(&causes.entries, same_tfrs, &|key| secret_data_source(found, spec, key));
    for tenant in causes.spec.iter().filter(|c| c.change == "removed" && c.object.starts_with("TFRTenant ")) {
        let reason = "tenant removed: its servers go, with their databases, users and credentials".to_owned();
        review.risks.push(crate::tree::review::Risk {
            entry: usize::MAX,
            object: tenant.object.clone(),
            cluster: tenant.cluster.clone(),
            reason,
        });
    }
}

/// Whether a sealed value is one of a server's `secretData` keys (in `<server>-secret`) and, if
/// so, whether it is provided (`value`, `fromFile`, `fromEnv`) rather than generated.
fn secret_data_source(found: &Diff, spec: &crate::spec::Spec, key: &crate::tree::review::SealedKey) -> Option<bool> {
    let entry = found.entries.get(key.entry)?;
    let server = entry.component.strip_suffix("/config")?.rsplit_once("/servers/")?.1;
    if entry.name.as_deref() != Some(crate::render::names::server_secret(server).as_str()) {
        return None;
    }
    let object = spec.servers.iter().find(|o| o.cluster == entry.cluster && o.name() == server)?;
    let source = object.spec.secret_data.get(&key.key)?;
    Some(!matches!(source.form(), crate::spec::model::SecretForm::Generate(_)))
}

/// Writes `report` in the format the flags ask for (the paths of the parts, for `--parts`).
pub(super) fn write_report(
    report: &Report<'_>,
    args: &DiffArgs,
    commit: Option<git2::Oid>,
    colour: Colour,
    stdout: &mut dyn Write,
) -> anyhow::Result<()> {
    match (args.format, &args.parts) {
        (DiffFormat::Markdown, Some(dir)) => {
            for path in super::diff_markdown::write_parts(report, dir)? {
                writeln!(stdout, "{}", path.display())?;
            }
        }
        (DiffFormat::Text, _) if args.quiet => stdout.write_all(totals_line(&report.found, report.reference).as_bytes())?,
        (DiffFormat::Text, _) => stdout.write_all(format!("{}{}", summary_text(report, colour), text(report, colour)).as_bytes())?,
        (DiffFormat::Markdown, None) => stdout.write_all(super::diff_markdown::markdown(report).as_bytes())?,
        (DiffFormat::Json, _) => stdout.write_all(json_report(report, commit).as_bytes())?,
    }
    Ok(())
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

/// The note for a branch that does not exist yet, naming the branches that do (a mistyped
/// `--ref` then shows at once).
fn missing_branch(repo: &git2::Repository, reference: &str, shown: &str) -> String {
    let mut branches: Vec<String> = repo
        .branches(Some(git2::BranchType::Local))
        .map(|branches| branches.flatten().filter_map(|(b, _)| b.name().ok().flatten().map(str::to_owned)).collect())
        .unwrap_or_default();
    branches.sort();
    let others = if branches.is_empty() { String::new() } else { format!(" (its branches: {})", branches.join(", ")) };
    format!("`{reference}` does not exist in `{shown}` yet{others}: compared with an empty tree (everything is added)")
}

/// Whether `name` can only mean a branch: a valid branch name, not a revision expression or a
/// commit id.
fn is_branch_name(name: &str) -> bool {
    let hex = name.len() >= 7 && name.bytes().all(|b| b.is_ascii_hexdigit());
    !hex && !name.contains(['^', '~', ':', '@', '{']) && git2::Branch::name_is_valid(name).unwrap_or(false)
}

/// The `tfrs.diff/v1` JSON document: per object its identity, change, sealed values, field
/// changes, what rolls, its risks and its causes.
fn json_report(report: &Report<'_>, commit: Option<git2::Oid>) -> String {
    let found = &report.found;
    let objects: Vec<serde_json::Value> = found
        .entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let mut object = serde_json::to_value(entry).unwrap_or_default();
            let roll = report.roll(index);
            let risks: Vec<&str> = report.risks(index).collect();
            if let Some(map) = object.as_object_mut() {
                map.insert("rolls".to_owned(), json!(roll));
                map.insert("risks".to_owned(), json!(risks));
                map.insert("causes".to_owned(), json!(report.causes.entries.get(index)));
            }
            object
        })
        .collect();
    let document = json!({
        "schema": "tfrs.diff/v1",
        "ref": report.reference,
        "commit": commit.map(|c| c.to_string()),
        "changed": !found.is_empty(),
        "totals": found.totals(),
        "tfrsVersion": report.version,
        "components": found.components().into_iter().map(|((cluster, component), counts)| json!({
            "cluster": cluster,
            "component": component,
            "added": counts.added,
            "changed": counts.changed,
            "removed": counts.removed,
            "secrets": counts.secrets,
        })).collect::<Vec<_>>(),
        "summary": report.review,
        "specChanges": report.causes.spec,
        "notes": report.notes,
        "objects": objects,
    });
    format!("{}\n", serde_json::to_string_pretty(&document).unwrap_or_default())
}

/// The review as text, before the listing.
fn summary_text(report: &Report<'_>, colour: Colour) -> String {
    let mut out = String::new();
    for line in summary_lines(report) {
        let painted = if line.starts_with("RISKY") { colour.paint("1;31", &line) } else { line };
        out.push_str(&painted);
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

fn sigil(change: Change) -> char {
    match change {
        Change::Added => '+',
        Change::Changed => '~',
        Change::Removed => '-',
    }
}

/// The last line of the text format alone (`--quiet`).
fn totals_line(found: &Diff, reference: &str) -> String {
    if found.is_empty() {
        return format!("no changes against `{reference}`\n");
    }
    format!("{} against `{reference}`\n", counts_text(&found.totals()))
}

/// Per component a header, then per object its line, risks, rolls, causes, sealed values and
/// indented unified diff.
fn text(report: &Report<'_>, colour: Colour) -> String {
    let (found, reference) = (&report.found, report.reference);
    let paint = |code: &str, text: &str| colour.paint(code, text);
    if found.is_empty() {
        return totals_line(found, reference);
    }
    let mut out = String::new();
    // NB: entries are sorted by cluster then component: each component's entries are the next
    // run of its count.
    let mut next = 0;
    for ((cluster, component), counts) in found.components() {
        out.push_str(&paint("1", &format!("{cluster} {component}: {}", counts_text(&counts))));
        out.push('\n');
        let run = found.entries[next..].iter().take_while(|e| e.cluster == cluster && e.component == component).count();
        let mut previous_causes: Vec<String> = Vec::new();
        for index in next..next + run {
            previous_causes = text_entry(report, index, &previous_causes, colour, &mut out);
        }
        next += run;
    }
    out.push_str(&totals_line(found, reference));
    out
}

/// One entry of the text format: its line, notes, sealed values and unified diff. The cause
/// said for the entry before (`previous`, in the same component) is not said again; returns
/// this entry's.
fn text_entry(report: &Report<'_>, index: usize, previous: &[String], colour: Colour, out: &mut String) -> Vec<String> {
    let paint = |code: &str, text: &str| colour.paint(code, text);
    let entry = &report.found.entries[index];
    let code = match entry.change {
        Change::Added => "32",
        Change::Changed => "33",
        Change::Removed => "31",
    };
    out.push_str(&paint(code, &format!("  {} {} {}", sigil(entry.change), entry.change, entry.title())));
    out.push('\n');
    let notes = report.notes(index);
    let causes: Vec<String> = notes.iter().filter(|n| n.starts_with("cause: ")).cloned().collect();
    let repeated = causes == previous;
    for line in notes.into_iter().filter(|n| !(repeated && n.starts_with("cause: "))).chain(sealed_lines(entry)) {
        out.push_str(&format!("      {line}\n"));
    }
    if shows_diff(entry) {
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
    causes
}
