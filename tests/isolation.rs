//! The isolation model of personal namespaces (docs/render.md, "Isolation model"): every robot
//! of a personal namespace gets its own PostgreSQL role and schema and its own MinIO user,
//! never the database owner's credentials or the MinIO root key; every consumer of one of those
//! credentials gets the same value; enterprise robots keep the organisation's shared ones. The
//! rendered Secrets are opened with `tfrs unseal`. The db-init Job's script runs against a real
//! PostgreSQL server when one is installed (twice, and robot against robot), and the minio-init
//! Job's script against a stand-in `mc` that answers as the pinned client does.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

// ---------------------------------------------------------------------------------------------
// The db-init Job's script against a real PostgreSQL server.

/// A throw-away PostgreSQL server on 127.0.0.1 (stopped on drop), run as an unprivileged user
/// when the tests run as root (PostgreSQL refuses to run as root).
struct Postgres {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    data: PathBuf,
    socket: PathBuf,
    port: u16,
    user: Option<(u32, u32)>,
}

impl Postgres {
    /// The directory of the newest installed server's binaries (`postgres`, `initdb`, `pg_ctl`).
    fn binaries() -> Option<PathBuf> {
        let mut candidates: Vec<PathBuf> =
            std::fs::read_dir("/usr/lib/postgresql").into_iter().flatten().filter_map(|e| Some(e.ok()?.path().join("bin"))).collect();
        candidates.sort_by_key(|p| p.parent().and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok()).unwrap_or(0));
        candidates.reverse();
        if let Some(path) = std::env::var_os("PATH") {
            candidates.extend(std::env::split_paths(&path));
        }
        candidates.into_iter().find(|dir| ["postgres", "initdb", "pg_ctl", "psql", "pg_isready"].iter().all(|b| dir.join(b).is_file()))
    }

    fn start(bin: PathBuf) -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let (data, socket) = (dir.path().join("data"), dir.path().join("socket"));
        std::fs::create_dir(&socket).unwrap();
        let user = effective_uid().filter(|&uid| uid == 0).map(|_| unprivileged_user());
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
            std::os::unix::fs::chown(&socket, Some(uid), Some(gid)).unwrap();
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let postgres = Postgres { _dir: dir, bin, data, socket, port, user };
        postgres.run_server(&["initdb", "-D", &postgres.path(&postgres.data), "-U", "postgres", "-E", "UTF8", "--locale=C"]);
        let mut hba = String::from("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n");
        hba.push_str("host all all ::1/128 scram-sha-256\n");
        std::fs::write(postgres.data.join("pg_hba.conf"), hba).unwrap();
        let options = format!("-c listen_addresses=127.0.0.1 -p {} -k {}", postgres.port, postgres.path(&postgres.socket));
        let log = postgres.path(&postgres.data.join("log.txt"));
        postgres.run_server(&["pg_ctl", "-D", &postgres.path(&postgres.data), "-o", &options, "-l", &log, "-w", "start"]);
        postgres
    }

    fn path(&self, path: &Path) -> String {
        path.to_str().unwrap().to_owned()
    }

    /// Runs a server binary (as the unprivileged user, when there is one); it must succeed.
    fn run_server(&self, args: &[&str]) {
        use std::os::unix::process::CommandExt as _;
        let mut command = Command::new(self.bin.join(args[0]));
        command.args(&args[1..]).env_remove("PGDATA");
        if let Some((uid, gid)) = self.user {
            command.uid(uid).gid(gid);
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{args:?}: {}", common::report(&output));
    }

    /// `psql` as the superuser over the socket; returns the output, which must be a success.
    fn superuser(&self, database: &str, sql: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(&self.socket)
            .args(["-p", &self.port.to_string(), "-U", "postgres", "-d", database, "-c", sql])
            .output()
            .unwrap();
        assert!(output.status.success(), "{sql}: {}", common::report(&output));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// `psql` over TCP with a password, as a robot does; returns the exit status and output.
    fn login(&self, user: &str, password: &str, database: &str, sql: &str) -> (bool, String) {
        let output = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", user, "-d", database, "-c", sql])
            .env("PGPASSWORD", password)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.success(), text.trim().to_owned())
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        use std::os::unix::process::CommandExt as _;
        let mut command = Command::new(self.bin.join("pg_ctl"));
        command.args(["-D", &self.path(&self.data), "-m", "immediate", "stop"]);
        if let Some((uid, gid)) = self.user {
            command.uid(uid).gid(gid);
        }
        let _ = command.output();
    }
}

