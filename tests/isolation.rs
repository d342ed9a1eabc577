//! The isolation model of personal namespaces (docs/render.md, "Isolation model"): every robot
//! of a personal namespace gets its own PostgreSQL role and schema and its own MinIO user,
//! never the database owner's credentials or the MinIO root key; every consumer of one of those
//! credentials gets the same value; enterprise robots keep the organisation's shared ones. The
//! rendered Secrets are opened with `tfrs unseal`. The db-init Job's script runs against a real
//! PostgreSQL server when one is installed (twice, and robot against robot), and the minio-init
//! Job's script against a stand-in `mc` that answers as the pinned client does.
//!
//! The two Job-script tests are the modules `postgres` and `minio` (`tests/isolation/`).

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

#[path = "isolation/minio.rs"]
mod minio;
#[path = "isolation/postgres.rs"]
mod postgres;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A rendered fixture: its output directory (kept alive with it) and the cluster's root in it.
struct Rendered {
    _dir: tempfile::TempDir,
    cluster: PathBuf,
}

impl Rendered {
    /// `tfrs render fixtures/<fixture>` with the demo master key and the fixtures' environment.
    fn new(fixture: &str, cluster: &str) -> Self {
        Self::from_spec(&common::root().join("fixtures").join(fixture), cluster)
    }

    fn from_spec(spec: &Path, cluster: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let output = render(spec, &out);
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        Rendered { cluster: out.join("clusters").join(cluster).join("components"), _dir: dir }
    }

    /// The one file of `dir` (below `components/`) whose name starts with `prefix`.
    fn file(&self, dir: &str, prefix: &str) -> PathBuf {
        let dir = self.cluster.join(dir);
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .collect();
        assert_eq!(found.len(), 1, "one `{prefix}*` in {}: {found:?}", dir.display());
        found.pop().unwrap()
    }

    /// Whether `path` (below `components/`) exists.
    fn has(&self, path: &str) -> bool {
        self.cluster.join(path).exists()
    }

    /// The first object of a rendered file (below `components/`), as JSON.
    fn object(&self, path: &str) -> Value {
        object(&self.cluster.join(path))
    }

    /// The plaintext data of a rendered SealedSecret (below `components/`).
    fn unseal(&self, path: &str) -> BTreeMap<String, String> {
        unseal(&self.cluster.join(path)).1
    }

    /// The `type` and data of a rendered SealedSecret (below `components/`).
    fn unseal_typed(&self, path: &str) -> (String, BTreeMap<String, String>) {
        unseal(&self.cluster.join(path))
    }

    /// A server's `config.toml`: its text and its table.
    fn confz(&self, namespace: &str, server: &str) -> (String, toml::Table) {
        let secret = self.unseal(&format!("namespaces/{namespace}/servers/{server}/config/sealedsecret-{server}-confz.yaml"));
        let text = secret["config.toml"].clone();
        let table = text.parse().unwrap();
        (text, table)
    }

    /// The namespace's database owner password and MinIO root user and password (when on).
    fn shared(&self, namespace: &str) -> Shared {
        let owner = self.unseal(&format!("namespaces/{namespace}/postgresql/sealedsecret-{namespace}-pg-credentials.yaml"));
        assert_eq!(owner["username"], "app_user");
        let minio = self.has(&format!("namespaces/{namespace}/minio")).then(|| {
            let env = self.unseal(&format!("namespaces/{namespace}/minio/sealedsecret-{namespace}-minio-env.yaml"));
            let value = |name: &str| -> String {
                let line = env["config.env"].lines().find(|l| l.starts_with(&format!("export {name}="))).unwrap().to_owned();
                line.split_once('=').unwrap().1.trim_matches('"').to_owned()
            };
            (value("MINIO_ROOT_USER"), value("MINIO_ROOT_PASSWORD"))
        });
        Shared { owner_password: owner["password"].clone(), minio }
    }
}

/// What every robot of a namespace shared before robots had credentials of their own.
struct Shared {
    owner_password: String,
    minio: Option<(String, String)>,
}

fn render(spec: &Path, out: &Path) -> Output {
    common::fixture_command().args(["render", "--no-memo", "--out"]).arg(out).arg(spec).output().unwrap()
}

fn object(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    tfrs_gitops::spec::yaml::parse(0, &text).unwrap()[0].to_json()
}

