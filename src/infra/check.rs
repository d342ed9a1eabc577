//! `tfrs infra check`: the invariants between `.env.infra` and the manager's environment
//! files, over files already read (and decrypted). A finding names the variable and the file,
//! never a value.

use super::model::Environment;
use super::rules;
use super::variables::{INFRA_ORDER, MANAGER_ORDER, SHARED};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::collections::BTreeMap;
use zeroize::Zeroizing;

/// What a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The server's `.env.infra`.
    Infra,
    /// The manager's environment (`tfrsmanager_env.<env>.yml`).
    Manager,
}

/// A variable as read: its name, its value and the line it is on (0 when unknown, e.g. in a
/// decrypted file).
pub type Variable = (String, Zeroizing<String>, usize);

/// One file's variables.
pub struct EnvFile {
    /// The file's name as given.
    pub name: String,
    /// What it is.
    pub role: Role,
    /// Its variables, in file order.
    pub variables: Vec<Variable>,
}

impl std::fmt::Debug for EnvFile {
    // NB: never print values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvFile").field("name", &self.name).field("role", &self.role).finish_non_exhaustive()
    }
}

impl EnvFile {
    fn get(&self, name: &str) -> Option<(&str, usize)> {
        self.variables.iter().find(|(n, _, _)| n == name).map(|(_, v, line)| (v.as_str(), *line))
    }

    /// The role a file's variables suggest: manager variables make a manager file.
    #[must_use]
    pub fn guess_role(variables: &[Variable]) -> Role {
        let manager_only =
            ["INFISICAL_PROJECT_SLUG", "INFISICAL_PROJECT_ID", "INFISICAL_INTERNAL_URL", "SECRET_ENCRYPTION_KEY", "JWT_SECRET"];
        if variables.iter().any(|(n, _, _)| manager_only.contains(&n.as_str())) { Role::Manager } else { Role::Infra }
    }
}

/// A broken invariant: where and what, never a value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The file.
    pub file: String,
    /// The line of the variable, when known (0 otherwise).
    pub line: usize,
    /// The variable.
    pub variable: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}: {}", self.file, self.line, self.variable, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.variable, self.message)
        }
    }
}

/// Parses a dotenv file: `NAME=value` lines, `#` comments, optional `export `, values in
/// single or double quotes. Lines that are neither are returned as `Err(line numbers)`.
///
/// # Errors
///
/// The lines (1-based) that are not `NAME=value`.
pub fn parse_dotenv(text: &str) -> Result<Vec<Variable>, Vec<usize>> {
    let (mut out, mut bad) = (Vec::new(), Vec::new());
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let trimmed = trimmed.strip_prefix("export ").unwrap_or(trimmed);
        let Some((name, value)) = trimmed.split_once('=') else {
            bad.push(index + 1);
            continue;
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            bad.push(index + 1);
            continue;
        }
        let Some(value) = dotenv_value(value.trim()) else {
            bad.push(index + 1);
            continue;
        };
        out.push((name.to_owned(), Zeroizing::new(value.to_owned()), index + 1));
    }
    if bad.is_empty() { Ok(out) } else { Err(bad) }
}

/// A dotenv value as compose reads it: inside its quotes when quoted (what follows the closing
/// quote is ignored), else up to an inline ` #` comment. `None`: an unclosed quote.
fn dotenv_value(raw: &str) -> Option<&str> {
    match raw.chars().next() {
        Some(quote @ ('"' | '\'')) => raw[1..].find(quote).map(|end| &raw[1..=end]),
        _ => Some(raw.find(" #").or_else(|| raw.find("\t#")).map_or(raw, |at| raw[..at].trim_end())),
    }
}

/// Checks every file, and every pair of files, against the invariants.
#[must_use]
pub fn check(files: &[EnvFile]) -> Vec<Finding> {
    let mut out = Vec::new();
    for file in files {
        check_file(file, &mut out);
    }
    check_shared(files, &mut out);
    check_instances(files, &mut out);
    out
}

fn finding(out: &mut Vec<Finding>, file: &EnvFile, variable: &str, message: impl Into<String>) {
    let line = file.get(variable).map_or(0, |(_, line)| line);
    out.push(Finding { file: file.name.clone(), line, variable: variable.to_owned(), message: message.into() });
}

