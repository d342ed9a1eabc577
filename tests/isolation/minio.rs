//! The minio-init Job's script against a stand-in `mc`.

use super::{Rendered, common, job_env, job_mounts, object};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::Command;

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
