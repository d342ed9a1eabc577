//! A real PostgreSQL (the business database and the billing TimescaleDB's credentials) and a
//! real Redis, set up with `.env.infra`'s credentials, accept connections made with the
//! manager's values: the two rendered files agree.

use super::common::{ci, tool_or_skip};
use super::render;
use crate::common::report;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// The directory of the newest installed PostgreSQL server's binaries.
fn postgres_binaries() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> =
        std::fs::read_dir("/usr/lib/postgresql").into_iter().flatten().filter_map(|e| Some(e.ok()?.path().join("bin"))).collect();
    candidates.sort_by_key(|p| p.parent().and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok()).unwrap_or(0));
    candidates.reverse();
    let found = candidates.into_iter().find(|dir| ["postgres", "initdb", "pg_ctl", "psql"].iter().all(|b| dir.join(b).is_file()));
    if found.is_none() {
        assert!(!ci(), "PostgreSQL is required under CI=true (.ci/run installs it)");
        eprintln!("skipped: PostgreSQL not installed (run .ci/run)");
    }
    found
}

/// The `postgres` account when there is one, else `nobody` (PostgreSQL refuses to run as root).
fn unprivileged_user() -> Option<(u32, u32)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid: u32 = status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().nth(1)?.parse().ok()?;
    if uid != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let entry = |name: &str| {
        passwd.lines().find(|l| l.starts_with(&format!("{name}:"))).and_then(|l| {
            let fields: Vec<&str> = l.split(':').collect();
            Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?))
        })
    };
    Some(entry("postgres").or_else(|| entry("nobody")).unwrap_or((65534, 65534)))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A throw-away PostgreSQL server on 127.0.0.1 whose superuser is `user` with `password`
/// (password logins over TCP only), holding database `database`. Stopped on drop.
struct Postgres {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    owner: Option<(u32, u32)>,
}

impl Postgres {
    fn start(bin: &Path, user: &str, password: &str, database: &str) -> Postgres {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let owner = unprivileged_user();
        let (data, socket, pwfile) = (dir.path().join("data"), dir.path().join("socket"), dir.path().join("pwfile"));
        std::fs::create_dir(&socket).unwrap();
        std::fs::write(&pwfile, format!("{password}\n")).unwrap();
        if let Some((uid, gid)) = owner {
            for path in [dir.path(), &socket, &pwfile] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
            }
        }
        let postgres = Postgres { _dir: dir, bin: bin.to_path_buf(), data, port: free_port(), owner };
        let text = |p: &Path| p.to_str().unwrap().to_owned();
        postgres.run(&[
            "initdb",
            "-D",
            &text(&postgres.data),
            "-U",
            user,
            "--pwfile",
            &text(&pwfile),
            "-E",
            "UTF8",
            "--locale=C",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ]);
        let options = format!("-c listen_addresses=127.0.0.1 -p {} -k {}", postgres.port, text(&socket));
        let log = text(&postgres.data.join("log.txt"));
        postgres.run(&["pg_ctl", "-D", &text(&postgres.data), "-o", &options, "-l", &log, "-w", "start"]);
        postgres.run(&[
            "psql",
            "-X",
            "-q",
            "-h",
            &text(&socket),
            "-p",
            &postgres.port.to_string(),
            "-U",
            user,
            "-d",
            "postgres",
            "-c",
            &format!("CREATE DATABASE {database}"),
        ]);
        postgres
    }

    fn run(&self, args: &[&str]) {
        use std::os::unix::process::CommandExt as _;
        let mut command = Command::new(self.bin.join(args[0]));
        command.args(&args[1..]).env_remove("PGDATA").env_remove("PGPASSWORD");
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}: {}", args[0], report(&output));
    }

    /// Logs in over TCP with a password, as the manager does; whether it worked, and the output.
    fn login(&self, user: &str, password: &str, database: &str) -> (bool, String) {
        let output = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                user,
                "-d",
                database,
                "-c",
                "SELECT current_user || '@' || current_database()",
            ])
            .env("PGPASSWORD", password)
            .env_remove("PGPASSFILE")
            .output()
            .unwrap();
        (
            output.status.success(),
            format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)).trim().to_owned(),
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        use std::os::unix::process::CommandExt as _;
        let mut command = Command::new(self.bin.join("pg_ctl"));
        command.args(["-D", self.data.to_str().unwrap(), "-m", "immediate", "stop"]);
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        let _ = command.output();
    }
}

