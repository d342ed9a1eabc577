//! Loading a `TFRInfra` spec: parse, check against its schema, then the rules a compose stack
//! and its Infisical instance must hold. Every problem is reported, each with its file, line,
//! column and field.

use super::model::{InfraDocument, InfraSpec, KIND};
use super::rules;
use super::variables::GENERATED;
use crate::spec::diagnostic::{Diagnostic, Rule, did_you_mean};
use crate::spec::load::locate;
use crate::spec::model::API_VERSION;
use crate::spec::schema::{self, ValidateOptions};
use crate::spec::yaml::{self, Node};
use serde_json::Value as Json;

/// A loaded spec: the document and its located tree (for warnings).
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The typed document.
    pub document: InfraDocument,
    /// The tree it was read from.
    pub tree: Node,
}

/// The JSON Schema of `TFRInfra` (`tfrs schema` style: checks as `x-tfrs-check`).
#[must_use]
pub fn schema() -> Json {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    generator.into_root_schema_for::<InfraDocument>().to_value()
}

/// Loads the one `TFRInfra` document of `text` (file index `file` in the caller's table).
///
/// # Errors
///
/// Every problem found: YAML syntax, not exactly one document, wrong `apiVersion` or `kind`,
/// schema errors (unknown fields, types, missing fields), and the stack's rules.
pub fn load(file: usize, text: &str) -> Result<Loaded, Vec<Diagnostic>> {
    let documents = yaml::parse(file, text).map_err(|errors| {
        errors.into_iter().map(|e| Diagnostic::error(Rule::Syntax, e.origin, "(document)", e.message)).collect::<Vec<_>>()
    })?;
    let mut out = Vec::new();
    let origin = crate::spec::yaml::Origin { file, line: 1, column: 1 };
    let mut document = match <[Node; 1]>::try_from(documents) {
        Ok([document]) => document,
        Err(documents) => {
            let message = format!("expected one `{KIND}` document, found {}", documents.len());
            return Err(vec![Diagnostic::error(Rule::Schema, origin, "(document)", message)]);
        }
    };
    header(&document, &mut out);
    schema::validate(&mut document, &schema(), "", ValidateOptions::default(), &mut out);
    if !out.is_empty() {
        return Err(out);
    }
    let typed: InfraDocument = serde_json::from_value(document.to_json()).map_err(|error| {
        // NB: the schema comes from the same types, so this means the two disagree: a bug.
        vec![Diagnostic::error(Rule::Schema, document.origin, "(document)", format!("internal error: schema and model disagree: {error}"))]
    })?;
    check(&typed.spec, &document, &mut out);
    if out.iter().any(Diagnostic::is_error) {
        return Err(out);
    }
    Ok(Loaded { document: typed, tree: document })
}

fn header(document: &Node, out: &mut Vec<Diagnostic>) {
    for (field, expected) in [("apiVersion", API_VERSION), ("kind", KIND)] {
        let found = document.get(field);
        if found.and_then(Node::as_str) != Some(expected) {
            let at = found.map_or(document.origin, |n| n.origin);
            let what = found.map_or_else(|| "nothing".to_owned(), Node::describe);
            out.push(Diagnostic::error(Rule::Schema, at, field, format!("expected `{expected}`, found {what}")));
        }
    }
}

/// The rules beyond the schema.
fn check(spec: &InfraSpec, tree: &Node, out: &mut Vec<Diagnostic>) {
    let mut error = |path: &str, message: String, help: Option<&str>| {
        let mut diagnostic = Diagnostic::error(Rule::Consistency, locate(tree, path), path, message);
        if let Some(help) = help {
            diagnostic = diagnostic.with_help(help);
        }
        out.push(diagnostic);
    };
    check_images(spec, &mut error);
    check_memory(spec, &mut error);
    check_ports_and_volumes(spec, &mut error);
    check_infisical(spec, &mut error);
    for (path, name) in [
        ("spec.postgres.user", &spec.postgres.user),
        ("spec.postgres.database", &spec.postgres.database),
        ("spec.timescaledb.user", &spec.timescaledb.user),
        ("spec.timescaledb.database", &spec.timescaledb.database),
    ] {
        if !rules::is_sql_name(name) {
            error(path, "expected a PostgreSQL name (`[a-z_][a-z0-9_]*`, at most 63 characters)".to_owned(), None);
        }
    }
    for (index, recipient) in spec.sops.age_recipients.iter().enumerate() {
        if <age::x25519::Recipient as std::str::FromStr>::from_str(recipient.trim()).is_err() {
            error(&format!("spec.sops.ageRecipients[{index}]"), "expected an age X25519 recipient (`age1…`)".to_owned(), None);
        }
    }
    if spec.sops.age_recipients.is_empty() {
        error(
            "spec.sops.ageRecipients",
            "expected at least one age recipient: the secret-bearing files are encrypted for them".to_owned(),
            None,
        );
    }
    let names: Vec<&str> = GENERATED.iter().map(|g| g.name).collect();
    for name in spec.rotation.keys() {
        if !names.contains(&name.as_str()) {
            let help = did_you_mean(name, names.iter().copied()).map(|n| format!("did you mean `{n}`?"));
            error(&format!("spec.rotation.{name}"), format!("`{name}` is not a generated variable"), help.as_deref());
        }
    }
}

