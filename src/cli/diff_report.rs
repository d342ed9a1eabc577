//! What one `tfrs diff` reports, shared by its formats: the comparison, the review, the causes,
//! and the lines every format prints first.

use crate::tree::cause::{self, Causes};
use crate::tree::diff::{Change, Diff, Entry};
use crate::tree::review::Review;

/// Everything one diff reports.
pub(crate) struct Report<'a> {
    /// The ref compared with.
    pub reference: &'a str,
    /// The per-object comparison.
    pub found: Diff,
    /// Rolls, risks and sealed values.
    pub review: Review,
    /// Per entry, the spec objects behind it, and every spec object that changed.
    pub causes: Causes,
    /// `old -> new` when another tfrs rendered the base.
    pub version: Option<String>,
    /// What limits the causes (the base's specs unavailable, or dirty when rendered).
    pub notes: Vec<String>,
}

impl Report<'_> {
    /// The risks of entry `index`.
    pub(crate) fn risks(&self, index: usize) -> impl Iterator<Item = &str> {
        // NB: the review lists rolls and risks in entry order.
        let risks = &self.review.risks;
        let first = risks.partition_point(|r| r.entry < index);
        risks[first..].iter().take_while(move |r| r.entry == index).map(|r| r.reason.as_str())
    }

    /// Why entry `index` rolls, if it does.
    pub(crate) fn roll(&self, index: usize) -> Option<&[String]> {
        let rolls = &self.review.rolls;
        rolls.binary_search_by_key(&index, |r| r.entry).ok().map(|i| rolls[i].reasons.as_slice())
    }

    /// The risks, roll reasons and causes of entry `index`, one line each.
    pub(crate) fn notes(&self, index: usize) -> Vec<String> {
        let mut out: Vec<String> = self.risks(index).map(|r| format!("RISKY: {r}")).collect();
        if let Some(reasons) = self.roll(index) {
            out.push(format!("rolls: {}", reasons.join("; ")));
        }
        const SHOWN: usize = 5;
        let causes = self.causes.entries.get(index).map_or(&[][..], Vec::as_slice);
        out.extend(causes.iter().take(SHOWN).map(|c| format!("cause: {}", cause::line(c, self.version.as_deref()))));
        if causes.len() > SHOWN {
            out.push(format!("cause: and {} more spec objects", causes.len() - SHOWN));
        }
        out
    }
}

/// The review first: what is risky, what rolls and why, what happens to sealed values, which
/// spec objects changed.
pub(crate) fn summary_lines(report: &Report<'_>) -> Vec<String> {
    const SPEC_LINES: usize = 20;
    const ROLL_LINES: usize = 30;
    let review = &report.review;
    let mut lines = Vec::new();
    for risk in &review.risks {
        lines.push(format!("RISKY: {} {}: {}", risk.cluster, risk.object, risk.reason));
    }
    for roll in review.rolls.iter().take(ROLL_LINES) {
        lines.push(format!("rolls: {} {} ({})", roll.cluster, roll.object, roll.reasons.join("; ")));
    }
    if review.rolls.len() > ROLL_LINES {
        lines.push(format!("rolls: and {} more workloads", review.rolls.len() - ROLL_LINES));
    }
    for (verb, values) in &review.secrets {
        let shown: Vec<String> = values.iter().take(10).map(ToString::to_string).collect();
        let more = if values.len() > 10 { format!(" and {} more", values.len() - 10) } else { String::new() };
        lines.push(format!("secrets {verb}: {}{more}", shown.join(", ")));
    }
    let changed = &report.causes.spec;
    for object in changed.iter().take(SPEC_LINES) {
        lines.push(format!("spec: {} {}", object.cluster, cause::line(object, None)));
    }
    if changed.len() > SPEC_LINES {
        lines.push(format!("spec: and {} more objects", changed.len() - SPEC_LINES));
    }
    if let Some(version) = &report.version {
        lines.push(format!("tfrs: {version}"));
    }
    lines.extend(report.notes.iter().map(|note| format!("note: {note}")));
    lines
}

/// Whether a report shows an entry's unified diff: not for a removed object (its one line says
/// all a reviewer needs; the old file is in Git), nor for the bookkeeping files every change
/// touches (`kustomization.yaml` resource lists, `plan.json`). The JSON format has them all.
pub(crate) fn shows_diff(entry: &Entry) -> bool {
    entry.change != Change::Removed && !is_bookkeeping(&entry.path)
}

/// A `kustomization.yaml` resource list or a cluster's `plan.json`.
pub(crate) fn is_bookkeeping(path: &str) -> bool {
    path.ends_with(&format!("/{}", crate::layout::KUSTOMIZATION)) || path.ends_with("/plan.json")
}

pub(crate) fn sealed_lines(entry: &Entry) -> Vec<String> {
    entry.sealed.iter().map(|s| format!("{}: <sealed: {}>", s.key, s.change)).collect()
}