/// `tfrs unseal --private-key` of the demo key: the Secret's `type` and its data.
fn unseal(path: &Path) -> (String, BTreeMap<String, String>) {
    let output =
        common::tfrs_command().args(["unseal", "--private-key", "fixtures/demo/keys/sealed-secrets.key"]).arg(path).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}: {}", path.display(), common::report(&output));
    let secret = tfrs_gitops::spec::yaml::parse(0, &String::from_utf8(output.stdout).unwrap()).unwrap()[0].to_json();
    let data = secret["stringData"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect();
    (secret["type"].as_str().unwrap().to_owned(), data)
}

/// A value derived from the demo master key (a generated secret with default options).
fn derived(path: &str) -> String {
    let key = std::fs::read_to_string(common::root().join("fixtures/demo/keys/master.key")).unwrap();
    let master = tfrs_gitops::secrets::MasterKey::from_hex(key.trim()).unwrap();
    master.derive(path, &tfrs_gitops::spec::model::Generate::default()).to_string()
}

/// The personal robots of the fixtures: (fixture, cluster, namespace, servers, MinIO on).
const PERSONAL: &[(&str, &str, &str, [&str; 2], bool)] = &[
    ("demo", "demo", "personal-support", ["alice-bot", "bob-bot"], true),
    ("render-servers", "robots", "personal-research", ["carol-bot", "dave-bot"], false),
];

