//! The Infisical bootstrap of an environment as a plan: the folders, the two machine
//! identities with their privileges, and the secrets each folder must hold, by name. No value
//! appears in it: values are created in Infisical (client secrets) or come from elsewhere.

use super::model::InfraSpec;
use super::variables::MANAGER_FROM_BOOTSTRAP;
use serde_json::{Value as Json, json};
use std::fmt::Write as _;

/// A folder: its path, what it holds, and the secrets it must hold (`name`, `who writes it`).
type Folder = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

/// The folders the manager expects.
const FOLDERS: &[Folder] = &[
    (
        "/kubeconfig",
        "the kubeconfig of each managed cluster (written by the manager when it takes a cluster over; without the folder that upload fails with HTTP 500)",
        &[],
    ),
    (
        "/registry",
        "the image registry credentials every cluster's pull Secret is made from",
        &[("CNB_REGISTRY_USERNAME", "by hand: the registry user"), ("CNB_REGISTRY_PASSWORD", "by hand: a registry access token")],
    ),
    (
        "/otlp",
        "one sub-folder per cluster, `/otlp/<cluster id>/`, with its billing token (written by the manager)",
        &[("<cluster id>/PRIMARY_TOKEN", "the manager, when it takes a billing cluster over")],
    ),
    (
        "/otlp-eso-auth",
        "the read-only billing identity's credentials, handed to each billing cluster's External Secrets",
        &[
            ("CLIENT_ID", "by hand: the client id of the read-only identity"),
            ("CLIENT_SECRET", "by hand: its client secret (shown once)"),
            ("EXPIRES_AT", "by hand: the client secret's expiry date, `YYYY-MM-DD`"),
        ],
    ),
];

/// The plan as JSON.
#[must_use]
pub fn to_json(spec: &InfraSpec) -> Json {
    let environment = spec.environment.as_str();
    let infisical = &spec.infisical;
    let folders: Vec<Json> = FOLDERS
        .iter()
        .map(|(path, purpose, secrets)| {
            let secrets: Vec<Json> = secrets.iter().map(|(name, source)| json!({ "name": name, "source": source })).collect();
            json!({ "path": path, "purpose": purpose, "secrets": secrets })
        })
        .collect();
    json!({
        "environment": environment,
        "instance": infisical.url,
        "project": { "id": infisical.project_id, "slug": infisical.project_slug },
        "environmentSlug": infisical.environment,
        "before": [
            "create the administrator account",
            "server console, General: Allow user signups = Disabled",
            format!("create the project `{}` (its slug is the one billing uses)", infisical.project_slug),
        ],
        "folders": folders,
        "identities": [
            {
                "name": format!("cvm-{environment}-tfrs-manager"),
                "purpose": "the manager: reads and writes every folder",
                "organizationRole": "Member",
                "authentication": "Universal Auth (one client secret)",
                "projectRole": "Admin",
                "additionalPrivileges": [],
                "credentialsGoTo": { "file": format!("tfrsmanager_env.{environment}.yml"), "variables": MANAGER_FROM_BOOTSTRAP },
            },
            {
                "name": format!("tfrs-otlp-eso-{environment}"),
                "purpose": "External Secrets in billing clusters: reads the billing tokens only",
                "organizationRole": "Member",
                "authentication": format!("Universal Auth (client secret `eso-{environment}-otlp-readonly`, TTL 31536000 s)"),
                "projectRole": "No Access",
                "additionalPrivileges": [{
                    "name": format!("otlp-readonly-{environment}"),
                    "duration": "Permanent",
                    "subject": "Secrets",
                    "effect": "Allow",
                    "actions": ["Read Value", "Describe Secret"],
                    "conditions": [
                        { "field": "Environment Slug", "operator": "Equal", "value": infisical.environment },
                        { "field": "Secret Path", "operator": "Glob Match", "value": "/otlp/**" },
                    ],
                }],
                "credentialsGoTo": { "folder": "/otlp-eso-auth", "secrets": ["CLIENT_ID", "CLIENT_SECRET", "EXPIRES_AT"] },
            },
        ],
    })
}

