//! How long a component may take ([`default_timeout`], [`component_timeouts`]), and the
//! duration syntax of `--timeout` and `--poll-interval` ([`parse_duration`], [`format_duration`]).

use super::rollout::Rollout;
use super::{Error, Options, Result};
use crate::object::ObjectId;
use serde_json::Value;
use std::time::Duration;

/// The default timeout of a component: the longest of its objects' defaults. A Flux
/// HelmRelease gets its own `spec.timeout`, else 5 minutes (the operator release's default timeout); a Job
/// its `activeDeadlineSeconds`, else 10 minutes; operator-managed data services (CNPG, MinIO,
/// RabbitMQ) 10 minutes; everything else 5 minutes.
///
/// # Errors
///
/// A `spec.timeout` that is not a duration of the spec grammar ([`crate::spec::duration::parse`],
/// what Flux's CRD accepts) or an `activeDeadlineSeconds` that is not a positive integer:
/// `(object, field, value, problem)`. It is never replaced by a default.
pub fn default_timeout(objects: &[Value]) -> std::result::Result<Duration, (String, &'static str, String, String)> {
    const FIVE_MINUTES: Duration = Duration::from_secs(300);
    const TEN_MINUTES: Duration = Duration::from_secs(600);
    let mut longest = FIVE_MINUTES;
    for object in objects {
        let reference = ObjectId::of(object);
        let bad = |field, value: &Value, problem: String| (reference.to_string(), field, value.to_string(), problem);
        let timeout = match (reference.group(), reference.kind.as_str()) {
            ("helm.toolkit.fluxcd.io", "HelmRelease") => match object.pointer("/spec/timeout") {
                None | Some(Value::Null) => FIVE_MINUTES,
                Some(Value::String(text)) => crate::spec::duration::parse(text).map_err(|error| {
                    let better = crate::spec::duration::suggest(text).map(|b| format!("; write `{b}`")).unwrap_or_default();
                    bad("spec.timeout", &Value::from(text.as_str()), format!("which is not a duration: {error}{better}"))
                })?,
                Some(other) => return Err(bad("spec.timeout", other, "which is not a duration such as `5m`".to_owned())),
            },
            ("batch", "Job") => match object.pointer("/spec/activeDeadlineSeconds") {
                None | Some(Value::Null) => TEN_MINUTES,
                Some(value) => match value.as_u64() {
                    Some(seconds) if seconds > 0 => Duration::from_secs(seconds),
                    _ => return Err(bad("spec.activeDeadlineSeconds", value, "which is not a positive number of seconds".to_owned())),
                },
            },
            ("postgresql.cnpg.io", "Cluster") | ("minio.min.io", "Tenant") | ("rabbitmq.com", "RabbitmqCluster") => TEN_MINUTES,
            _ => FIVE_MINUTES,
        };
        longest = longest.max(timeout);
    }
    Ok(longest)
}

/// The timeout of every component of `rollout`: `--timeout`, else its [`default_timeout`].
///
/// # Errors
///
/// [`Error::Timeout`] for the first object whose own timeout cannot be read, even under
/// `--timeout` (the object is broken either way: Flux's CRD refuses such a `spec.timeout`).
pub fn component_timeouts(rollout: &Rollout, options: &Options) -> Result<Vec<Duration>> {
    rollout
        .plan
        .components
        .iter()
        .enumerate()
        .map(|(index, component)| {
            let objects = rollout.objects.get(index).map_or(&[][..], Vec::as_slice);
            let own = default_timeout(objects).map_err(|(object, field, value, problem)| Error::Timeout {
                component: component.id.clone(),
                object,
                field,
                value,
                problem,
            })?;
            Ok(options.timeout.unwrap_or(own))
        })
        .collect()
}

/// Parses a duration given on the command line: the spec grammar
/// ([`crate::spec::duration::parse`]: `90s`, `5m`, `1h30m`, `1.5h`, `250ms`), and `0`.
///
/// # Errors
///
/// A message naming what is wrong, and what to write instead when it can tell (`1d`: `24h`).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    crate::spec::duration::parse(text).map_err(|error| {
        let better = crate::spec::duration::suggest(text).map(|b| format!("; write `{b}`")).unwrap_or_default();
        format!("`{text}`: {error}{better}")
    })
}

/// Formats a duration the way [`parse_duration`] reads it (`1m30s`, `250ms`).
#[must_use]
pub fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let seconds = duration.as_secs();
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut text = String::new();
    if hours > 0 {
        text.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        text.push_str(&format!("{minutes}m"));
    }
    if seconds > 0 || text.is_empty() {
        if hours == 0 && minutes == 0 && !millis.is_multiple_of(1000) {
            text.push_str(&format!("{:.1}s", duration.as_secs_f64()));
        } else {
            text.push_str(&format!("{seconds}s"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("5").expect_err("no unit").contains("a unit is required"));
        assert_eq!(parse_duration("5d"), Err("`5d`: unknown unit `d` (expected `ms`, `s`, `m` or `h`); write `120h`".to_owned()));
        assert!(parse_duration("").is_err());
        // The spec grammar, as Flux's CRD has it: no leading `.`, no sign, no `µs`.
        assert!(parse_duration(".5s").is_err() && parse_duration("-5m").is_err() && parse_duration("5µs").is_err());
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(format_duration(Duration::from_secs(300)), "5m");
    }

    #[test]
    fn default_timeouts_per_kind() {
        let release = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "tfrs-operator"}});
        assert_eq!(default_timeout(std::slice::from_ref(&release)), Ok(Duration::from_secs(300)));
        let mut slow = release;
        slow["spec"] = json!({"timeout": "15m"});
        assert_eq!(default_timeout(&[slow]), Ok(Duration::from_secs(900)));
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "init"}});
        let map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(default_timeout(&[map.clone(), job]), Ok(Duration::from_secs(600)));
        assert_eq!(default_timeout(&[map]), Ok(Duration::from_secs(300)));
    }

    #[test]
    fn unreadable_timeouts_are_errors_not_defaults() {
        let release = |timeout: Value| json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "op", "namespace": "flux-system"}, "spec": {"timeout": timeout}});
        let (object, field, value, problem) = default_timeout(&[release(json!("1d"))]).expect_err("days are not a Go duration");
        assert_eq!((object.as_str(), field, value.as_str()), ("HelmRelease/flux-system/op", "spec.timeout", "\"1d\""));
        assert_eq!(problem, "which is not a duration: unknown unit `d` (expected `ms`, `s`, `m` or `h`); write `24h`");
        assert!(default_timeout(&[release(json!("5 minutes"))]).is_err());
        assert!(default_timeout(&[release(json!("0"))]).is_err(), "Flux refuses a bare 0");
        assert!(default_timeout(&[release(json!(300))]).is_err());
        assert_eq!(default_timeout(&[release(json!("1.5h"))]), Ok(Duration::from_secs(5400)));
        let job = |deadline: Value| json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "init", "namespace": "ns"}, "spec": {"activeDeadlineSeconds": deadline}});
        assert_eq!(default_timeout(&[job(json!(900))]), Ok(Duration::from_secs(900)));
        assert!(default_timeout(&[job(json!("900"))]).is_err());
        assert!(default_timeout(&[job(json!(0))]).is_err());
    }
}