/// A throw-away `redis-server` on 127.0.0.1 with `requirepass` (from a config file, not the
/// command line). Killed on drop.
struct Redis {
    _dir: tempfile::TempDir,
    child: Child,
    port: u16,
    cli: PathBuf,
}

impl Redis {
    fn start(server: &Path, cli: &Path, password: &str) -> Redis {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("redis.conf");
        let text = format!("bind 127.0.0.1\nport {port}\nrequirepass {password}\nsave \"\"\nappendonly no\ndir {}\n", dir.path().display());
        std::fs::write(&config, text).unwrap();
        let child = Command::new(server).arg(&config).stdout(std::process::Stdio::null()).spawn().unwrap();
        let redis = Redis { _dir: dir, child, port, cli: cli.to_path_buf() };
        // Wait until it answers at all (an authentication error is an answer).
        let ready = (0..200).any(|_| {
            let answered = redis.ping(None).1.contains("NOAUTH") || redis.ping(None).1.contains("PONG");
            if !answered {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            answered
        });
        assert!(ready, "redis-server did not start");
        redis
    }

    /// `redis-cli ping`, authenticated with `password` through `REDISCLI_AUTH` (so the password
    /// is not on a command line): whether the answer is PONG, and the output.
    fn ping(&self, password: Option<&str>) -> (bool, String) {
        let mut command = Command::new(&self.cli);
        command.args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "ping"]).env_remove("REDISCLI_AUTH");
        if let Some(password) = password {
            command.env("REDISCLI_AUTH", password);
        }
        let output = command.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)).trim().to_owned();
        (text == "PONG", text)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn postgres_accepts_the_managers_values_for_both_databases() {
    let Some(bin) = postgres_binaries() else { return };
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path());
    let (infra, manager) = (&rendered.infra, &rendered.manager);
    // The business database, set up from `.env.infra` as the postgres image does.
    let business = Postgres::start(&bin, &infra["DB_USER"], &infra["DB_PASSWORD"], &infra["DB_NAME"]);
    let (ok, output) = business.login(&infra["DB_USER"], &manager["DB_PASSWORD"], &infra["DB_NAME"]);
    assert!(ok, "the manager's DB_PASSWORD is refused: {output}");
    assert_eq!(output, format!("{}@{}", infra["DB_USER"], infra["DB_NAME"]));
    // The check can fail: another password is refused.
    let (ok, output) = business.login(&infra["DB_USER"], &manager["OTLP_TS_PASSWORD"], &infra["DB_NAME"]);
    assert!(!ok && output.contains("password authentication failed"), "{output}");
    drop(business);
    // The billing TimescaleDB's credentials (the same PostgreSQL server software).
    let billing = Postgres::start(&bin, &infra["OTLP_TS_USER"], &infra["OTLP_TS_PASSWORD"], &infra["OTLP_TS_DBNAME"]);
    let (ok, output) = billing.login(&infra["OTLP_TS_USER"], &manager["OTLP_TS_PASSWORD"], &infra["OTLP_TS_DBNAME"]);
    assert!(ok, "the manager's OTLP_TS_PASSWORD is refused: {output}");
}

#[test]
fn redis_accepts_the_managers_password() {
    let (Some(server), Some(cli)) = (tool_or_skip("redis-server"), tool_or_skip("redis-cli")) else { return };
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path());
    let redis = Redis::start(&server, &cli, &rendered.infra["REDIS_PASSWORD"]);
    let (ok, output) = redis.ping(Some(&rendered.manager["REDIS_PASSWORD"]));
    assert!(ok, "the manager's REDIS_PASSWORD is refused: {output}");
    let (ok, output) = redis.ping(Some(&rendered.infra["INFISICAL_REDIS_PASSWORD"]));
    assert!(!ok && (output.contains("WRONGPASS") || output.contains("invalid password")), "{output}");
    let (ok, output) = redis.ping(None);
    assert!(!ok && output.contains("NOAUTH"), "{output}");
}