type Report<'a> = dyn FnMut(&str, String, Option<&str>) + 'a;

fn check_images(spec: &InfraSpec, error: &mut Report<'_>) {
    for (path, image) in [
        ("spec.postgres.image", &spec.postgres.image),
        ("spec.redis.image", &spec.redis.image),
        ("spec.timescaledb.image", &spec.timescaledb.image),
        ("spec.infisical.image", &spec.infisical.image),
        ("spec.infisical.postgres.image", &spec.infisical.postgres.image),
        ("spec.infisical.redis.image", &spec.infisical.redis.image),
    ] {
        if let Err(expected) = rules::pinned_image(image) {
            error(path, format!("expected {expected}"), Some("leave the field out to use the pinned version tfrs was tested with"));
        }
    }
}

fn check_memory(spec: &InfraSpec, error: &mut Report<'_>) {
    for (path, limit) in [
        ("spec.postgres.memoryLimit", &spec.postgres.memory_limit),
        ("spec.redis.memoryLimit", &spec.redis.memory_limit),
        ("spec.timescaledb.memoryLimit", &spec.timescaledb.memory_limit),
        ("spec.infisical.memoryLimit", &spec.infisical.memory_limit),
        ("spec.infisical.postgres.memoryLimit", &spec.infisical.postgres.memory_limit),
        ("spec.infisical.redis.memoryLimit", &spec.infisical.redis.memory_limit),
    ] {
        match rules::memory_bytes(limit) {
            None => error(path, format!("expected a memory size such as `512m` or `2g`, found {limit:?}"), None),
            Some(bytes) if path == "spec.infisical.memoryLimit" && bytes < rules::INFISICAL_MIN_MEMORY => error(
                path,
                format!("Infisical needs a memory limit of at least 1536m (1.5g), found {limit:?}"),
                Some("below it the first start's database migration is killed for memory (exit 137) and leaves the migration lock held"),
            ),
            Some(_) => {}
        }
    }
}

fn check_ports_and_volumes(spec: &InfraSpec, error: &mut Report<'_>) {
    let ports = [
        ("spec.postgres.port", spec.postgres.port),
        ("spec.redis.port", spec.redis.port),
        ("spec.timescaledb.port", spec.timescaledb.port),
        ("spec.infisical.port", spec.infisical.port),
    ];
    for (index, (path, port)) in ports.iter().enumerate() {
        if *port == 0 {
            error(path, "expected a port from 1 to 65535, found 0".to_owned(), None);
        } else if let Some((other, _)) = ports[..index].iter().find(|(_, p)| p == port) {
            error(path, format!("port {port} is also `{other}`: each service needs its own host port"), None);
        }
    }
    let volumes = [
        ("spec.postgres.volume", &spec.postgres.volume),
        ("spec.redis.volume", &spec.redis.volume),
        ("spec.timescaledb.volume", &spec.timescaledb.volume),
        ("spec.timescaledb.walArchiveVolume", &spec.timescaledb.wal_archive_volume),
        ("spec.infisical.postgres.volume", &spec.infisical.postgres.volume),
        ("spec.infisical.redis.volume", &spec.infisical.redis.volume),
    ];
    for (index, (path, volume)) in volumes.iter().enumerate() {
        if !rules::is_volume_name(volume) {
            error(path, format!("expected a Docker volume name (`[A-Za-z0-9][A-Za-z0-9_.-]*`), found {volume:?}"), None);
        } else if let Some((other, _)) = volumes[..index].iter().find(|(_, v)| v == volume) {
            error(path, format!("volume `{volume}` is also `{other}`: two services would share one data directory"), None);
        }
    }
}

