//! The rules both the spec validation and `tfrs infra check` hold values to: which Infisical
//! instance a URL names, what a project id looks like, memory sizes, variable formats.
//!
//! None of these functions puts a value into what it returns.

use super::model::Environment;

/// The smallest memory limit Infisical's first start survives: its database migration needs
/// about this much, and a kill during it leaves the migration lock behind.
pub const INFISICAL_MIN_MEMORY: u64 = 1536 * MIB;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// The host of an `https://` or `http://` URL (lowercase, without port, user or path).
#[must_use]
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?.to_ascii_lowercase();
    let valid =
        !host.is_empty() && host.split('.').all(|label| !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    valid.then_some(host)
}

/// Which environment's instance a URL names, from its host's first label: each environment
/// runs its own Infisical, a non-prod one under a host that names it (`secret-staging.…`,
/// `staging.secret.…`), prod under a host that names none (`secret.…`) or `prod`.
///
/// `None`: not a URL with a host.
#[must_use]
pub fn instance_of(url: &str) -> Option<Environment> {
    let host = url_host(url)?;
    let first = host.split('.').next().unwrap_or_default();
    let named: Vec<Environment> = first
        .split('-')
        .filter_map(|word| match word {
            "staging" | "stg" => Some(Environment::Staging),
            "beta" => Some(Environment::Beta),
            "prod" | "production" => Some(Environment::Prod),
            _ => None,
        })
        .collect();
    Some(named.first().copied().unwrap_or(Environment::Prod))
}

/// An environment slug as Infisical writes it (`staging`, `beta`, `prod`); display names
/// (`Staging`, `Production`) are not slugs.
#[must_use]
pub fn environment_slug(text: &str) -> Option<Environment> {
    Environment::ALL.into_iter().find(|e| e.as_str() == text)
}

/// A project slug: lowercase letters, digits and `-`, at most 64, not starting or ending with `-`.
#[must_use]
pub fn is_slug(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// A project id rather than a slug: a UUID (with or without dashes) or a 24-digit hex object id.
#[must_use]
pub fn looks_like_project_id(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let dashed = parts.len() == 5
        && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(len, part)| part.len() == *len && part.bytes().all(|b| b.is_ascii_hexdigit()));
    let bare = matches!(text.len(), 24 | 32) && text.bytes().all(|b| b.is_ascii_hexdigit());
    dashed || bare
}

/// A memory size as compose writes it: a number (decimals allowed) and a unit `k`, `m` or
/// `g` (either case, with an optional `b`, or `Ki`/`Mi`/`Gi`), powers of 1024. Bytes, or
/// `None` when it is not one.
#[must_use]
pub fn memory_bytes(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    let unit_at = lower.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = lower.split_at(unit_at);
    let scale = match unit {
        "k" | "kb" | "ki" => KIB,
        "m" | "mb" | "mi" => MIB,
        "g" | "gb" | "gi" => GIB,
        _ => return None,
    };
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') || number.matches('.').count() > 1 {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    // NB: sizes are far below 2^53 bytes, where f64 is exact for the whole numbers we produce.
    let bytes = (value * scale as f64).round();
    (1.0..1e15).contains(&bytes).then_some(bytes as u64)
}

/// A memory size in the form compose writes back: whole MiB (`1536m`), or whole GiB (`2g`).
#[must_use]
pub fn compose_memory(bytes: u64) -> String {
    if bytes.is_multiple_of(GIB) { format!("{}g", bytes / GIB) } else { format!("{}m", bytes.div_ceil(MIB)) }
}

/// An image reference pinned by tag (or digest): `repository:tag`, not `latest`. The reason
/// when it is not.
///
/// # Errors
///
/// What is wrong with the reference.
pub fn pinned_image(reference: &str) -> Result<(), &'static str> {
    if reference.chars().any(char::is_whitespace) {
        return Err("an image reference without spaces");
    }
    let (name, digest) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (reference, None),
    };
    if let Some(digest) = digest {
        // NB: a digest is `sha256:` and 64 hex digits; anything else never resolves.
        let hex = digest.strip_prefix("sha256:").unwrap_or_default();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
            return Err("a digest of the form `sha256:` and 64 lowercase hex digits");
        }
    }
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        None if digest.is_some() => Ok(()),
        None => Err("an image pinned by tag (`repository:tag`), found no tag"),
        Some((_, "")) => Err("an image pinned by tag (`repository:tag`), found an empty tag"),
        // NB: `latest` moves, and so do `latest-pg16`-style tags, unless a digest pins them.
        Some((_, tag)) if digest.is_none() && tag.split(['-', '_', '.']).any(|part| part == "latest") => {
            Err("an image pinned to a release, found a moving `latest` tag")
        }
        Some(_) => Ok(()),
    }
}

