//! The format checks of fields marked `x-tfrs-check` in their schema: what each accepts, as a
//! test, as a regular expression for exported schemas, and in words for messages.

use crate::spec::duration;

/// What a format check accepts, as a regular expression (for exported schemas) and in words,
/// and, for some, what to write instead of a value it refuses.
struct Format {
    name: &'static str,
    pattern: &'static str,
    expected: &'static str,
    test: fn(&str) -> bool,
    help: fn(&str) -> Option<String>,
}

fn no_help(_: &str) -> Option<String> {
    None
}

const FORMATS: &[Format] = &[
    Format {
        name: "dns-label",
        pattern: "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        expected: "a DNS-1123 label (lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters)",
        test: is_dns_label,
        help: no_help,
    },
    Format {
        name: "dns-subdomain",
        pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        expected: "a DNS-1123 subdomain (DNS labels joined by `.`, at most 253 characters)",
        test: is_dns_subdomain,
        help: no_help,
    },
    Format {
        name: "hostname",
        pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$",
        expected: "a DNS name such as `tfrs.example.com`",
        test: |s| s.is_empty() || is_dns_subdomain(s),
        help: no_help,
    },
    Format {
        name: "quantity",
        pattern: "^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$",
        expected: "a Kubernetes quantity such as `10Gi`, `512Mi` or `500m`",
        test: is_quantity,
        help: no_help,
    },
    Format {
        name: "duration",
        pattern: duration::GO_PATTERN,
        expected: "a Go duration such as `90s`, `5m`, `1h30m` or `1.5h` (numbers with the units `ms`, `s`, `m` or `h`)",
        test: |s| duration::parse(s).is_ok(),
        help: duration::help,
    },
    Format {
        name: "prometheus-duration",
        pattern: duration::PROMETHEUS_PATTERN,
        expected: "a Prometheus duration such as `15d`, `1w3d` or `12h` (whole numbers with the units `y`, `w`, `d`, `h`, `m`, `s`, `ms`, largest first, each at most once)",
        test: |s| duration::parse_prometheus(s).is_ok(),
        help: duration::help_prometheus,
    },
    Format {
        name: "env-name",
        pattern: "^[A-Za-z_][A-Za-z0-9_]*$",
        expected: "an environment variable name (letters, digits and `_`, not starting with a digit)",
        test: is_env_name,
        help: no_help,
    },
    Format {
        name: "relative-path",
        pattern: "^[^/].*$",
        expected: "a path relative to the spec file's directory",
        test: |s| !s.is_empty() && !s.starts_with('/'),
        help: no_help,
    },
    Format {
        name: "absolute-path",
        pattern: "^/.*$",
        expected: "an absolute path such as `/data/shared-cache`",
        test: |s| s.starts_with('/') && !s.contains(char::is_whitespace),
        help: no_help,
    },
    Format {
        name: "image",
        pattern: "^[a-z0-9][^\\s]*$",
        expected: "an image reference such as `ghcr.io/org/name:tag` (lowercase, no spaces)",
        test: is_image,
        help: no_help,
    },
    Format {
        name: "image-tag",
        pattern: "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$",
        expected: "an image tag (letters, digits, `_`, `.` and `-`, at most 128 characters)",
        test: is_image_tag,
        help: no_help,
    },
    Format {
        name: "version",
        pattern: "^v?[0-9]+(\\.[0-9]+)*([-+][0-9A-Za-z.-]+)?$",
        expected: "a version such as `1.24.2` or `v1.16.2`",
        test: is_version,
        help: no_help,
    },
    Format {
        name: "date",
        pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
        expected: "a date written `YYYY-MM-DD`",
        test: |s| s.is_empty() || is_date(s),
        help: no_help,
    },
];