/// The plan as a markdown checklist.
#[must_use]
pub fn to_markdown(spec: &InfraSpec) -> String {
    let plan = to_json(spec);
    let text = |v: &Json| v.as_str().unwrap_or_default().to_owned();
    let mut out = String::new();
    let _ = writeln!(out, "# Infisical bootstrap: `{}`\n", text(&plan["environment"]));
    let _ = writeln!(
        out,
        "Instance `{}`, project `{}` (id `{}`), environment slug `{}`.",
        text(&plan["instance"]),
        text(&plan["project"]["slug"]),
        text(&plan["project"]["id"]),
        text(&plan["environmentSlug"])
    );
    let _ = writeln!(out, "Tick each step in that instance, in that project and environment. No value is written here.\n");
    out.push_str("## Instance and project\n\n");
    for step in plan["before"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "- [ ] {}", text(step));
    }
    out.push_str("\n## Folders (in the environment's tab; save changes after each)\n\n");
    for folder in plan["folders"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "- [ ] `{}`: {}", text(&folder["path"]), text(&folder["purpose"]));
        for secret in folder["secrets"].as_array().into_iter().flatten() {
            let _ = writeln!(out, "  - [ ] secret `{}` ({})", text(&secret["name"]), text(&secret["source"]));
        }
    }
    out.push_str("\n## Machine identities\n\n");
    for identity in plan["identities"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "- [ ] `{}`: {}", text(&identity["name"]), text(&identity["purpose"]));
        let _ = writeln!(out, "  - [ ] organization role {}; {}", text(&identity["organizationRole"]), text(&identity["authentication"]));
        let _ = writeln!(out, "  - [ ] added to the project with the role {}", text(&identity["projectRole"]));
        for privilege in identity["additionalPrivileges"].as_array().into_iter().flatten() {
            let actions: Vec<String> = privilege["actions"].as_array().into_iter().flatten().map(text).collect();
            let conditions: Vec<String> = privilege["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| format!("{} {} `{}`", text(&c["field"]), text(&c["operator"]), text(&c["value"])))
                .collect();
            let _ = writeln!(
                out,
                "  - [ ] additional privilege `{}` ({}): {} {} {} (nothing else), when {}",
                text(&privilege["name"]),
                text(&privilege["duration"]),
                text(&privilege["effect"]),
                text(&privilege["subject"]),
                actions.join(" + "),
                conditions.join(" and ")
            );
        }
        let goes = &identity["credentialsGoTo"];
        if let Some(file) = goes.get("file") {
            let names: Vec<String> = goes["variables"].as_array().into_iter().flatten().map(text).collect();
            let _ = writeln!(out, "  - [ ] its client id and secret go into `{}` as `{}`", text(file), names.join("`, `"));
        } else {
            let names: Vec<String> = goes["secrets"].as_array().into_iter().flatten().map(text).collect();
            let _ = writeln!(out, "  - [ ] its credentials go into `{}` as `{}`", text(&goes["folder"]), names.join("`, `"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::spec::tests::spec;

    #[test]
    fn the_plan_names_folders_identities_and_privileges() {
        let spec = spec();
        let markdown = to_markdown(&spec);
        for folder in ["`/kubeconfig`", "`/registry`", "`/otlp`", "`/otlp-eso-auth`"] {
            assert!(markdown.contains(&format!("- [ ] {folder}:")), "{folder}\n{markdown}");
        }
        assert!(markdown.contains("`cvm-staging-tfrs-manager`") && markdown.contains("role Admin"), "{markdown}");
        assert!(markdown.contains("`tfrs-otlp-eso-staging`") && markdown.contains("role No Access"), "{markdown}");
        assert!(markdown.contains("Allow Secrets Read Value + Describe Secret (nothing else), when Environment Slug Equal `staging` and Secret Path Glob Match `/otlp/**`"), "{markdown}");
        let json = to_json(&spec);
        assert_eq!(json["identities"][1]["additionalPrivileges"][0]["actions"], json!(["Read Value", "Describe Secret"]));
        assert_eq!(json["folders"].as_array().unwrap().len(), 4);
    }
}