/// The effective user id of this process.
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// The `postgres` account when there is one, else `nobody`: (uid, gid).
fn unprivileged_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let entry = |name: &str| {
        passwd.lines().find(|l| l.starts_with(&format!("{name}:"))).and_then(|l| {
            let fields: Vec<&str> = l.split(':').collect();
            Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?))
        })
    };
    entry("postgres").or_else(|| entry("nobody")).unwrap_or((65534, 65534))
}

/// Whether a missing tool must fail the test: under `CI=true`, when `.ci/run` installs it.
fn required_in_ci(installed_by: &str) -> bool {
    let installs = std::fs::read_to_string(common::root().join(".ci/run")).is_ok_and(|run| run.contains(installed_by));
    std::env::var("CI").as_deref() == Ok("true") && installs
}

/// A robot's db-init Job, ready to run on this machine: its script with the pod's mounts moved
/// into `sandbox` (the Secrets' files, as Kubernetes mounts them), and its environment with the
/// database hosts replaced by the test server's address.
fn db_init(tree: &Rendered, namespace: &str, server: &str, sandbox: &Path, port: u16) -> (String, BTreeMap<String, String>) {
    let job = object(&tree.file(&format!("namespaces/{namespace}/servers/{server}/db-init"), "job-"));
    for (path, secret) in job_mounts(&job) {
        let dir = sandbox.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        let component = if secret.contains("-ts-") { "timescaledb" } else { "postgresql" };
        let data = tree.unseal(&format!("namespaces/{namespace}/{component}/sealedsecret-{secret}.yaml"));
        for (key, value) in data {
            std::fs::write(dir.join(key), value).unwrap();
        }
    }
    let script = job["spec"]["template"]["spec"]["containers"][0]["command"][2].as_str().unwrap();
    let script = script.replace("/credentials/", &format!("{}/credentials/", sandbox.display()));
    let mut env = job_env(&job);
    env.insert("TARGETS".into(), env["TARGETS"].replace(&format!("{namespace}-pg-rw:"), "127.0.0.1:"));
    env.insert("PGPORT".into(), port.to_string());
    (script, env)
}

fn run_script(bin: &Path, script: &str, env: &BTreeMap<String, String>) -> (bool, String) {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("sh").arg("-c").arg(script).envs(env).env("PATH", path).env_remove("PGPASSWORD").output().unwrap();
    (output.status.success(), common::report(&output))
}