fn check_file(file: &EnvFile, out: &mut Vec<Finding>) {
    let required = match file.role {
        Role::Infra => INFRA_ORDER,
        Role::Manager => MANAGER_ORDER,
    };
    for name in required {
        match file.get(name) {
            None => finding(out, file, name, "missing"),
            Some(("", _)) => finding(out, file, name, "empty"),
            Some(_) => {}
        }
    }
    let mut seen = BTreeMap::new();
    for (name, _, line) in &file.variables {
        if let Some(first) = seen.insert(name.as_str(), *line) {
            out.push(Finding {
                file: file.name.clone(),
                line: *line,
                variable: name.clone(),
                message: format!("set twice (first on line {first}): which one a reader takes differs between tools"),
            });
        }
    }
    check_formats(file, out);
    check_project(file, out);
}

/// Credentials that go into connection URLs (`postgres://user:password@…`, `redis://:password@…`)
/// or unquoted shell and dotenv lines: `@ / : % + =` or spaces there break the connection, which
/// is why generated ones are alphanumeric.
const URL_SAFE: [&str; 8] = [
    "DB_USER",
    "DB_PASSWORD",
    "REDIS_PASSWORD",
    "OTLP_TS_USER",
    "OTLP_TS_PASSWORD",
    "INFISICAL_PG_PASSWORD",
    "INFISICAL_REDIS_PASSWORD",
    "DB_NAME",
];

/// The length and alphabet rules of the keys.
fn check_formats(file: &EnvFile, out: &mut Vec<Finding>) {
    if let Some((value, _)) = file.get("SECRET_ENCRYPTION_KEY") {
        // NB: the manager uses the key's bytes as an AES-256 key: 32 bytes, so 32 ASCII
        // characters (a non-ASCII character is several bytes).
        let (count, bytes) = (value.chars().count(), value.len());
        if bytes != 32 || !value.is_ascii() {
            let found =
                if value.is_ascii() { format!("{count} characters") } else { format!("{count} characters, {bytes} bytes (not all ASCII)") };
            finding(
                out,
                file,
                "SECRET_ENCRYPTION_KEY",
                format!("has {found}; it must be exactly 32 ASCII characters (used as raw bytes, not hex-decoded)"),
            );
        }
    }
    for name in URL_SAFE {
        if let Some((value, _)) = file.get(name)
            && !value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
        {
            finding(
                out,
                file,
                name,
                "has characters a connection URL or an unquoted line cannot carry (only letters, digits, `_`, `-` and `.`; re-render or remove `@ / : % + =` and spaces)",
            );
        }
    }
    if let Some((value, _)) = file.get("INFISICAL_ENCRYPTION_KEY") {
        let hex = value.bytes().all(|b| b.is_ascii_hexdigit());
        if value.len() != 32 || !hex {
            let found =
                if hex { format!("{} hex characters", value.len()) } else { format!("{} characters, not all hex", value.chars().count()) };
            finding(
                out,
                file,
                "INFISICAL_ENCRYPTION_KEY",
                format!("must be 16 bytes as hex (32 hex characters, `openssl rand -hex 16`); found {found}"),
            );
        }
    }
    if let Some((value, _)) = file.get("INFISICAL_AUTH_SECRET")
        && STANDARD.decode(value).map_or(true, |bytes| bytes.len() != 32)
    {
        finding(out, file, "INFISICAL_AUTH_SECRET", "must be 32 bytes as base64 (`openssl rand -base64 32`)");
    }
}

/// Invariant A (the slug, never the id) and the environment slug.
fn check_project(file: &EnvFile, out: &mut Vec<Finding>) {
    if let Some((slug, _)) = file.get("INFISICAL_PROJECT_SLUG") {
        if rules::looks_like_project_id(slug) {
            finding(
                out,
                file,
                "INFISICAL_PROJECT_SLUG",
                "holds a project id where the slug belongs: billing finds the project by its slug",
            );
        } else if file.get("INFISICAL_PROJECT_ID").is_some_and(|(id, _)| id == slug) {
            finding(out, file, "INFISICAL_PROJECT_SLUG", "is the same text as `INFISICAL_PROJECT_ID`: one was copied into the other");
        } else if !slug.is_empty() && !rules::is_slug(slug) {
            finding(out, file, "INFISICAL_PROJECT_SLUG", "is not a project slug (lowercase letters, digits and `-`)");
        }
    }
    if let Some((environment, _)) = file.get("INFISICAL_ENVIRONMENT")
        && !environment.is_empty()
        && rules::environment_slug(environment).is_none()
    {
        finding(out, file, "INFISICAL_ENVIRONMENT", "is not an environment slug (`staging`, `beta`, `prod`): a display name is not a slug");
    }
}