fn check_infisical(spec: &InfraSpec, error: &mut Report<'_>) {
    let infisical = &spec.infisical;
    let environment = spec.environment.as_str();
    match rules::instance_of(&infisical.url) {
        None => error("spec.infisical.url", "expected an `https://` URL with a host".to_owned(), None),
        Some(_) if !infisical.url.starts_with("https://") => {
            error("spec.infisical.url", "expected an `https://` URL: machine identities send their secrets to it".to_owned(), None);
        }
        Some(instance) if instance != spec.environment => error(
            "spec.infisical.url",
            format!("the URL's host names the {} instance, but this is the {environment} environment", instance.as_str()),
            Some("each environment runs its own Infisical; a non-prod host names its environment (`secret-staging.…`), prod's names none"),
        ),
        Some(_) => {}
    }
    if infisical.environment != environment {
        let display_name = infisical.environment.chars().any(|c| c.is_ascii_uppercase() || c == ' ');
        let help = if display_name {
            "the environment slug is lowercase (`staging`, `beta`, `prod`), not the display name"
        } else {
            "the instance of an environment holds the project's environment of the same slug"
        };
        error("spec.infisical.environment", format!("expected the environment slug `{environment}` (spec.environment)"), Some(help));
    }
    if rules::looks_like_project_id(&infisical.project_slug) {
        error(
            "spec.infisical.projectSlug",
            "this is a project id, not a slug: billing finds the project by its slug".to_owned(),
            Some("copy `Project slug` from the project's settings page; the id goes in `projectId`"),
        );
    } else if !rules::is_slug(&infisical.project_slug) {
        error("spec.infisical.projectSlug", "expected a project slug (lowercase letters, digits and `-`)".to_owned(), None);
    }
    if infisical.project_id.trim().is_empty() {
        error("spec.infisical.projectId", "expected the project id (project settings page), found an empty string".to_owned(), None);
    } else if infisical.project_id == infisical.project_slug {
        error(
            "spec.infisical.projectId",
            "the project id and slug are the same text: one of them was copied into the other".to_owned(),
            None,
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const SPEC: &str = "apiVersion: tfrs.turingfocus.cn/v1alpha1
kind: TFRInfra
metadata: {name: staging}
spec:
  environment: staging
  infisical:
    url: https://secret-staging.example.com
    projectId: 6f1c7f4e-8a2b-4c3d-9e0f-112233445566
    projectSlug: tfrs-staging
    environment: staging
  sops:
    ageRecipients: [age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p]
";

    pub(crate) fn spec() -> InfraSpec {
        load(0, SPEC).unwrap().document.spec
    }

    fn problems(text: &str) -> Vec<String> {
        load(0, text).unwrap_err().iter().map(|d| format!("{}:{}: {}: {}", d.origin.line, d.origin.column, d.path, d.message)).collect()
    }

    #[test]
    fn defaults_come_from_the_catalog() {
        let spec = spec();
        assert_eq!(spec.timescaledb.image, "timescale/timescaledb:2.17.2-pg16");
        assert_eq!(spec.postgres.image, "postgres:16.1");
        assert_eq!((spec.timescaledb.port, spec.timescaledb.volume.as_str()), (5433, "tfrs_tsdata"));
        assert_eq!(spec.timescaledb.wal_archive_volume, "tfrs_ts_wal_archive");
        assert!(spec.infisical.image.starts_with("infisical/infisical:v"));
    }

    #[test]
    fn every_problem_is_reported_with_its_place() {
        let text = SPEC
            .replace(
                "environment: staging\n  infisical",
                "environment: staging\n  redis: {port: 5433, image: \"redis:latest\"}\n  infisical",
            )
            .replace("https://secret-staging.example.com", "https://secret.example.com\n    memoryLimit: 1g")
            .replace("projectSlug: tfrs-staging", "projectSlug: 6f1c7f4e-8a2b-4c3d-9e0f-112233445566")
            .replace("    environment: staging\n  sops", "    environment: Staging\n  sops");
        let found = problems(&text);
        let expect = [
            "spec.redis.image: expected an image pinned to a release",
            "spec.infisical.memoryLimit: Infisical needs a memory limit of at least 1536m",
            "spec.timescaledb.port: port 5433 is also `spec.redis.port`",
            "spec.infisical.url: the URL's host names the prod instance, but this is the staging environment",
            "spec.infisical.environment: expected the environment slug `staging`",
            "spec.infisical.projectSlug: this is a project id, not a slug",
        ];
        for expected in expect {
            assert!(found.iter().any(|f| f.contains(expected)), "{expected}\n{found:#?}");
        }
        assert!(found.iter().any(|f| f.starts_with("6:") && f.contains("spec.redis.image")), "{found:#?}");
    }

    #[test]
    fn schema_errors_come_all_at_once() {
        let text = SPEC
            .replace("environment: staging\n  infisical", "environment: qa\n  postgress: {}\n  infisical")
            .replace("    projectId: 6f1c7f4e-8a2b-4c3d-9e0f-112233445566\n", "");
        let found = problems(&text);
        assert!(found.iter().any(|f| f.contains("spec.environment")), "{found:#?}");
        assert!(found.iter().any(|f| f.contains("postgress")), "{found:#?}");
        assert!(found.iter().any(|f| f.contains("projectId")), "{found:#?}");
        let found = problems(&SPEC.replace("TFRInfra", "TFRCluster"));
        assert!(found.iter().any(|f| f.contains("kind: expected `TFRInfra`")), "{found:#?}");
    }
}