#[test]
fn the_db_init_job_is_idempotent_and_isolates_robots_on_a_real_postgresql() {
    let Some(bin) = Postgres::binaries() else {
        assert!(!required_in_ci("postgresql"), "CI=true and .ci/run installs PostgreSQL, but no server binary was found");
        eprintln!("skipping: no PostgreSQL server binary (postgres, initdb, pg_ctl) found");
        return;
    };
    let tree = Rendered::new("demo", "demo");
    let namespace = "personal-support";
    let server = Postgres::start(bin.clone());
    // What CNPG does: the database owned by app_user (bootstrap), then the managed roles, with
    // the attributes and the passwords of the rendered Cluster and Secrets.
    let owner = tree.unseal(&format!("namespaces/{namespace}/postgresql/sealedsecret-{namespace}-pg-credentials.yaml"));
    let quote = |text: &str| format!("'{}'", text.replace('\'', "''"));
    server.superuser("postgres", &format!("CREATE ROLE app_user LOGIN PASSWORD {}", quote(&owner["password"])));
    server.superuser("postgres", &format!("CREATE DATABASE \"{namespace}\" OWNER app_user"));
    let cluster = tree.object(&format!("namespaces/{namespace}/postgresql/cluster-{namespace}-pg.yaml"));
    let mut robots = BTreeMap::new();
    for role in cluster["spec"]["managed"]["roles"].as_array().unwrap() {
        let name = role["name"].as_str().unwrap();
        let secret = tree
            .unseal(&format!("namespaces/{namespace}/postgresql/sealedsecret-{}.yaml", role["passwordSecret"]["name"].as_str().unwrap()));
        let flag = |attribute: &str, word: &str| if role[attribute] == true { word.to_owned() } else { format!("NO{word}") };
        server.superuser(
            "postgres",
            &format!(
                "CREATE ROLE \"{name}\" {} {} {} {} {} {} {} CONNECTION LIMIT {} PASSWORD {}",
                flag("login", "LOGIN"),
                flag("superuser", "SUPERUSER"),
                flag("createdb", "CREATEDB"),
                flag("createrole", "CREATEROLE"),
                flag("inherit", "INHERIT"),
                flag("replication", "REPLICATION"),
                flag("bypassrls", "BYPASSRLS"),
                role["connectionLimit"],
                quote(&secret["password"])
            ),
        );
        robots.insert(name.to_owned(), secret["password"].clone());
    }
    let password = |role: &str| robots[role].clone();
    // A schema from before robots had roles: alice's, made by the owner, with a table.
    let (ok, log) = server.login("app_user", &owner["password"], namespace, "CREATE SCHEMA alice_bot AUTHORIZATION app_user; CREATE TABLE alice_bot.legacy (note text); INSERT INTO alice_bot.legacy VALUES ('kept')");
    assert!(ok, "{log}");

    let sandbox = tempfile::tempdir().unwrap();
    for server_name in ["alice-bot", "bob-bot"] {
        let (script, env) = db_init(&tree, namespace, server_name, sandbox.path(), server.port);
        for run in ["first run", "re-run on an initialised database"] {
            let (ok, log) = run_script(&bin, &script, &env);
            assert!(ok, "{server_name}, {run}: {log}");
        }
    }
    let sql = |role: &str, statement: &str| server.login(role, &password(role), namespace, statement);
    let (alice, bob) = ("robot_alice_bot", "robot_bob_bot");

    // Each robot owns its schema (alice's taken over from the owner's grants), lands in it
    // without naming it, and keeps what was there.
    assert_eq!(server.superuser(namespace, "SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'bob_bot'"), bob);
    assert_eq!(sql(alice, "SHOW search_path"), (true, "alice_bot, public".to_owned()));
    assert_eq!(sql(alice, "SELECT note FROM legacy"), (true, "kept".to_owned()));
    assert!(sql(alice, "INSERT INTO legacy VALUES ('more'); CREATE TABLE mine (x int)").0);
    assert!(sql(bob, "CREATE TABLE notes (secret text); INSERT INTO notes VALUES ('bob only')").0);
    assert_eq!(server.superuser(namespace, "SELECT schemaname FROM pg_tables WHERE tablename = 'notes'"), "bob_bot");

    // … and reaches nothing of the other's.
    for (who, statement) in [
        (alice, "SELECT * FROM bob_bot.notes"),
        (alice, "DROP TABLE bob_bot.notes"),
        (alice, "DROP SCHEMA bob_bot CASCADE"),
        (alice, "CREATE TABLE bob_bot.planted (x int)"),
        (alice, "ALTER SCHEMA bob_bot RENAME TO gone"),
        (alice, "SET ROLE robot_bob_bot"),
        (alice, "ALTER ROLE robot_bob_bot PASSWORD 'taken'"),
        (bob, "SELECT * FROM alice_bot.legacy"),
        (bob, "SELECT * FROM alice_bot.mine"),
        (bob, "SET ROLE app_user"),
        // No schema, table or object anywhere else: not in `public` (the search path's second
        // entry, where a planted function would run as its caller), not a new schema.
        (alice, "CREATE TABLE public.planted (x int)"),
        (alice, "CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE sql AS 'SELECT 1::text'"),
        (alice, "CREATE SCHEMA bob_bot_2"),
        (bob, "CREATE SCHEMA carol_bot"),
    ] {
        let (ok, log) = sql(who, statement);
        assert!(!ok, "{who} could `{statement}`: {log}");
    }
    for role in [alice, bob] {
        let privileges =
            format!("SELECT has_database_privilege('{role}', '{namespace}', 'CREATE'), has_schema_privilege('{role}', 'public', 'CREATE')");
        assert_eq!(server.superuser(namespace, &privileges), "f|f", "{role}");
    }
    assert_eq!(sql(bob, "SELECT count(*) FROM notes"), (true, "1".to_owned()));

    // A schema squatted by another role (which could create schemas then): the Job fails, names
    // it, and still takes the right to create schemas back.
    server.superuser(namespace, &format!("GRANT CREATE ON DATABASE \"{namespace}\" TO {alice}"));
    assert!(sql(alice, "CREATE SCHEMA bob_squat").0);
    server.superuser(namespace, &format!("REVOKE CREATE ON DATABASE \"{namespace}\" FROM {alice}"));
    let (script, mut env) = db_init(&tree, namespace, "bob-bot", sandbox.path(), server.port);
    for key in ["GRANT_SQL", "SCHEMA_SQL", "REVOKE_SQL"] {
        let value = env[key]
            .replace("\"bob_bot\"", "\"bob_squat\"")
            .replace("'bob_bot'", "'bob_squat'")
            .replace("schema bob_bot ", "schema bob_squat ");
        env.insert(key.into(), value);
    }
    assert!(env["SCHEMA_SQL"].contains("bob_squat") && !env["SCHEMA_SQL"].contains("bob_bot\""), "{}", env["SCHEMA_SQL"]);
    let (ok, log) = run_script(&bin, &script, &env);
    assert!(!ok && log.contains("schema bob_squat belongs to another role"), "{log}");
    assert_eq!(server.superuser(namespace, &format!("SELECT has_database_privilege('{bob}', '{namespace}', 'CREATE')")), "f");
    assert!(!sql(bob, "CREATE TABLE bob_squat.t (x int)").0, "the squatted schema stays alice's");
}

