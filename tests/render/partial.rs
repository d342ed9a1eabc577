//! A cluster rendered in part: when only some tenant namespaces' objects changed, a re-render
//! renders those and the cluster's own components into the tree the last render left, and
//! keeps the rest of the cluster as it is. Whatever changed, the tree is the one a render
//! without a memo writes; anything the parts do not follow (the cluster object, a variable, a
//! `fromFile` file, a hand edit, a component added, moved or taken away) renders the whole
//! cluster.

use super::copy_fixture;
use super::stamp::{same_trees, same_values};
use super::unit::{edit, namespaces_kept};
use crate::common::{self, report};
use std::path::PathBuf;
use std::process::Output;

/// The demo, and where it is rendered.
struct Demo {
    _dir: tempfile::TempDir,
    spec: PathBuf,
    out: PathBuf,
    fresh: PathBuf,
    memos: PathBuf,
    token: std::cell::RefCell<&'static str>,
}

impl Demo {
    /// The demo with its secrets read from the environment rather than from files.
    fn new() -> Demo {
        let demo = Demo::shipped();
        edit(&demo.spec.join("cluster.yaml"), "{ fromFile: secrets/registry-password.txt }", "{ fromEnv: TFRS_TEST_REGISTRY }");
        edit(&demo.servers(), "{ fromFile: secrets/openai-api-key.txt }", "{ fromEnv: TFRS_TEST_OPENAI }");
        demo
    }

    /// The demo as shipped: the registry password and robot1's key are read from files.
    fn shipped() -> Demo {
        let dir = tempfile::tempdir().unwrap();
        let spec = copy_fixture("demo", dir.path());
        let (out, fresh, memos) = (dir.path().join("out"), dir.path().join("fresh"), dir.path().join("memos"));
        Demo { _dir: dir, spec, out, fresh, memos, token: std::cell::RefCell::new("sk-1") }
    }

    fn command(&self) -> std::process::Command {
        let mut command = common::fixture_command();
        command.env("TFRS_TEST_REGISTRY", "registry-password").env("TFRS_TEST_OPENAI", *self.token.borrow());
        command
    }