/// The (first container's) environment of a Job, by name.
fn job_env(job: &Value) -> BTreeMap<String, String> {
    job["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["value"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// The Secrets a Job mounts, by mount path.
fn job_mounts(job: &Value) -> BTreeMap<String, String> {
    let spec = &job["spec"]["template"]["spec"];
    let volumes: BTreeMap<&str, &str> = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["secret"]["secretName"].as_str().unwrap()))
        .collect();
    spec["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["mountPath"].as_str().unwrap().to_owned(), volumes[m["name"].as_str().unwrap()].to_owned()))
        .collect()
}

#[test]
fn personal_robots_hold_neither_the_owner_password_nor_the_minio_root_key() {
    for &(fixture, cluster, namespace, servers, minio) in PERSONAL {
        let tree = Rendered::new(fixture, cluster);
        let shared = tree.shared(namespace);
        assert_eq!(shared.minio.is_some(), minio, "{fixture}");
        for server in servers {
            let (text, confz) = tree.confz(namespace, server);
            assert!(!text.contains(&shared.owner_password), "{server}: config.toml holds app_user's password");
            assert!(!text.contains("app_user"), "{server}: config.toml names app_user:\n{text}");
            assert_ne!(confz["postgresql"]["user"].as_str(), Some("app_user"), "{server}");
            if let Some((root_user, root_password)) = &shared.minio {
                assert!(!text.contains(root_password.as_str()), "{server}: config.toml holds the MinIO root password");
                assert_ne!(confz["cos"]["access_key"].as_str(), Some(root_user.as_str()), "{server}");
            } else {
                assert!(!confz.contains_key("cos"), "{server}: MinIO is off");
            }
        }
    }
}

#[test]
fn robots_of_one_namespace_get_their_own_role_password_schema_and_minio_user() {
    for &(fixture, cluster, namespace, [first, second], minio) in PERSONAL {
        let tree = Rendered::new(fixture, cluster);
        let (_, a) = tree.confz(namespace, first);
        let (_, b) = tree.confz(namespace, second);
        for key in ["user", "password", "schema"] {
            let (x, y) = (a["postgresql"][key].as_str(), b["postgresql"][key].as_str());
            assert!(x.is_some() && y.is_some() && x != y, "{first} and {second}: postgresql.{key}: {x:?} and {y:?}");
        }
        assert_eq!(a["postgresql"]["user"].as_str(), Some(format!("robot_{}", first.replace('-', "_")).as_str()));
        assert_eq!(a["postgresql"]["dbname"].as_str(), Some(namespace), "one database, a schema each");
        if minio {
            for key in ["access_key", "secret_key", "bucket"] {
                let (x, y) = (a["cos"][key].as_str(), b["cos"][key].as_str());
                assert!(x.is_some() && y.is_some() && x != y, "{first} and {second}: cos.{key}: {x:?} and {y:?}");
            }
            assert_eq!(a["cos"]["access_key"].as_str(), Some(format!("robot-{first}").as_str()));
            assert_eq!(a["cos"]["port"].as_integer(), Some(80), "the operator's Service `minio`");
        }
        // The schema each robot's configuration names is the one its config.toml names.
        for (server, confz) in [(first, &a), (second, &b)] {
            let config = tree.object(&format!("namespaces/{namespace}/servers/{server}/config/configmap-{server}-config.yaml"));
            assert_eq!(config["data"]["TFS_ROBOT__DB_SCHEMA"].as_str(), confz["postgresql"]["schema"].as_str(), "{server}");
        }
    }
    // configData may name the schema (dave-bot's `dave_custom`).
    let tree = Rendered::new("render-servers", "robots");
    assert_eq!(tree.confz("personal-research", "dave-bot").1["postgresql"]["schema"].as_str(), Some("dave_custom"));
}

#[test]
fn the_database_cluster_manages_a_login_role_for_every_robot_of_the_namespace() {
    for &(fixture, cluster, namespace, servers, _) in PERSONAL {
        let tree = Rendered::new(fixture, cluster);
        let pg = tree.object(&format!("namespaces/{namespace}/postgresql/cluster-{namespace}-pg.yaml"));
        let roles = pg["spec"]["managed"]["roles"].as_array().unwrap_or_else(|| panic!("{fixture}: no managed roles: {pg}"));
        let names: Vec<&str> = roles.iter().map(|r| r["name"].as_str().unwrap()).collect();
        let expected: Vec<String> = servers.iter().map(|s| format!("robot_{}", s.replace('-', "_"))).collect();
        assert_eq!(names, expected, "{fixture}: one role per robot of the namespace");
        for (role, server) in roles.iter().zip(servers) {
            assert_eq!(role["ensure"], "present");
            assert_eq!(role["login"], true);
            for attribute in ["superuser", "createdb", "createrole", "replication", "bypassrls"] {
                assert_eq!(role[attribute], false, "{server}: {attribute}");
            }
            let secret_name = role["passwordSecret"]["name"].as_str().unwrap();
            assert_eq!(secret_name, format!("{server}-pg-role"));
            // The Secret is in the same component (CNPG reads it as soon as the Cluster runs),
            // in CNPG's format: basic-auth, `username` the role.
            let (kind, secret) = tree.unseal_typed(&format!("namespaces/{namespace}/postgresql/sealedsecret-{secret_name}.yaml"));
            assert_eq!(kind, "kubernetes.io/basic-auth");
            assert_eq!(secret["username"], role["name"].as_str().unwrap());
            assert_eq!(secret.keys().collect::<Vec<_>>(), ["password", "username"]);
        }
    }
}

#[test]
fn every_consumer_of_a_robot_credential_gets_the_same_value() {
    for &(fixture, cluster, namespace, servers, minio) in PERSONAL {
        let tree = Rendered::new(fixture, cluster);
        for server in servers {
            let (_, confz) = tree.confz(namespace, server);
            let role = tree.unseal(&format!("namespaces/{namespace}/postgresql/sealedsecret-{server}-pg-role.yaml"));
            let password = derived(&format!("cluster/{cluster}/namespace/{namespace}/servers/{server}/postgresql/password"));
            assert_eq!(role["password"], password, "{server}: the role Secret holds the derived password");
            assert_eq!(confz["postgresql"]["password"].as_str(), Some(password.as_str()), "{server}: config.toml");
            assert_eq!(confz["postgresql"]["user"].as_str(), Some(role["username"].as_str()), "{server}: config.toml");
            // The db-init Job reads the role's and the owner's Secrets, and nothing else.
            let job = object(&tree.file(&format!("namespaces/{namespace}/servers/{server}/db-init"), "job-"));
            let mut mounts: Vec<String> = job_mounts(&job).into_values().collect();
            mounts.sort();
            let mut expected = [format!("{namespace}-pg-credentials"), format!("{server}-pg-role")];
            expected.sort();
            assert_eq!(mounts, expected, "{server}");
            let env = job_env(&job);
            assert_eq!(env["TARGETS"], format!("{namespace}-pg-rw:{namespace}-pg-credentials:{server}-pg-role"));
            let schema = confz["postgresql"]["schema"].as_str().unwrap();
            assert!(env["SCHEMA_SQL"].contains(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\";")), "{}", env["SCHEMA_SQL"]);
            assert!(env["GRANT_SQL"].contains(&format!("TO \"{}\"", role["username"])), "{}", env["GRANT_SQL"]);
            if !minio {
                assert!(!tree.has(&format!("namespaces/{namespace}/servers/{server}/minio-init")));
                continue;
            }
            // The minio-init Job reads the robot's keys from its Secret: the ones config.toml has.
            let dir = format!("namespaces/{namespace}/servers/{server}/minio-init");
            let (kind, keys) = tree.unseal_typed(&format!("{dir}/sealedsecret-{server}-minio-user.yaml"));
            assert_eq!(kind, "kubernetes.io/basic-auth");
            let secret_key = derived(&format!("cluster/{cluster}/namespace/{namespace}/servers/{server}/minio/secretKey"));
            assert_eq!(keys["password"], secret_key, "{server}");
            assert_eq!(keys["username"], format!("robot-{server}"), "{server}");
            assert_eq!(confz["cos"]["access_key"].as_str(), Some(keys["username"].as_str()), "{server}");
            assert_eq!(confz["cos"]["secret_key"].as_str(), Some(keys["password"].as_str()), "{server}");
            let job = object(&tree.file(&dir, "job-"));
            let mounts = job_mounts(&job);
            assert_eq!(mounts["/robot"], format!("{server}-minio-user"), "{server}");
            assert_eq!(mounts["/credentials"], format!("{namespace}-minio-env"), "{server}: the root key stays with the Job");
            let env = job_env(&job);
            assert_eq!(env["POLICY_NAME"], keys["username"]);
            assert_eq!(env["BUCKET"], confz["cos"]["bucket"].as_str().unwrap());
            let annotations = &job["spec"]["template"]["metadata"]["annotations"];
            assert!(annotations["checksum/credentials"].as_str().is_some_and(|c| c.len() == 32), "{server}: new keys, new Job");
        }
    }
}