// ---------------------------------------------------------------------------------------------
// The minio-init Job's script against a stand-in `mc`.

/// A stand-in for the pinned `mc` (RELEASE.2025-04-16T18-13-26Z): the commands the Job runs,
/// over a JSON state. Like the real one, `mb --ignore-existing` keeps a bucket, `admin policy
/// create` replaces a policy, `admin user add` sets the secret key of an existing user (from
/// the third argument, or stdin), and `admin policy attach` of an attached policy fails as the
/// MinIO server answers it (`XMinioAdminPolicyChangeAlreadyApplied`, "The specified policy
/// change is already in effect."), which the Job must take as done.
/// Every command line is recorded.
const FAKE_MC: &str = r#"
import json, os, sys
path = os.environ["FAKE_STATE"]
state = json.load(open(path))
args = sys.argv[1:]
state["calls"].append(args)
def done(code=0, message=""):
    json.dump(state, open(path, "w"))
    if message:
        print("mc: <ERROR> " + message, file=sys.stderr)
    sys.exit(code)
def alias(target):
    if target.split("/")[0] not in state["aliases"]:
        done(1, "no alias " + target)
if args[:2] == ["alias", "set"]:
    name, url, user, password = args[2:]
    if [user, password] != state["root"]:
        done(1, "access denied")
    state["aliases"][name] = url
    done()
if args[:2] == ["mb", "--ignore-existing"]:
    alias(args[2])
    bucket = args[2].split("/", 1)[1]
    if bucket not in state["buckets"]:
        state["buckets"].append(bucket)
    done()
if args[:3] == ["admin", "policy", "create"]:
    alias(args[3])
    state["policies"][args[4]] = json.load(open(args[5]))
    done()
if args[:3] == ["admin", "user", "add"]:
    alias(args[3])
    access = args[4]
    secret = args[5] if len(args) > 5 else sys.stdin.readline().rstrip("\n")
    if access == state["root"][0] or len(secret) < 8:
        done(1, "invalid user")
    user = state["users"].setdefault(access, {"policies": []})
    user["secret"] = secret
    done()
if args[:3] == ["admin", "policy", "attach"] and args[-2] == "--user":
    alias(args[3])
    user = state["users"].get(args[-1])
    policies = args[4:-2]
    if user is None or any(p not in state["policies"] for p in policies):
        done(1, "no such user or policy")
    if all(p in user["policies"] for p in policies):
        done(1, "The specified policy change is already in effect.")
    for p in policies:
        if p not in user["policies"]:
            user["policies"].append(p)
    done()
done(2, "unexpected command: " + " ".join(args))
"#;