/// DNS-1123 label: lowercase alphanumerics and `-`, alphanumeric at both ends, 1 to 63 chars.
#[must_use]
pub fn is_dns_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn is_quantity(s: &str) -> bool {
    const SUFFIXES: [&str; 13] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E"];
    let number = SUFFIXES.iter().find_map(|suffix| s.strip_suffix(suffix)).unwrap_or(s);
    let (int, frac) = number.split_once('.').unwrap_or((number, "0"));
    !int.is_empty() && !frac.is_empty() && int.bytes().all(|b| b.is_ascii_digit()) && frac.bytes().all(|b| b.is_ascii_digit())
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_image(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && !s.contains(char::is_whitespace)
        && !s.contains("://")
}

fn is_image_tag(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn is_version(s: &str) -> bool {
    let core = s.strip_prefix('v').unwrap_or(s);
    let (core, suffix) = match core.find(['-', '+']) {
        Some(at) => (&core[..at], Some(&core[at + 1..])),
        None => (core, None),
    };
    !core.is_empty()
        && core.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        && suffix.is_none_or(|x| !x.is_empty() && x.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-')))
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let digits = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() != 3 || !digits(parts[0], 4) || !digits(parts[1], 2) || !digits(parts[2], 2) {
        return false;
    }
    let year: u32 = parts[0].parse().unwrap_or(0);
    let month: u32 = parts[1].parse().unwrap_or(0);
    let day: u32 = parts[2].parse().unwrap_or(0);
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => 0,
    };
    (1..=days).contains(&day)
}

/// Checks `value` against the named format; `Err` holds what was expected.
///
/// # Errors
///
/// When the value does not match, the description of what was expected.
pub fn check_format(format: &str, value: &str) -> Result<(), &'static str> {
    match FORMATS.iter().find(|f| f.name == format) {
        Some(f) if (f.test)(value) => Ok(()),
        Some(f) => Err(f.expected),
        None => Ok(()),
    }
}

/// What to write instead of `value`, which the named format refuses, when it can be told.
#[must_use]
pub fn format_help(format: &str, value: &str) -> Option<String> {
    FORMATS.iter().find(|f| f.name == format).and_then(|f| (f.help)(value))
}

/// The regular expression of the named format, for exported schemas.
pub(super) fn pattern(format: &str) -> Option<&'static str> {
    FORMATS.iter().find(|f| f.name == format).map(|f| f.pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_and_reject() {
        assert!(check_format("dns-label", "acme-1").is_ok());
        assert!(check_format("dns-label", "Acme").is_err());
        assert!(check_format("dns-label", &"a".repeat(64)).is_err());
        assert!(check_format("quantity", "10Gi").is_ok());
        assert!(check_format("quantity", "500m").is_ok());
        assert!(check_format("quantity", "10GB").is_err());
        assert!(check_format("duration", "1h30m").is_ok());
        assert!(check_format("duration", "1.5h").is_ok());
        assert!(check_format("duration", "15 days").is_err());
        assert!(check_format("duration", "1d").is_err(), "Go durations have no days");
        assert!(check_format("duration", "0").is_err(), "Flux's pattern refuses a bare 0");
        assert!(check_format("prometheus-duration", "15d").is_ok());
        assert!(check_format("prometheus-duration", "1w3d").is_ok());
        assert!(check_format("prometheus-duration", "1.5d").is_err(), "Prometheus reads whole numbers");
        assert!(check_format("prometheus-duration", "30m1h").is_err(), "Prometheus wants the largest unit first");
        assert_eq!(
            format_help("duration", "1d").as_deref(),
            Some("Flux and Helm read Go durations, which have no days, weeks or years: write `24h`")
        );
        assert_eq!(format_help("prometheus-duration", "15 days").as_deref(), Some("write `15d`"));
        assert!(check_format("env-name", "OPENAI_API_KEY").is_ok());
        assert!(check_format("env-name", "1BAD").is_err());
        assert!(check_format("version", "v1.16.2").is_ok());
        assert!(check_format("version", "0.5.0-dev7").is_ok());
        assert!(check_format("version", "latest").is_err());
        assert!(check_format("date", "2027-05-19").is_ok());
        assert!(check_format("date", "2027-13-19").is_err());
        assert!(check_format("date", "2099-02-30").is_err());
        assert!(check_format("date", "2028-02-29").is_ok() && check_format("date", "2027-02-29").is_err());
    }
}