#[test]
fn with_timescaledb_on_a_personal_robot_has_a_second_role_of_its_own_there() {
    // The demo with TimescaleDB on for alice and bob (no fixture has it in a personal namespace).
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("demo");
    common::copy_dir(&common::root().join("fixtures/demo"), &spec);
    let tenants = std::fs::read_to_string(spec.join("tenants.yaml")).unwrap();
    let edited = tenants.replace("  timescaledb: { enabled: false }", "  timescaledb: { enabled: true }");
    assert_eq!(edited.matches("timescaledb: { enabled: true }").count(), 2);
    std::fs::write(spec.join("tenants.yaml"), edited).unwrap();
    let tree = Rendered::from_spec(&spec, "demo");
    let namespace = "personal-support";
    let ts = tree.object(&format!("namespaces/{namespace}/timescaledb/cluster-{namespace}-ts.yaml"));
    let roles: Vec<(&str, &str)> = ts["spec"]["managed"]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["passwordSecret"]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(roles, [("robot_alice_bot", "alice-bot-ts-role"), ("robot_bob_bot", "bob-bot-ts-role")]);
    let owner = tree.unseal(&format!("namespaces/{namespace}/timescaledb/sealedsecret-{namespace}-ts-credentials.yaml"));
    for server in ["alice-bot", "bob-bot"] {
        let (text, confz) = tree.confz(namespace, server);
        let role = tree.unseal(&format!("namespaces/{namespace}/timescaledb/sealedsecret-{server}-ts-role.yaml"));
        let password = derived(&format!("cluster/demo/namespace/{namespace}/servers/{server}/timescaledb/password"));
        assert_eq!(role["password"], password, "{server}");
        assert_eq!(confz["timescaledb"]["password"].as_str(), Some(password.as_str()), "{server}");
        assert_eq!(confz["timescaledb"]["user"].as_str(), Some(role["username"].as_str()), "{server}");
        assert_eq!(confz["timescaledb"]["schema"], confz["postgresql"]["schema"], "{server}");
        assert_ne!(confz["timescaledb"]["password"], confz["postgresql"]["password"], "{server}: one password per cluster");
        assert!(!text.contains(&owner["password"]), "{server}: config.toml holds TimescaleDB's owner password");
        let job = object(&tree.file(&format!("namespaces/{namespace}/servers/{server}/db-init"), "job-"));
        assert_eq!(
            job_env(&job)["TARGETS"],
            format!(
                "{namespace}-pg-rw:{namespace}-pg-credentials:{server}-pg-role {namespace}-ts-rw:{namespace}-ts-credentials:{server}-ts-role"
            )
        );
        assert_eq!(job_mounts(&job).len(), 4, "{server}: both owners' and both roles' Secrets");
    }
}