#[test]
fn the_minio_init_job_gives_a_robot_a_user_limited_to_its_bucket_idempotently() {
    if !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but python3 is missing");
        eprintln!("skipping: the minio-init Job script test (needs python3)");
        return;
    }
    let tree = Rendered::new("demo", "demo");
    let namespace = "personal-support";
    let root = tree.shared(namespace).minio.unwrap();
    let sandbox = tempfile::tempdir().unwrap();
    let bin = sandbox.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("mc.py"), FAKE_MC).unwrap();
    std::fs::write(bin.join("mc"), format!("#!/bin/sh\nexec python3 {} \"$@\"\n", bin.join("mc.py").display())).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("mc"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let state_path = sandbox.path().join("state.json");
    let state = || -> Value { serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap() };
    std::fs::write(
        &state_path,
        json!({"root": [root.0, root.1], "aliases": {}, "buckets": [], "policies": {}, "users": {}, "calls": []}).to_string(),
    )
    .unwrap();

    let mut secrets = BTreeMap::new();
    for server in ["alice-bot", "bob-bot"] {
        let dir = format!("namespaces/{namespace}/servers/{server}/minio-init");
        let job = object(&tree.file(&dir, "job-"));
        let home = sandbox.path().join(server);
        for (mount, secret) in job_mounts(&job) {
            let target = home.join(mount.trim_start_matches('/'));
            std::fs::create_dir_all(&target).unwrap();
            let path = if mount == "/robot" {
                format!("{dir}/sealedsecret-{secret}.yaml")
            } else {
                format!("namespaces/{namespace}/minio/sealedsecret-{secret}.yaml")
            };
            for (key, value) in tree.unseal(&path) {
                std::fs::write(target.join(key), value).unwrap();
            }
        }
        secrets.insert(server, std::fs::read_to_string(home.join("robot/password")).unwrap());
        let script = job["spec"]["template"]["spec"]["containers"][0]["command"][2].as_str().unwrap();
        let script = script
            .replace("/credentials/", &format!("{}/credentials/", home.display()))
            .replace("/robot/", &format!("{}/robot/", home.display()))
            .replace("/tmp/policy.json", &format!("{}/policy.json", home.display()));
        let env = job_env(&job);
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let run = || {
            let output =
                Command::new("sh").arg("-c").arg(&script).envs(&env).env("PATH", &path).env("FAKE_STATE", &state_path).output().unwrap();
            assert!(output.status.success(), "{server}: {}", common::report(&output));
        };
        run();
        let first = state();
        run();
        let mut again = state();
        again["calls"] = first["calls"].clone();
        assert_eq!(again, first, "{server}: a re-run changes nothing");
        // A user left with another secret key (a new master key) gets the new one.
        let mut changed = state();
        changed["users"][format!("robot-{server}")]["secret"] = json!("an-old-secret-key");
        std::fs::write(&state_path, changed.to_string()).unwrap();
        run();
        assert_eq!(state()["users"][format!("robot-{server}")]["secret"], secrets[server].as_str());
    }

    let state = state();
    assert_eq!(state["buckets"], json!(["alice-bot", "bob-bot"]));
    for server in ["alice-bot", "bob-bot"] {
        let user = &state["users"][format!("robot-{server}")];
        assert_eq!(user["secret"], secrets[server].as_str(), "{server}: the key config.toml has");
        assert_eq!(user["policies"], json!([format!("robot-{server}")]), "{server}: its policy and nothing else");
        // The policy allows actions on its bucket and the objects in it, nothing else.
        let policy = &state["policies"][format!("robot-{server}")];
        let mut resources = Vec::new();
        for statement in policy["Statement"].as_array().unwrap() {
            assert_eq!(statement["Effect"], "Allow");
            for action in statement["Action"].as_array().unwrap() {
                let action = action.as_str().unwrap();
                assert!(action.starts_with("s3:") && !action.contains('*'), "{action}");
                assert!(!["s3:ListAllMyBuckets", "s3:DeleteBucket", "s3:PutBucketPolicy", "s3:CreateBucket"].contains(&action), "{action}");
            }
            resources.extend(statement["Resource"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()));
        }
        resources.sort();
        assert_eq!(resources, [format!("arn:aws:s3:::{server}"), format!("arn:aws:s3:::{server}/*")]);
    }
    // The robots' secret keys never appear on a command line.
    let calls = state["calls"].to_string();
    for secret in secrets.values() {
        assert!(!calls.contains(secret.as_str()), "a secret key on a command line: {calls}");
    }
}
