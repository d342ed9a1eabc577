//! What reconcile reports: progress [`Event`]s while it runs, and the [`Outcome`] at the end
//! (each component's [`ComponentResult`], with a [`Failure`] report for the failed ones).

use super::apply::Cause;
use super::format_duration;
use std::fmt;
use std::time::Duration;

/// What a progress event says about a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Started (applying or waiting).
    Running,
    /// Still waiting; [`Event::detail`] says for what.
    Waiting,
    /// Ready.
    Ready,
    /// Failed or timed out.
    Failed,
    /// Never started: a dependency failed.
    Skipped,
}

impl Status {
    /// The lowercase name used in `--progress json`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Waiting => "waiting",
            Status::Ready => "ready",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
        }
    }
}

/// One progress event.
#[derive(Debug, Clone)]
pub struct Event {
    /// The component's step number (1-based, in start order; skipped ones get the next free).
    pub step: usize,
    /// The number of components.
    pub total: usize,
    /// The component id.
    pub component: String,
    /// What happened.
    pub status: Status,
    /// Time since the component started.
    pub elapsed: Duration,
    /// A short detail (what is awaited, the change summary, the failure's first line).
    pub detail: String,
}

/// An object that was not ready when its component failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unready {
    /// `Kind/namespace/name`.
    pub object: String,
    /// Why it is not ready (the last readiness verdict).
    pub reason: String,
    /// Its last conditions, `Type=Status (Reason): message`.
    pub conditions: Vec<String>,
}

/// Why a component failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Not ready within the timeout.
    TimedOut(Duration),
    /// An object reported a terminal failure.
    Terminal,
    /// The API refused or failed a request for an object.
    Api {
        /// `Kind/namespace/name`.
        object: String,
        /// What the API said.
        cause: Cause,
    },
}

/// A failed component, fit for a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The component id.
    pub component: String,
    /// Why.
    pub reason: Reason,
    /// Objects that were not ready (terminal ones first).
    pub unready: Vec<Unready>,
}

impl Failure {
    /// Whether the API server could not be reached (exit 2 rather than 1).
    #[must_use]
    pub fn is_connection(&self) -> bool {
        matches!(&self.reason, Reason::Api { cause, .. } if cause.is_connection())
    }

    /// The first line of the report.
    #[must_use]
    pub fn headline(&self) -> String {
        let component = &self.component;
        match &self.reason {
            Reason::TimedOut(after) => format!(
                "component `{component}` timed out after {}: {} not ready",
                format_duration(*after),
                plural(self.unready.len(), "object")
            ),
            Reason::Terminal => format!("component `{component}` failed: {} failed", plural(self.unready.len(), "object")),
            Reason::Api { object, cause } => format!("component `{component}`: `{object}`: {cause}"),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.headline())?;
        for unready in &self.unready {
            write!(f, "\n  `{}`: {}", unready.object, unready.reason)?;
            for condition in &unready.conditions {
                write!(f, "\n    {condition}")?;
            }
        }
        Ok(())
    }
}

fn plural(count: usize, noun: &str) -> String {
    format!("{count} {noun}{}", if count == 1 { "" } else { "s" })
}

/// How one component ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComponentResult {
    /// Ready (or, in a dry run, accepted by the server).
    Ready {
        /// How long it took.
        elapsed: Duration,
        /// Objects created, configured and unchanged (zero when verifying).
        changes: [usize; 3],
    },
    /// Failed.
    Failed(Failure),
    /// Not started because a dependency failed.
    Skipped {
        /// The failed dependency.
        dependency: String,
    },
}

/// The result of [`reconcile`](super::reconcile).
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Each component's result, in plan order.
    pub components: Vec<(String, Option<ComponentResult>)>,
    /// Objects deleted by `--prune`, `Kind/namespace/name`.
    pub pruned: Vec<String>,
    /// Objects `--prune` could not delete, with why.
    pub prune_failures: Vec<String>,
    /// The wall time of the whole rollout.
    pub elapsed: Duration,
}

impl Outcome {
    /// Whether every component is ready and pruning (if asked) went through.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.prune_failures.is_empty() && self.components.iter().all(|(_, r)| matches!(r, Some(ComponentResult::Ready { .. })))
    }

    /// The failures, in plan order.
    #[must_use]
    pub fn failures(&self) -> Vec<&Failure> {
        self.components.iter().filter_map(|(_, r)| if let Some(ComponentResult::Failed(f)) = r { Some(f) } else { None }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_report_names_component_objects_and_conditions() {
        let failure = Failure {
            component: "cluster/cnpg-operator".into(),
            reason: Reason::TimedOut(Duration::from_secs(90)),
            unready: vec![Unready {
                object: "HelmRelease/flux-system/cnpg".into(),
                reason: "Ready=False (InstallFailed): timed out".into(),
                conditions: vec!["Ready=False (InstallFailed): timed out".into()],
            }],
        };
        assert_eq!(
            failure.to_string(),
            "component `cluster/cnpg-operator` timed out after 1m30s: 1 object not ready\n  `HelmRelease/flux-system/cnpg`: Ready=False (InstallFailed): timed out\n    Ready=False (InstallFailed): timed out"
        );
    }
}
