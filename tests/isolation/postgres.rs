//! The db-init Job's script against a real PostgreSQL server.

use super::{Rendered, common, job_env, job_mounts, object};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

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