#[test]
fn enterprise_robots_keep_the_shared_owner_and_root_key_while_personal_ones_do_not() {
    let tree = Rendered::new("demo", "demo");
    let shared = tree.shared("acme-corp");
    let (root_user, root_password) = shared.minio.clone().unwrap();
    let ts = tree.unseal("namespaces/acme-corp/timescaledb/sealedsecret-acme-corp-ts-credentials.yaml");
    for server in ["robot1", "robot2"] {
        let (_, confz) = tree.confz("acme-corp", server);
        assert_eq!(confz["postgresql"]["user"].as_str(), Some("app_user"), "{server}");
        assert_eq!(confz["postgresql"]["password"].as_str(), Some(shared.owner_password.as_str()), "{server}");
        assert!(confz["postgresql"].get("schema").is_none(), "{server}: enterprise config.toml is unchanged");
        assert_eq!(confz["timescaledb"]["user"].as_str(), Some("app_user"), "{server}");
        assert_eq!(confz["timescaledb"]["password"].as_str(), Some(ts["password"].as_str()), "{server}");
        assert_eq!(confz["cos"]["access_key"].as_str(), Some(root_user.as_str()), "{server}");
        assert_eq!(confz["cos"]["secret_key"].as_str(), Some(root_password.as_str()), "{server}");
    }
    // No roles of their own, no robot Secrets, and the Jobs of today.
    for cluster in ["pg", "ts"] {
        let component = if cluster == "pg" { "postgresql" } else { "timescaledb" };
        let object = tree.object(&format!("namespaces/acme-corp/{component}/cluster-acme-corp-{cluster}.yaml"));
        assert!(object["spec"].get("managed").is_none(), "{object}");
        let files: Vec<String> = std::fs::read_dir(tree.cluster.join(format!("namespaces/acme-corp/{component}")))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f.starts_with("sealedsecret-"))
            .collect();
        assert_eq!(files, [format!("sealedsecret-acme-corp-{cluster}-credentials.yaml")]);
    }
    let job = object(&tree.file("namespaces/acme-corp/servers/robot1/db-init", "job-"));
    let env = job_env(&job);
    assert_eq!(env["SQL"], "CREATE SCHEMA IF NOT EXISTS \"public\" AUTHORIZATION app_user;");
    assert!(!env.contains_key("TARGETS"));
    let job = object(&tree.file("namespaces/acme-corp/servers/robot1/minio-init", "job-"));
    assert_eq!(job_mounts(&job).into_keys().collect::<Vec<_>>(), ["/credentials"]);
    assert!(!tree.has("namespaces/acme-corp/servers/robot1/minio-init/sealedsecret-robot1-minio-user.yaml"));
    // … while the personal robots next to them have their own.
    let (_, alice) = tree.confz("personal-support", "alice-bot");
    assert_eq!(alice["postgresql"]["user"].as_str(), Some("robot_alice_bot"));
}

#[test]
fn a_personal_robot_needs_a_plain_schema_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    // The fixture and the demo keys its `sealing.certFile` names (`../demo/keys/…`).
    let spec = dir.path().join("render-servers");
    common::copy_dir(&common::root().join("fixtures/render-servers"), &spec);
    common::copy_dir(&common::root().join("fixtures/demo/keys"), &dir.path().join("demo/keys"));
    let original = std::fs::read_to_string(spec.join("spec.yaml")).unwrap();
    for (schema, message) in [
        ("carol_bot", "schema `carol_bot` is also server `carol-bot`'s: each robot of a personal namespace needs a schema of its own"),
        ("public", "`public` is a schema the database keeps for itself or shares"),
        ("pg_catalog", "`pg_catalog` is a schema the database keeps for itself or shares"),
        ("Dave", "a personal robot's schema must be lowercase letters, digits and `_`"),
        ("dave-custom", "a personal robot's schema must be lowercase letters, digits and `_`"),
    ] {
        let edited = original.replace("TFS_ROBOT__DB_SCHEMA: dave_custom", &format!("TFS_ROBOT__DB_SCHEMA: {schema}"));
        assert_ne!(edited, original);
        std::fs::write(spec.join("spec.yaml"), edited).unwrap();
        let output = render(&spec, &dir.path().join("out"));
        assert_eq!(output.status.code(), Some(1), "{schema}: {}", common::report(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("spec.configData.TFS_ROBOT__DB_SCHEMA: ") && stderr.contains(message), "{schema}: {stderr}");
        assert!(stderr.contains("spec.yaml:"), "located: {stderr}");
    }
    // Enterprise robots may share a schema, `public` included (one organisation, one owner).
    std::fs::write(spec.join("spec.yaml"), original.replace("TFS_ROBOT__DB_SCHEMA: umbrella_main", "TFS_ROBOT__DB_SCHEMA: public"))
        .unwrap();
    let output = render(&spec, &dir.path().join("out"));
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
}