/// The shared passwords: equal in every file that holds them.
fn check_shared(files: &[EnvFile], out: &mut Vec<Finding>) {
    for name in SHARED {
        let holders: Vec<(&EnvFile, &str)> = files.iter().filter_map(|f| f.get(name).map(|(v, _)| (f, v))).collect();
        let Some((first, value)) = holders.first() else { continue };
        for (other, other_value) in &holders[1..] {
            if other_value != value {
                let consequence = if *name == "OTLP_TS_PASSWORD" {
                    ": the user service stops at start (the billing record cannot be written)"
                } else {
                    ": the manager cannot log in"
                };
                finding(out, other, name, format!("differs from `{}`{consequence}", first.name));
            }
        }
    }
}

/// Invariant B: the Infisical URLs and the environment slug name one instance.
fn check_instances(files: &[EnvFile], out: &mut Vec<Finding>) {
    let slug: Option<(&EnvFile, Environment)> =
        files.iter().find_map(|f| f.get("INFISICAL_ENVIRONMENT").and_then(|(v, _)| rules::environment_slug(v)).map(|e| (f, e)));
    for file in files {
        for variable in ["INFISICAL_INTERNAL_URL", "INFISICAL_SITE_URL"] {
            let Some((url, _)) = file.get(variable) else { continue };
            if url.is_empty() {
                continue;
            }
            let Some(instance) = rules::instance_of(url) else {
                finding(out, file, variable, "is not an `https://` URL with a host");
                continue;
            };
            if let Some((slug_file, environment)) = slug
                && instance != environment
            {
                let from = if std::ptr::eq(slug_file, file) { String::new() } else { format!(" (in `{}`)", slug_file.name) };
                finding(
                    out,
                    file,
                    variable,
                    format!(
                        "names the {} instance but `INFISICAL_ENVIRONMENT`{from} is the {} environment: each environment has its own Infisical",
                        instance.as_str(),
                        environment.as_str()
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, role: Role, text: &str) -> EnvFile {
        EnvFile { name: name.to_owned(), role, variables: parse_dotenv(text).unwrap() }
    }

    const INFRA: &str = "DB_USER=tfrs\nDB_PASSWORD=a1\nDB_NAME=tfrs_manager\nREDIS_PASSWORD=r1\nOTLP_TS_USER=tfrs\nOTLP_TS_PASSWORD=o1\nOTLP_TS_DBNAME=tfrs_billing\nINFISICAL_ENCRYPTION_KEY=00112233445566778899aabbccddeeff\nINFISICAL_AUTH_SECRET=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\nINFISICAL_SITE_URL=https://secret-staging.example.com\nINFISICAL_PG_PASSWORD=p\nINFISICAL_REDIS_PASSWORD=q\n";
    const MANAGER: &str = "DB_PASSWORD=a1\nREDIS_PASSWORD=r1\nOTLP_TS_PASSWORD=o1\nJWT_SECRET=j\nSECRET_ENCRYPTION_KEY=0123456789abcdef0123456789abcdef\nINFISICAL_PROJECT_ID=6f1c7f4e-8a2b-4c3d-9e0f-112233445566\nINFISICAL_PROJECT_SLUG=tfrs-staging\nINFISICAL_ENVIRONMENT=staging\nINFISICAL_INTERNAL_URL=https://secret-staging.example.com\n";

    #[test]
    fn consistent_files_pass() {
        let found = check(&[file(".env.infra", Role::Infra, INFRA), file("m.yml", Role::Manager, MANAGER)]);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn every_broken_invariant_is_named_without_its_value() {
        let manager = MANAGER
            .replace("OTLP_TS_PASSWORD=o1", "OTLP_TS_PASSWORD=o2secretvalue")
            .replace("SECRET_ENCRYPTION_KEY=0123456789abcdef0123456789abcdef", &format!("SECRET_ENCRYPTION_KEY={}", "ab".repeat(32)))
            .replace("INFISICAL_PROJECT_SLUG=tfrs-staging", "INFISICAL_PROJECT_SLUG=6f1c7f4e-8a2b-4c3d-9e0f-112233445566")
            .replace("secret-staging", "secret");
        let infra = INFRA.replace(
            "INFISICAL_ENCRYPTION_KEY=00112233445566778899aabbccddeeff",
            "INFISICAL_ENCRYPTION_KEY=zz112233445566778899aabbccddeeff",
        );
        let found = check(&[file(".env.infra", Role::Infra, &infra), file("m.yml", Role::Manager, &manager)]);
        let text: Vec<String> = found.iter().map(ToString::to_string).collect();
        for expected in [
            "m.yml:3: OTLP_TS_PASSWORD: differs from `.env.infra`",
            "m.yml:5: SECRET_ENCRYPTION_KEY: has 64 characters",
            "m.yml:7: INFISICAL_PROJECT_SLUG: holds a project id",
            "m.yml:9: INFISICAL_INTERNAL_URL: names the prod instance but `INFISICAL_ENVIRONMENT` is the staging environment",
            ".env.infra:8: INFISICAL_ENCRYPTION_KEY: must be 16 bytes as hex",
        ] {
            assert!(text.iter().any(|t| t.starts_with(expected)), "{expected}\n{text:#?}");
        }
        assert_eq!(found.len(), 5, "{text:#?}");
        for t in &text {
            assert!(!t.contains("o2secretvalue") && !t.contains("abab") && !t.contains("zz11"), "{t}");
        }
    }

    #[test]
    fn missing_duplicated_and_malformed() {
        assert_eq!(parse_dotenv("A=1\nnot a line\n# c\nexport B='2'\n").unwrap_err(), vec![2]);
        let parsed = parse_dotenv("export B='2'\nC=\"x=y # not a comment\" # a comment\nD=abc # a comment\nE=a#b\r\n").unwrap();
        let values: Vec<&str> = parsed.iter().map(|(_, v, _)| v.as_str()).collect();
        assert_eq!(values, ["2", "x=y # not a comment", "abc", "a#b"]);
        assert_eq!(parse_dotenv("A=\"unclosed\n").unwrap_err(), vec![1]);
        let found = check(&[file("m", Role::Manager, &format!("{MANAGER}DB_PASSWORD=a1\n").replace("JWT_SECRET=j\n", ""))]);
        let text: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(text.iter().any(|t| t == "m: JWT_SECRET: missing"), "{text:#?}");
        assert!(text.iter().any(|t| t.starts_with("m:9: DB_PASSWORD: set twice (first on line 1)")), "{text:#?}");
    }

    #[test]
    fn credentials_that_break_urls_and_keys_of_32_characters_but_not_32_bytes() {
        let manager = MANAGER
            .replace("DB_PASSWORD=a1", "DB_PASSWORD=ab@c/d:e%f")
            .replace("SECRET_ENCRYPTION_KEY=0123456789abcdef0123456789abcdef", &format!("SECRET_ENCRYPTION_KEY={}\u{e9}", "e".repeat(31)));
        let infra = INFRA.replace("DB_PASSWORD=a1", "DB_PASSWORD=ab@c/d:e%f");
        let found = check(&[file(".env.infra", Role::Infra, &infra), file("m.yml", Role::Manager, &manager)]);
        let text: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(text.iter().any(|t| t.starts_with("m.yml:1: DB_PASSWORD: has characters a connection URL")), "{text:#?}");
        assert!(text.iter().any(|t| t.starts_with(".env.infra:") && t.contains("DB_PASSWORD: has characters")), "{text:#?}");
        assert!(text.iter().any(|t| t.contains("SECRET_ENCRYPTION_KEY: has 32 characters, 33 bytes (not all ASCII)")), "{text:#?}");
        assert!(text.iter().all(|t| !t.contains("ab@c")), "{text:#?}");
    }
}
