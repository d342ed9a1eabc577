//! `tfrs diff` as a review tool, end to end against bare repositories: each change traced to
//! the spec field (and layer) that made it, field-level JSON, checksums folded into the rolls
//! line, removed objects one line each, numbered markdown parts, and a change that comes from
//! tfrs itself named by its version.

mod common;

use common::report;
use common::sandbox::{Sandbox, edit, path};
use git2::{Repository, Signature};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The specs as a Git work tree (`specs/`), committed, with a rendered commit of them in `repo`.
fn committed(sandbox: &Sandbox, spec: &Path, repo: &Path) {
    let specs = sandbox.path().join("specs");
    sandbox.git(&specs, &["init", "-q"]);
    sandbox.git(&specs, &["add", "-A"]);
    sandbox.git(&specs, &["commit", "-qm", "specs"]);
    sandbox.commit(spec, repo, &[]);
}

fn diff(sandbox: &Sandbox, spec: &Path, repo: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["diff", path(spec), "--repo", path(repo)];
    args.extend_from_slice(extra);
    let out = sandbox.tfrs(&args);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn json(sandbox: &Sandbox, spec: &Path, repo: &Path) -> Value {
    let (code, stdout, stderr) = diff(sandbox, spec, repo, &["--format", "json"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    serde_json::from_str(&stdout).expect("JSON")
}

fn object<'a>(document: &'a Value, kind: &str, name: &str) -> &'a Value {
    document["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in {document:#}"))
}

/// The demo fixture at `specs/demo`.
fn demo(sandbox: &Sandbox) -> PathBuf {
    sandbox.fixture("demo", "demo")
}

/// Removes the `kind` named `name` from a multi-document spec file.
fn remove_document(file: &Path, kind: &str, name: &str) {
    let text = std::fs::read_to_string(file).expect("read the spec file");
    let documents: Vec<&str> = text.split("\n---\n").collect();
    let kept: Vec<&str> =
        documents.iter().copied().filter(|d| !d.contains(&format!("kind: {kind}\nmetadata:\n  name: {name}\n"))).collect();
    assert_eq!(kept.len() + 1, documents.len(), "one {kind} {name} in {}", file.display());
    std::fs::write(file, kept.join("\n---\n")).expect("write the spec file");
}

/// A sandbox with the demo fixture committed as specs, and a render of it in `gitops.git`.
fn committed_demo() -> (Sandbox, PathBuf, PathBuf) {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = demo(&sandbox);
    committed(&sandbox, &spec, &repo);
    (sandbox, repo, spec)
}