    /// Renders into `out` with the memo, then without it into `fresh` (a copy of `out` before):
    /// the same tree, and the same values in every sealed Secret.
    fn render(&self, what: &str) -> Output {
        let _ = std::fs::remove_dir_all(&self.fresh);
        if self.out.exists() {
            common::copy_dir(&self.out, &self.fresh);
        }
        let output = self
            .command()
            .env("TFRS_CACHE_DIR", &self.memos)
            .args(["render", self.spec.to_str().unwrap(), "--out", self.out.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        let fresh = self
            .command()
            .args(["render", self.spec.to_str().unwrap(), "--out", self.fresh.to_str().unwrap(), "--no-memo"])
            .output()
            .unwrap();
        assert_eq!(fresh.status.code(), Some(0), "{}", report(&fresh));
        same_trees(&self.out, &self.fresh, what);
        same_values(&self.out, &self.fresh, what);
        output
    }

    fn servers(&self) -> PathBuf {
        self.spec.join("servers.yaml")
    }

    /// Renders after `change` with personal-support's entry spoilt ([`Demo::spoil_entry_of`]),
    /// and checks that the render was made in part: personal-support is still given back.
    fn render_in_part(&self, change: impl FnOnce(), what: &str) {
        self.spoil_entry_of("personal-support");
        change();
        let output = self.render(what);
        assert_eq!(namespaces_kept(&output), Some((1, 2)), "rendered in part: {}", report(&output));
    }

    /// The namespaces' memo file, whose entry of namespace `namespace` has its stamp changed
    /// (one hexadecimal digit): a render that checks it renders that namespace again.
    fn spoil_entry_of(&self, namespace: &str) {
        let file = std::fs::read_dir(&self.memos).unwrap().map(|e| e.unwrap().path().join("demo.units")).find(|p| p.exists()).unwrap();
        let mut bytes = std::fs::read(&file).unwrap();
        let key = format!("demo/unit:{namespace}");
        let at = bytes.windows(key.len()).position(|w| w == key.as_bytes()).expect("the namespace's entry") + key.len();
        // NB: the entry's first field is its stamp: a varint length (64), then 64 hexadecimal digits.
        assert_eq!(bytes[at], 64, "a stamp follows the key");
        bytes[at + 1] = if bytes[at + 1] == b'0' { b'1' } else { b'0' };
        std::fs::write(&file, bytes).unwrap();
    }
}

#[test]
fn a_render_in_part_writes_the_tree_a_whole_render_writes_whatever_changed() {
    let demo = Demo::new();
    assert_eq!(namespaces_kept(&demo.render("the first render")), None);

    // A server's field: its namespace and the cluster's own components only.
    edit(&demo.servers(), "    replicas: 2\n", "    replicas: 3\n");
    assert_eq!(namespaces_kept(&demo.render("robot1's replicas")), Some((1, 2)));
    // A tenant's field.
    edit(&demo.spec.join("tenants.yaml"), "rabbitmq: { enabled: true, replicas: 1,", "rabbitmq: { enabled: true, replicas: 3,");
    assert_eq!(namespaces_kept(&demo.render("acme's RabbitMQ replicas")), Some((1, 2)));
    // Two namespaces at once.
    edit(&demo.servers(), "tag: v1.7.2", "tag: v1.7.3");
    edit(&demo.servers(), "apiWorker: { replicas: 1 }", "apiWorker: { replicas: 2 }");
    assert_eq!(namespaces_kept(&demo.render("a server of each namespace")), None, "neither namespace is kept");

    // A component added to a server (its namespace's layout changes), one taken away, a server
    // moved to the other namespace, a server added: the whole cluster.
    edit(&demo.servers(), "jobs: { grafanaServiceAccount: false }", "jobs: { grafanaServiceAccount: true }");
    demo.render("robot2's Grafana service account");
    edit(&demo.servers(), "jobs: { grafanaServiceAccount: true }", "jobs: { grafanaServiceAccount: false }");
    demo.render("robot2's Grafana service account taken away");
    edit(&demo.servers(), "  name: robot2\nspec:\n  tenant: acme\n", "  name: robot2\nspec:\n  tenant: bob\n");
    demo.render("robot2 moved to bob");
    let servers = std::fs::read_to_string(demo.servers()).unwrap();
    let bob = servers.split("---\n").find(|doc| doc.contains("name: bob-bot")).unwrap().replace("name: bob-bot", "name: bob-bot2");
    std::fs::write(demo.servers(), format!("{servers}---\n{bob}")).unwrap();
    demo.render("a server added");

    // What the parts do not follow: a variable a server reads, the cluster object, a hand edit
    // of a file of a namespace that did not change.
    *demo.token.borrow_mut() = "sk-2";
    demo.render("the variable robot1 reads");
    edit(&demo.spec.join("cluster.yaml"), "username: { value: cnb }", "username: { value: cnb-ops }");
    demo.render("the cluster's registry user");
    let edited = super::read_tree(&demo.out).into_keys().find(|p| p.contains("/namespaces/personal-support/")).unwrap();
    std::fs::write(demo.out.join(&edited), "kind: Edited\n").unwrap();
    edit(&demo.servers(), "    replicas: 3\n", "    replicas: 4\n");
    demo.render("a file of the other namespace edited by hand");
}

#[test]
fn a_render_in_part_leaves_the_namespaces_that_did_not_change_unread() {
    let demo = Demo::new();
    demo.render("the first render");
    // The stamp of personal-support's entry spoilt: a whole render would check it and render
    // that namespace again; a render in part leaves it as it is.
    demo.render_in_part(|| edit(&demo.servers(), "    replicas: 2\n", "    replicas: 3\n"), "acme-corp changed");

    // Without the parts (a stamp of an earlier version), the same change renders the whole
    // cluster, and the spoilt entry, kept as it was, renders personal-support again.
    let stamp = std::fs::read_dir(&demo.memos).unwrap().map(|e| e.unwrap().path().join("demo.stamp")).find(|p| p.exists()).unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stamp).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("parts").expect("the stamp has parts");
    std::fs::write(&stamp, serde_json::to_vec(&json).unwrap()).unwrap();
    edit(&demo.servers(), "    replicas: 3\n", "    replicas: 4\n");
    assert_eq!(namespaces_kept(&demo.render("acme-corp changed again")), None, "rendered whole");

    // The memo's entries lost: the rest of the cluster cannot keep them, so it is rendered whole
    // and says so as a render without them does (no entry given back).
    edit(&demo.servers(), "    replicas: 4\n", "    replicas: 5\n");
    demo.render("parts again");
    let jobs = std::fs::read_dir(&demo.memos).unwrap().map(|e| e.unwrap().path().join("demo.jobs")).find(|p| p.exists()).unwrap();
    std::fs::remove_file(jobs).unwrap();
    edit(&demo.servers(), "    replicas: 5\n", "    replicas: 6\n");
    let output = demo.render("the memo's entries lost");
    assert!(String::from_utf8_lossy(&output.stdout).contains("; 0 of 130 templated units reused)"), "{}", report(&output));
}

#[test]
fn a_render_that_reads_files_is_made_in_part_while_every_field_stays_in_its_file() {
    // NB: the registry password (the cluster's) and robot1's key (acme-corp's) are read from
    // files, each relative to the spec file its field is written in.
    let demo = Demo::shipped();
    demo.render("the first render");
    demo.render_in_part(|| edit(&demo.servers(), "    replicas: 2\n", "    replicas: 3\n"), "acme-corp changed");

    // The file robot1 reads, the file the cluster reads: the whole cluster.
    std::fs::write(demo.spec.join("secrets/openai-api-key.txt"), "sk-demo-another-key\n").unwrap();
    edit(&demo.servers(), "    replicas: 3\n", "    replicas: 4\n");
    demo.render("robot1's file changed");
    std::fs::write(demo.spec.join("secrets/registry-password.txt"), "another-registry-password\n").unwrap();
    demo.render("the registry password's file changed");

    // The servers' spec file moved (every server's fields are now written in another file, and
    // robot1's key is read relative to it), then the cluster's: the tree a render without the
    // memo writes.
    std::fs::create_dir_all(demo.spec.join("robots")).unwrap();
    std::fs::create_dir_all(demo.spec.join("robots/secrets")).unwrap();
    std::fs::write(demo.spec.join("robots/secrets/openai-api-key.txt"), "sk-key-next-to-the-robots\n").unwrap();
    std::fs::rename(demo.servers(), demo.spec.join("robots/servers.yaml")).unwrap();
    demo.render("the servers' spec file moved");
    std::fs::create_dir_all(demo.spec.join("platform/secrets")).unwrap();
    std::fs::write(demo.spec.join("platform/secrets/registry-password.txt"), "registry-password-next-to-the-cluster\n").unwrap();
    let cluster = std::fs::read_to_string(demo.spec.join("cluster.yaml")).unwrap();
    std::fs::remove_file(demo.spec.join("cluster.yaml")).unwrap();
    std::fs::write(demo.spec.join("platform/cluster.yaml"), cluster.replace("certFile: keys/", "certFile: ../keys/")).unwrap();
    demo.render("the cluster's spec file moved");
}

#[test]
fn a_field_now_written_in_another_file_renders_its_namespace_again() {
    // NB: the team overlay (in `overlays/`) names the OpenAI key of every server, each reading
    // it relative to `overlays/`; robot1's own spec names the same path, read next to it.
    let demo = Demo::shipped();
    let overlay = demo.spec.join("overlays/team.yaml");
    edit(
        &overlay,
        "kind: TFRServer\nspec:\n",
        "kind: TFRServer\nspec:\n  secretData:\n    OPENAI_API_KEY: { fromFile: secrets/openai-api-key.txt }\n",
    );
    std::fs::create_dir_all(demo.spec.join("overlays/secrets")).unwrap();
    std::fs::write(demo.spec.join("overlays/secrets/openai-api-key.txt"), "sk-overlay-key\n").unwrap();
    demo.render("the first render");

    // robot1 no longer names the file itself: its merged spec is the same, every read gives
    // what it gave, but its key is now the overlay's file. acme-corp is rendered again, in part.
    let change = || edit(&demo.servers(), "    OPENAI_API_KEY: { fromFile: secrets/openai-api-key.txt }\n", "");
    demo.render_in_part(change, "robot1's key read from the overlay's directory");
}

#[test]
fn a_field_of_the_cluster_now_written_in_another_file_renders_the_whole_cluster() {
    // NB: an overlay of the cluster names its registry password file too, read relative to
    // `overlays/`; the cluster's own spec names the same path, read next to it, and wins.
    let demo = Demo::shipped();
    let overlay = demo.spec.join("overlays/team.yaml");
    let text = std::fs::read_to_string(&overlay).unwrap();
    let cluster = "kind: TFRCluster\nspec:\n  imageRegistry:\n    password: { fromFile: secrets/registry-password.txt }\n---\n";
    std::fs::write(&overlay, format!("{cluster}{text}")).unwrap();
    std::fs::create_dir_all(demo.spec.join("overlays/secrets")).unwrap();
    std::fs::write(demo.spec.join("overlays/secrets/registry-password.txt"), "the-overlay's-registry-password\n").unwrap();
    demo.render("the first render");

    // The cluster no longer names the file itself: its merged spec is the same, every read gives
    // what it gave, but the pull Secret every namespace borrows now holds the overlay's file.
    edit(&demo.spec.join("cluster.yaml"), "    password: { fromFile: secrets/registry-password.txt }\n", "");
    demo.render("the registry password read from the overlay's directory");
}