/// A Docker volume name: `[A-Za-z0-9][A-Za-z0-9_.-]*`.
#[must_use]
pub fn is_volume_name(text: &str) -> bool {
    let mut bytes = text.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphanumeric()) && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A PostgreSQL name we write unquoted: `[a-z_][a-z0-9_]*`, at most 63 bytes.
#[must_use]
pub fn is_sql_name(text: &str) -> bool {
    let mut bytes = text.bytes();
    text.len() <= 63
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_are_named_by_the_first_label() {
        assert_eq!(instance_of("https://secret.turingfocus.cn"), Some(Environment::Prod));
        assert_eq!(instance_of("https://secret-staging.turingfocus.cn/"), Some(Environment::Staging));
        assert_eq!(instance_of("https://secret-beta.example.com:8443/api"), Some(Environment::Beta));
        assert_eq!(instance_of("https://staging.secret.example.com"), Some(Environment::Staging));
        // Only the first label counts: a domain that happens to hold `beta` further on does not.
        assert_eq!(instance_of("https://secret.beta-corp.example.com"), Some(Environment::Prod));
        assert_eq!(instance_of("secret-staging.example.com"), None);
        assert_eq!(instance_of("https://"), None);
    }

    #[test]
    fn ids_and_slugs() {
        assert!(looks_like_project_id("6f1c7f4e-8a2b-4c3d-9e0f-112233445566"));
        assert!(looks_like_project_id("65a1b2c3d4e5f60718293a4b"));
        assert!(!looks_like_project_id("tfrs-staging"));
        assert!(is_slug("tfrs-staging") && !is_slug("Tfrs") && !is_slug("-a") && !is_slug(""));
        assert_eq!(environment_slug("staging"), Some(Environment::Staging));
        assert_eq!(environment_slug("Production"), None);
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(memory_bytes("1.5g"), Some(1536 * MIB));
        assert_eq!(memory_bytes("1536M"), Some(1536 * MIB));
        assert_eq!(memory_bytes("2Gi"), Some(2 * GIB));
        assert_eq!(memory_bytes("1g"), Some(GIB));
        for bad in ["", "g", "1.g", "1.5.5g", "12", "1t", "-1g", "0m"] {
            assert_eq!(memory_bytes(bad), None, "{bad}");
        }
        assert!(memory_bytes("1.4g").unwrap() < INFISICAL_MIN_MEMORY);
        assert_eq!(compose_memory(2 * GIB), "2g");
        assert_eq!(compose_memory(1536 * MIB), "1536m");
    }

    #[test]
    fn images_names_and_volumes() {
        assert!(pinned_image("postgres:16.1").is_ok());
        assert!(pinned_image("registry.example.com:5000/postgres:16.1").is_ok());
        assert!(pinned_image("registry.example.com:5000/postgres").is_err());
        assert!(pinned_image("infisical/infisical:latest").is_err());
        assert!(pinned_image("postgres").is_err());
        assert!(pinned_image("postgres@sha256:abc").is_err(), "not a digest");
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert!(pinned_image(&format!("postgres@{digest}")).is_ok());
        assert!(pinned_image(&format!("redis:7.4.2-alpine@{digest}")).is_ok());
        assert!(pinned_image("timescale/timescaledb:latest-pg16").is_err());
        assert!(pinned_image("timescale/timescaledb:2.17.2-pg16").is_ok());
        assert!(is_volume_name("tfrs_tsdata") && !is_volume_name("_x") && !is_volume_name("a b"));
        assert!(is_sql_name("tfrs_billing") && !is_sql_name("Tfrs") && !is_sql_name("1a") && !is_sql_name("a-b"));
    }
}