#[test]
fn an_environment_change_is_traced_to_its_layer_and_touches_only_its_cluster() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = sandbox.fixture("fleet", "fleet");
    common::copy_dir(&common::root().join("fixtures/demo/keys"), &sandbox.path().join("specs/demo/keys"));
    committed(&sandbox, &spec, &repo);
    let environment = spec.join("environments/prod.yaml");
    edit(&environment, "apiWorker: { replicas: 3 }", "apiWorker: { replicas: 4 }");

    let document = json(&sandbox, &spec, &repo);
    let clusters: Vec<&str> = document["objects"].as_array().unwrap().iter().map(|o| o["cluster"].as_str().unwrap()).collect();
    assert!(clusters.iter().all(|c| *c == "prod"), "only prod changes: {clusters:?}");
    let deployment = object(&document, "Deployment", "helpdesk-api");
    assert_eq!(deployment["fields"], serde_json::json!([{"path": "spec.replicas", "before": 3, "after": 4}]), "{deployment:#}");
    let cause = &deployment["causes"][0];
    assert_eq!(cause["object"], "TFRServer helpdesk");
    assert_eq!(cause["cluster"], "prod");
    assert_eq!(cause["change"], "changed");
    let field = &cause["fields"][0];
    assert_eq!(field["field"], "spec.apiWorker.replicas");
    assert_eq!(field["layer"], "environment `prod`", "{cause:#}");
    let text = std::fs::read_to_string(&environment).unwrap();
    let line = text.lines().position(|l| l.contains("replicas: 4")).unwrap() + 1;
    assert_eq!(field["at"]["file"], path(&environment));
    assert_eq!(field["at"]["line"], line);
    assert_eq!(document["specChanges"].as_array().map(Vec::len), Some(1), "{:#}", document["specChanges"]);
    // One cluster selected: the other clusters' spec objects are neither compared nor "removed".
    let (code, stdout, stderr) = diff(&sandbox, &spec, &repo, &["--format", "json", "--cluster", "prod"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let selected: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(selected["specChanges"], document["specChanges"], "{:#}", selected["specChanges"]);

    let (code, text, _) = diff(&sandbox, &spec, &repo, &[]);
    assert_eq!(code, 1);
    assert!(
        text.contains("cause: TFRServer helpdesk changed")
            && text.contains(&format!("spec.apiWorker.replicas from environment `prod` at {}:{line}:", path(&environment))),
        "{text}"
    );
}

#[test]
fn clusters_committed_separately_are_each_compared_with_the_specs_they_were_rendered_from() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = sandbox.fixture("fleet", "fleet");
    common::copy_dir(&common::root().join("fixtures/demo/keys"), &sandbox.path().join("specs/demo/keys"));
    committed(&sandbox, &spec, &repo);
    // One commit of the specs changes staging and prod; only prod is rendered from it.
    edit(&spec.join("environments/prod.yaml"), "apiWorker: { replicas: 3 }", "apiWorker: { replicas: 4 }");
    edit(&spec.join("environments/staging.yaml"), "postgresql: { instances: 2 }", "postgresql: { instances: 3 }");
    let specs = sandbox.path().join("specs");
    sandbox.git(&specs, &["commit", "-qam", "prod and staging"]);
    sandbox.commit(&spec, &repo, &["--cluster", "prod"]);

    // staging's tree is still the first render's: its change is traced to that render's specs.
    let document = json(&sandbox, &spec, &repo);
    let clusters: Vec<&str> = document["objects"].as_array().unwrap().iter().map(|o| o["cluster"].as_str().unwrap()).collect();
    assert!(!clusters.is_empty() && clusters.iter().all(|c| *c == "staging"), "{clusters:?}");
    let database = object(&document, "Cluster", "acme-pg");
    let cause = &database["causes"][0];
    assert_eq!(cause["object"], "TFRTenant acme", "{database:#}");
    assert_eq!(cause["change"], "changed", "not 'unchanged': {database:#}");
    assert_eq!(cause["fields"][0]["field"], "spec.postgresql.instances", "{database:#}");
    assert_eq!(cause["fields"][0]["layer"], "environment `staging`", "{database:#}");
    let changes: Vec<&str> = document["specChanges"].as_array().unwrap().iter().map(|c| c["cluster"].as_str().unwrap()).collect();
    assert_eq!(changes, ["staging"], "prod's change is already rendered: {:#}", document["specChanges"]);
}

#[test]
fn a_removed_server_is_listed_one_line_each_and_traced_to_its_removal() {
    let (sandbox, repo, spec) = committed_demo();
    remove_document(&spec.join("servers.yaml"), "TFRServer", "robot2");

    let (code, text, stderr) = diff(&sandbox, &spec, &repo, &[]);
    assert_eq!(code, 1, "{text}{stderr}");
    assert!(text.contains("RISKY:") || !text.contains("removed Deployment acme-corp/robot2-api\n      ---"), "{text}");
    let removed: Vec<&str> = text.lines().filter(|l| l.contains("- removed ")).collect();
    assert!(removed.len() >= 4, "{text}");
    assert!(!text.contains("-kind: Deployment"), "removed objects are not dumped: {text}");
    let head = Repository::open(sandbox.path().join("specs")).unwrap().head().unwrap().target().unwrap().to_string();
    assert!(text.contains(&format!("spec: demo TFRServer robot2 removed ({}:demo/servers.yaml:", &head[..12])), "{text}");
    assert!(text.contains("cause: TFRServer robot2 removed"), "{text}");

    // The cluster's routing table gathers every server: its cause is the removed server.
    let document = json(&sandbox, &spec, &repo);
    let routes = object(&document, "VirtualService", "tfrs-cluster");
    assert_eq!(routes["causes"].as_array().map(Vec::len), Some(1), "{routes:#}");
    assert_eq!(routes["causes"][0]["object"], "TFRServer robot2");
    assert_eq!(routes["causes"][0]["change"], "removed");
    assert!(routes["diff"].as_str().unwrap().contains("-  - name: robot2"), "{routes:#}");

    let markdown = diff(&sandbox, &spec, &repo, &["--format", "markdown"]).1;
    assert!(markdown.contains("- removed Deployment acme-corp/robot2-api"), "{markdown}");
    assert!(!markdown.contains("-kind: Deployment"), "{markdown}");
}

