//! The checks of a cluster's billing: what it requires when on, the forms of its Infisical
//! fields, and, with a clock the caller injects, the expiry of its client secret.

use crate::spec::diagnostic::Diagnostic;
use crate::spec::load::{Object, Spec};
use crate::spec::model::ClusterSpec;

pub(super) fn check_billing(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    let billing = &cluster.spec.billing;
    if billing.enabled {
        required_fields(cluster, out);
        field_forms(cluster, out);
    }
    if looks_like_uuid(&billing.infisical.project_slug) {
        out.push(
            cluster
                .error_at("spec.billing.infisical.projectSlug", "this is a project id, not a slug")
                .with_help("External Secrets looks the project up by its slug, e.g. `tfrs-prod`, not by its id"),
        );
    }
}

fn required_fields(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    let billing = &cluster.spec.billing;
    let required = [
        ("spec.billing.otlpEndpoint", billing.otlp_endpoint.is_empty()),
        ("spec.billing.infisical.url", billing.infisical.url.is_empty()),
        ("spec.billing.infisical.projectSlug", billing.infisical.project_slug.is_empty()),
        ("spec.billing.infisical.environment", billing.infisical.environment.is_empty()),
        ("spec.billing.infisical.clientId", billing.infisical.client_id.is_none()),
        ("spec.billing.infisical.clientSecret", billing.infisical.client_secret.is_none()),
        ("spec.billing.infisical.expiresAt", billing.infisical.expires_at.is_empty()),
    ];
    for (path, missing) in required {
        if missing {
            out.push(cluster.error_at(path, "required when `billing.enabled` is true"));
        }
    }
}

fn field_forms(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    let billing = &cluster.spec.billing;
    for (path, url) in [("spec.billing.otlpEndpoint", &billing.otlp_endpoint), ("spec.billing.infisical.url", &billing.infisical.url)] {
        if !url.is_empty() && !is_https_url(url) {
            out.push(
                cluster
                    .error_at(path, format!("expected an `https://` URL, found {url:?}"))
                    .with_help("billing tokens and machine-identity credentials travel on this connection: it must be TLS"),
            );
        }
    }
    let environment = &billing.infisical.environment;
    if !environment.is_empty() && !is_slug(environment) {
        out.push(
            cluster
                .error_at(
                    "spec.billing.infisical.environment",
                    format!("expected an environment slug such as `staging`, `prod` or `beta`, found {environment:?}"),
                )
                .with_help("Infisical matches the environment by its slug, not its display name (`Production` is `prod`)"),
        );
    }
    let project = &billing.infisical.project_slug;
    if !project.is_empty() && !looks_like_uuid(project) && !is_slug(project) {
        out.push(
            cluster
                .error_at("spec.billing.infisical.projectSlug", format!("expected a project slug such as `tfrs-prod`, found {project:?}"))
                .with_help("the slug is on the project's Settings page in Infisical"),
        );
    }
}

/// `https://` followed by a host and nothing that could break out of a URL.
fn is_https_url(url: &str) -> bool {
    url.strip_prefix("https://")
        .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/') && rest.bytes().all(|b| b.is_ascii_graphic()))
}

/// A lowercase slug: `a-z`, `0-9` and inner `-`.
fn is_slug(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// A project id rather than a slug: a UUID (with or without dashes) or a 24-digit hex object id.
fn looks_like_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let dashed = parts.len() == 5
        && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(len, part)| part.len() == *len && part.bytes().all(|b| b.is_ascii_hexdigit()));
    let bare = matches!(s.len(), 24 | 32) && s.bytes().all(|b| b.is_ascii_hexdigit());
    dashed || bare
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (validated by the schema).
fn days_from_date(date: &str) -> Option<i64> {
    let mut parts = date.split('-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (parts.next()??, parts.next()??, parts.next()??);
    // Howard Hinnant's days_from_civil.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// Checks that depend on the date (`now` is injected by the caller, never read here): a billing
/// client secret past `expiresAt` is an error, one expiring within 30 days a warning.
#[must_use]
pub fn clock_checks(spec: &Spec, now_unix_seconds: i64) -> Vec<Diagnostic> {
    let today = now_unix_seconds.div_euclid(86_400);
    let mut out = Vec::new();
    for cluster in &spec.clusters {
        let billing = &cluster.spec.billing;
        let Some(expires) = days_from_date(&billing.infisical.expires_at) else { continue };
        if !billing.enabled {
            continue;
        }
        let field = "spec.billing.infisical.expiresAt";
        let left = expires - today;
        if left < 0 {
            out.push(
                cluster
                    .error_at(field, format!("the ESO machine identity's client secret expired on {}", billing.infisical.expires_at))
                    .with_help("issue a new client secret for the read-only identity, then update `clientSecret` and `expiresAt`"),
            );
        } else if left <= 30 {
            out.push(
                cluster
                    .warning_at(
                        field,
                        format!(
                            "the ESO machine identity's client secret expires in {left} day{} ({})",
                            if left == 1 { "" } else { "s" },
                            billing.infisical.expires_at
                        ),
                    )
                    .with_help("rotate it before then, or billing stops reaching the central endpoint"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{days_from_date, is_https_url, is_slug};

    #[test]
    fn dates_count_days_from_the_epoch() {
        assert_eq!(days_from_date("1970-01-01"), Some(0));
        assert_eq!(days_from_date("2000-03-01"), Some(11_017));
        assert_eq!(days_from_date("2027-05-19"), Some(20_957));
    }

    #[test]
    fn slugs_and_urls() {
        assert!(is_slug("prod") && is_slug("tfrs-prod") && !is_slug("Production") && !is_slug("pro d") && !is_slug("-x"));
        assert!(
            is_https_url("https://secret.example.com")
                && !is_https_url("http://x")
                && !is_https_url("https://x y")
                && !is_https_url("https://")
        );
    }
}