#[test]
fn a_config_change_rolls_its_workloads_with_checksums_folded_and_listed_in_json() {
    let (sandbox, repo, spec) = committed_demo();
    edit(&spec.join("servers.yaml"), "OPENAI_BASE_URL: https://api.openai.com/v1", "OPENAI_BASE_URL: https://llm.example.com/v1");

    let (_, text, _) = diff(&sandbox, &spec, &repo, &[]);
    assert!(text.contains("rolls: demo Deployment acme-corp/robot1-api (config)"), "{text}");
    assert!(!text.contains("checksum/config"), "checksums are folded into the rolls line: {text}");
    assert!(text.contains("cause: TFRServer robot1 changed") && text.contains("spec.configData.OPENAI_BASE_URL at "), "{text}");

    let document = json(&sandbox, &spec, &repo);
    let deployment = object(&document, "Deployment", "robot1-api");
    assert_eq!(deployment["rolls"], serde_json::json!(["config"]));
    assert_eq!(deployment["diff"], "", "only the folded checksum changed");
    let fields = deployment["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0]["path"], "spec.template.metadata.annotations[\"checksum/config\"]");
    let config = object(&document, "ConfigMap", "robot1-config");
    assert_eq!(config["fields"][0]["after"], "https://llm.example.com/v1", "{config:#}");
}

#[test]
fn a_server_and_its_tenant_changed_together_are_both_causes_of_what_embeds_both() {
    let (sandbox, repo, spec) = committed_demo();
    // robot1's image, and the TimescaleDB password of its tenant (which every confz embeds).
    let servers = spec.join("servers.yaml");
    let text = std::fs::read_to_string(&servers).unwrap();
    std::fs::write(&servers, text.replacen("tag: v1.8.0", "tag: v1.9.0", 1)).unwrap();
    edit(&spec.join("tenants.yaml"), "rotation: 1 }", "rotation: 2 }");

    let document = json(&sandbox, &spec, &repo);
    let objects =
        |confz: &Value| confz["causes"].as_array().unwrap().iter().map(|c| c["object"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let robot1 = object(&document, "SealedSecret", "robot1-confz");
    assert_eq!(objects(robot1), ["TFRServer robot1", "TFRTenant acme"], "nearest first: {robot1:#}");
    let robot2 = object(&document, "SealedSecret", "robot2-confz");
    assert_eq!(objects(robot2), ["TFRTenant acme"], "{robot2:#}");
    let tenant = &robot2["causes"][0]["fields"][0];
    assert_eq!(tenant["field"], "spec.timescaledb.password.generate.rotation", "{robot2:#}");
    let credentials = object(&document, "SealedSecret", "acme-corp-ts-credentials");
    assert_eq!(objects(credentials), ["TFRTenant acme"], "a tenant's own object: {credentials:#}");
}

#[test]
fn a_new_certificate_reseals_every_value_and_rotates_none() {
    let (sandbox, repo, spec) = committed_demo();
    let message = |repo: &Path| {
        let repo = Repository::open(repo).unwrap();
        repo.head().unwrap().peel_to_commit().unwrap().message().unwrap().to_owned()
    };
    assert!(message(&repo).contains("\nTfrs-Sealer: demo sealed-secrets "), "{}", message(&repo));
    // Another (DEV ONLY) certificate: every value is sealed anew, none changes.
    std::fs::copy(common::root().join("fixtures/keys-test/rsa-1024.pem"), spec.join("keys/sealed-secrets.pem")).unwrap();

    let (code, text, stderr) = diff(&sandbox, &spec, &repo, &["--fail-on", "risky"]);
    assert_eq!(code, 0, "a reseal is not risky: {text}{stderr}");
    assert!(text.contains("secrets resealed: demo SealedSecret "), "{text}");
    assert!(!text.contains("secrets rotated") && !text.contains("<sealed: changed>"), "nothing rotated: {text}");
    let document = json(&sandbox, &spec, &repo);
    let sealed: Vec<&Value> = document["objects"].as_array().unwrap().iter().flat_map(|o| o["sealed"].as_array().unwrap()).collect();
    assert!(sealed.len() > 20 && sealed.iter().all(|s| s["change"] == "resealed"), "{sealed:?}");
    assert_eq!(document["totals"]["secrets"], 0, "a resealed value is not a changed one");

    sandbox.commit(&spec, &repo, &[]);
    let body = message(&repo);
    assert!(body.contains("resealed") && !body.contains("rotated"), "{body}");

    // A value that does change under the new certificate is still `changed`.
    edit(&spec.join("tenants.yaml"), "rotation: 1 }", "rotation: 2 }");
    std::fs::copy(common::root().join("fixtures/demo/keys/sealed-secrets.pem"), spec.join("keys/sealed-secrets.pem")).unwrap();
    let (_, text, _) = diff(&sandbox, &spec, &repo, &[]);
    assert!(text.contains("secrets rotated: demo SealedSecret acme-corp/robot1-confz config.toml"), "{text}");
    assert!(text.contains("secrets resealed: "), "{text}");
}

#[test]
fn secrets_are_told_apart_by_what_changed_them() {
    let (sandbox, repo, spec) = committed_demo();
    let keys = |document: &Value, verb: &str| -> Vec<String> {
        document["summary"]["secrets"][verb].as_array().map_or(Vec::new(), |keys| {
            keys.iter().map(|k| format!("{} {}", k["object"].as_str().unwrap(), k["key"].as_str().unwrap())).collect()
        })
    };
    // A provided file's content: the specs are unchanged.
    std::fs::write(spec.join("secrets/openai-api-key.txt"), "sk-dev-only-rotated\n").unwrap();
    let document = json(&sandbox, &spec, &repo);
    assert_eq!(keys(&document, "provided-changed"), ["SealedSecret acme-corp/robot1-secret OPENAI_API_KEY"], "{:#}", document["summary"]);
    assert!(keys(&document, "rotated").is_empty() && keys(&document, "changed").is_empty(), "{:#}", document["summary"]);
    assert!(!serde_json::to_string(&document).unwrap().contains("sk-dev-only-rotated"), "never a value");
    // A generated password's rotation, and what embeds it.
    sandbox.commit(&spec, &repo, &[]);
    edit(&spec.join("tenants.yaml"), "rotation: 1 }", "rotation: 2 }");
    let document = json(&sandbox, &spec, &repo);
    let rotated = keys(&document, "rotated");
    assert!(rotated.contains(&"SealedSecret acme-corp/acme-corp-ts-credentials password".to_owned()), "{rotated:?}");
    assert!(rotated.contains(&"SealedSecret acme-corp/robot2-confz config.toml".to_owned()), "{rotated:?}");
    assert!(keys(&document, "provided-changed").is_empty(), "{:#}", document["summary"]);
}

#[test]
fn removals_that_take_things_with_them_are_risky() {
    let (sandbox, repo, spec) = committed_demo();
    // The RabbitMQ operator off, and a tenant that shares its namespace removed with its server.
    edit(&spec.join("cluster.yaml"), "rabbitmq: { enabled: true, version: v2.22.3 }", "rabbitmq: { enabled: false, version: v2.22.3 }");
    remove_document(&spec.join("tenants.yaml"), "TFRTenant", "bob");
    remove_document(&spec.join("servers.yaml"), "TFRServer", "bob-bot");
    let (code, text, stderr) = diff(&sandbox, &spec, &repo, &["--fail-on", "risky"]);
    assert_eq!(code, 1, "{text}{stderr}");
    assert!(text.contains("RISKY: demo Kustomization flux-system/rabbitmq-cluster-operator: operator installation removed"), "{text}");
    assert!(text.contains("RISKY: demo TFRTenant bob: tenant removed"), "{text}");
    let (_, markdown, _) = diff(&sandbox, &spec, &repo, &["--format", "markdown"]);
    assert!(markdown.contains("- **RISKY** removed Kustomization flux-system/rabbitmq-cluster-operator"), "{markdown}");
}

#[test]
fn a_workload_roll_is_traced_to_what_its_pod_is_made_of_and_provided_keys_stay_provided() {
    let (sandbox, repo, spec) = committed_demo();
    let servers = spec.join("servers.yaml");
    let text = std::fs::read_to_string(&servers).unwrap();
    std::fs::write(&servers, text.replacen("tag: v1.8.0", "tag: v1.9.0", 1).replacen("replicas: 2", "replicas: 3", 1)).unwrap();
    // And, in the same change, a provided key's file and its tenant's generated password.
    std::fs::write(spec.join("secrets/openai-api-key.txt"), "sk-dev-only-rotated\n").unwrap();
    edit(&spec.join("tenants.yaml"), "rotation: 1 }", "rotation: 2 }");
    let document = json(&sandbox, &spec, &repo);
    let fields = |kind: &str, name: &str| -> Vec<String> {
        let object = object(&document, kind, name);
        object["causes"][0]["fields"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(fields("Deployment", "robot1-api"), ["spec.image.tag", "spec.apiWorker.replicas"]);
    assert_eq!(fields("Deployment", "robot1-robot-worker"), ["spec.image.tag"], "not the other worker's replicas");
    let provided = &document["summary"]["secrets"]["provided-changed"];
    assert_eq!(provided[0]["object"], "SealedSecret acme-corp/robot1-secret", "{:#}", document["summary"]);
    assert_eq!(provided[0]["key"], "OPENAI_API_KEY", "{:#}", document["summary"]);
}

#[test]
fn markdown_parts_hold_every_object_each_within_one_comment() {
    let sandbox = Sandbox::new();
    let spec = demo(&sandbox);
    let empty = sandbox.bare("empty.git");
    let dir = sandbox.path().join("parts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("part-99.md"), "a part of an earlier, longer report").unwrap();
    let (code, stdout, stderr) = diff(&sandbox, &spec, &empty, &["--format", "markdown", "--parts", path(&dir)]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let listed: Vec<&str> = stdout.lines().collect();
    let count = listed.len();
    assert!(count > 1, "the demo's first render is more than one comment: {stdout}");
    assert!(!dir.join("part-99.md").exists(), "stale parts are removed");
    let mut details = 0;
    for (index, part) in listed.iter().enumerate() {
        assert_eq!(*part, path(&dir.join(format!("part-{}.md", index + 1))));
        let text = std::fs::read_to_string(part).unwrap();
        assert!(text.chars().count() <= 60_000, "part {index}: {} characters", text.chars().count());
        assert!(text.starts_with(&format!("### tfrs diff against `main` (part {} of {count})\n", index + 1)), "{text}");
        assert_eq!(text.matches("<details>").count(), text.matches("</details>").count(), "balanced: {text}");
        details += text.matches("<details>\n<summary>added ").count();
        if index == 0 {
            assert!(text.contains("--- /dev/null\n+++ b/clusters/demo/"), "git's headers for an added file: {text}");
        }
    }
    let document = json(&sandbox, &spec, &empty);
    let shown = document["objects"].as_array().unwrap().iter().filter(|o| !o["kind"].is_null()).count();
    assert_eq!(details, shown, "every object is in exactly one part");

    let whole = diff(&sandbox, &spec, &empty, &["--format", "markdown"]).1;
    assert!(whole.chars().count() <= 60_000, "one comment, its note included: {}", whole.chars().count());
    assert!(whole.contains("more objects not shown (comment size limit); `tfrs diff --parts DIR`"), "{}", &whole[whole.len() - 300..]);

    let (code, stdout, stderr) = diff(&sandbox, &spec, &empty, &["--parts", path(&dir)]);
    assert_eq!(code, 2, "--parts is for markdown only: {stdout}{stderr}");
    assert!(stderr.contains("use it with `--format markdown`"), "{stderr}");
}

#[test]
fn without_the_specs_commit_a_cause_names_the_spec_object() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = demo(&sandbox);
    sandbox.commit(&spec, &repo, &[]);
    edit(&spec.join("servers.yaml"), "apiWorker: { replicas: 1 }", "apiWorker: { replicas: 2 }");
    let (code, text, _) = diff(&sandbox, &spec, &repo, &[]);
    assert_eq!(code, 1, "{}", report(&sandbox.tfrs(&["diff", path(&spec), "--repo", path(&repo)])));
    let note = "does not record the specs' commit (`Tfrs-Source-Commit`): causes name the spec objects only";
    assert!(text.contains("note: the last render of demo on the branch") && text.contains(note), "said in the report itself: {text}");
    assert!(text.contains(&format!("cause: from TFRServer robot2 ({}:", path(&spec.join("servers.yaml")))), "{text}");
    assert!(!text.contains("\nspec: "), "no spec changes without the base's specs: {text}");
    let document = json(&sandbox, &spec, &repo);
    assert!(document["notes"][0].as_str().is_some_and(|n| n.contains(note)), "an empty specChanges is explained: {document:#}");
    let (_, markdown, _) = diff(&sandbox, &spec, &repo, &["--format", "markdown"]);
    assert!(markdown.contains(note), "{markdown}");
}

#[test]
fn a_base_rendered_from_uncommitted_specs_says_its_causes_may_be_stale() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = demo(&sandbox);
    let specs = sandbox.path().join("specs");
    sandbox.git(&specs, &["init", "-q"]);
    sandbox.git(&specs, &["add", "-A"]);
    sandbox.git(&specs, &["commit", "-qm", "specs"]);
    edit(&spec.join("servers.yaml"), "apiWorker: { replicas: 1 }", "apiWorker: { replicas: 2 }");
    sandbox.commit(&spec, &repo, &[]);
    edit(&spec.join("servers.yaml"), "TFS_PROFILE: personal", "TFS_PROFILE: team");
    let document = json(&sandbox, &spec, &repo);
    let notes = document["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].as_str().unwrap().contains("with uncommitted changes: causes compare with that commit"), "{notes:?}");
}

#[test]
fn a_change_tfrs_made_on_its_own_names_the_tfrs_versions() {
    let (sandbox, repo, spec) = committed_demo();
    // As if an older tfrs had rendered the base: another version trailer, another Service.
    let repository = Repository::open(&repo).unwrap();
    let tip = repository.find_reference("refs/heads/main").unwrap().peel_to_commit().unwrap();
    let service = "clusters/demo/components/namespaces/acme-corp/redis/service-redis.yaml";
    let entry = tip.tree().unwrap().get_path(Path::new(service)).unwrap();
    let old = repository.find_blob(entry.id()).unwrap().content().to_vec();
    let older = String::from_utf8(old).unwrap().replace("port: 6379", "port: 6380");
    let blob = repository.blob(older.as_bytes()).unwrap();
    let mut builder = git2::build::TreeUpdateBuilder::new();
    builder.upsert(service, blob, git2::FileMode::Blob);
    let tree = repository.find_tree(builder.create_updated(&repository, &tip.tree().unwrap()).unwrap()).unwrap();
    let message = tip.message().unwrap();
    let at = message.find("Tfrs-Version: ").unwrap();
    let end = at + message[at..].find('\n').unwrap_or(message.len() - at);
    let message = format!("{}Tfrs-Version: 0.0.1 (commit 000000000000, catalog sha256:000000000000){}", &message[..at], &message[end..]);
    let signature = Signature::now("CI Bot", "ci@example.com").unwrap();
    repository.commit(Some("refs/heads/main"), &signature, &signature, &message, &tree, &[&tip]).unwrap();

    let (code, text, stderr) = diff(&sandbox, &spec, &repo, &[]);
    assert_eq!(code, 1, "{text}{stderr}");
    assert!(text.contains("tfrs: 0.0.1 (commit 000000000000, catalog sha256:000000000000) -> "), "{text}");
    assert!(text.contains("cause: TFRTenant acme ("), "{text}");
    assert!(text.contains("is unchanged; tfrs changed: 0.0.1"), "{text}");
    assert!(!text.contains("\nspec: "), "no spec object changed: {text}");
}
