//! Secrets checked by outside implementations: kubesealpy (Python, OpenSSL) opens our
//! SealedSecrets in every scope; the real `sops -d` decrypts our SOPS files and verifies their
//! MAC; `age -d` opens the wrapped data key; a blob sealed by Python `cryptography` opens with
//! `tfrs unseal`. A missing tool skips with a note, except under `CI=true` where it fails.

mod common;

use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tfrs_gitops::manifest::to_yaml;
use tfrs_gitops::secrets::fingerprint::FingerprintKey;
use tfrs_gitops::secrets::{Certificate, MasterKey, PlainSecret, Scope, Sealer, seal};
use tfrs_gitops::spec::model::Generate;
use zeroize::Zeroizing;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn demo(file: &str) -> PathBuf {
    root().join("fixtures/demo/keys").join(file)
}

fn tfrs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tfrs")).args(args).current_dir(root()).output().expect("the tfrs binary runs")
}

fn text(output: &Output) -> String {
    format!("exit {:?}\n{}{}", output.status.code(), String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs() as i64
}

fn master() -> MasterKey {
    MasterKey::from_hex(&std::fs::read_to_string(demo("master.key")).expect("demo master key")).expect("valid")
}

/// A Secret of derived values, as the render stage would build it.
fn plain(name: &str, scope: Scope) -> (PlainSecret, BTreeMap<String, String>) {
    let key = master();
    let mut expected = BTreeMap::new();
    expected.insert("password".to_owned(), key.derive(&format!("tenant/acme/{name}/password"), &Generate::default()).to_string());
    expected.insert("username".to_owned(), "db-owner-7".to_owned());
    expected.insert("multi".to_owned(), "line one\nline: two\n".to_owned());
    let data = expected.iter().map(|(k, v)| (k.clone(), Zeroizing::new(v.as_bytes().to_vec()))).collect();
    let secret = PlainSecret {
        name: name.to_owned(),
        namespace: "tenant-acme".to_owned(),
        kind: "Opaque".to_owned(),
        labels: BTreeMap::from([("app.kubernetes.io/managed-by".to_owned(), "tfrs".to_owned())]),
        annotations: BTreeMap::new(),
        data,
        scope,
    };
    (secret, expected)
}

fn certificate() -> Certificate {
    Certificate::from_pem(&std::fs::read_to_string(demo("sealed-secrets.pem")).expect("demo cert"), now()).expect("valid")
}

fn recipient() -> String {
    let identity = std::fs::read_to_string(demo("age.txt")).expect("demo age identity");
    identity.lines().find_map(|l| l.strip_prefix("# public key: ")).expect("public key comment").trim().to_owned()
}

fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write");
    path
}

fn sealed_file(dir: &Path, name: &str, scope: Scope) -> (PathBuf, BTreeMap<String, String>) {
    let (secret, expected) = plain(name, scope);
    let sealer = Sealer::SealedSecrets { certificate: certificate() };
    let object = seal(&secret, None, &sealer, Some(&master().fingerprint_key()), &mut rand::rng()).expect("seal");
    let yaml = to_yaml(&object).expect("yaml");
    for value in expected.values() {
        assert!(!yaml.contains(value.as_str()), "plaintext in the sealed file");
    }
    (write(dir, &format!("{name}.yaml"), &yaml), expected)
}

fn sops_file(dir: &Path) -> (PathBuf, Json, BTreeMap<String, String>) {
    let (secret, expected) = plain("db", Scope::Strict);
    let sealer = Sealer::SopsAge { recipients: vec![recipient()], lastmodified: "2025-01-02T03:04:05Z".to_owned() };
    let fingerprint_key: FingerprintKey = master().fingerprint_key();
    let object = seal(&secret, None, &sealer, Some(&fingerprint_key), &mut rand::rng()).expect("seal");
    let yaml = to_yaml(&object).expect("yaml");
    for value in expected.values() {
        assert!(!yaml.contains(value.as_str()), "plaintext in the SOPS file");
    }
    (write(dir, "db.sops.yaml", &yaml), object, expected)
}

const KUBESEALPY_CHECK: &str = r#"
import json, sys
from kubesealpy import Unsealer, SealedSecret, DecryptionError
unsealer = Unsealer.from_private_key_file(sys.argv[1])
out = {}
for path in sys.argv[2:]:
    text = open(path).read()
    secret = unsealer.unseal(SealedSecret.from_yaml(text))
    values = {k: v.decode() for k, v in secret.get_data_decoded().items()}
    # The same blobs under another name: only strict and namespace-wide scopes must refuse.
    renamed = SealedSecret.from_yaml(text.replace("name: " + path.split("/")[-1][:-5] + "\n", "name: renamed\n", 1))
    try:
        unsealer.unseal(renamed)
        renamed_opens = True
    except DecryptionError:
        renamed_opens = False
    out[path] = {"values": values, "renamed_opens": renamed_opens}
print(json.dumps(out))
"#;

#[test]
fn kubesealpy_opens_our_sealed_secrets_in_every_scope() {
    let Some(python) = common::python_with("kubesealpy") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [("strict", Scope::Strict, false), ("nswide", Scope::NamespaceWide, true), ("clusterwide", Scope::ClusterWide, true)];
    let mut files = Vec::new();
    for (name, scope, renamed_opens) in cases {
        let (path, expected) = sealed_file(dir.path(), name, scope);
        files.push((path, expected, renamed_opens));
    }
    let output = Command::new(python)
        .args(["-c", KUBESEALPY_CHECK])
        .arg(demo("sealed-secrets.key"))
        .args(files.iter().map(|(p, _, _)| p))
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", text(&output));
    let report: Json = serde_json::from_slice(&output.stdout).expect("JSON report");
    for (path, expected, renamed_opens) in &files {
        let entry = &report[path.to_string_lossy().as_ref()];
        let values: BTreeMap<String, String> = serde_json::from_value(entry["values"].clone()).expect("values");
        assert_eq!(&values, expected, "{}", path.display());
        assert_eq!(entry["renamed_opens"], json!(renamed_opens), "{}", path.display());
    }
}

#[test]
fn tfrs_unseal_opens_our_sealed_secrets_and_refuses_a_wrong_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, scope) in [("strict", Scope::Strict), ("nswide", Scope::NamespaceWide), ("clusterwide", Scope::ClusterWide)] {
        let (path, expected) = sealed_file(dir.path(), name, scope);
        let path = path.to_string_lossy().into_owned();
        let output = tfrs(&["unseal", "--private-key", "fixtures/demo/keys/sealed-secrets.key", &path]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        let printed = tfrs_gitops::spec::yaml::parse(0, &String::from_utf8_lossy(&output.stdout)).expect("YAML")[0].to_json();
        assert_eq!(printed["kind"], "Secret");
        assert_eq!(printed["metadata"]["name"], name);
        let values: BTreeMap<String, String> = serde_json::from_value(printed["stringData"].clone()).expect("stringData");
        assert_eq!(values, expected);
        let wrong = tfrs(&["unseal", "--private-key", "fixtures/keys-test/rsa-1024.key", &path]);
        assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
        for value in expected.values() {
            assert!(!text(&wrong).contains(value.as_str()), "a value in an error");
        }
    }
}

const PYTHON_SEALER: &str = r#"
import os, sys, base64, json
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
cert = x509.load_pem_x509_certificate(open(sys.argv[1], "rb").read())
namespace, name = sys.argv[2], sys.argv[3]
def seal(value):
    key = os.urandom(32)
    label = (namespace + "/" + name).encode()
    wrapped = cert.public_key().encrypt(key, padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=label))
    blob = len(wrapped).to_bytes(2, "big") + wrapped + AESGCM(key).encrypt(b"\0" * 12, value, None)
    return base64.b64encode(blob).decode()
meta = {"name": name, "namespace": namespace, "creationTimestamp": None}
print(json.dumps({"kind": "SealedSecret", "apiVersion": "bitnami.com/v1alpha1", "metadata": meta,
  "spec": {"template": {"metadata": meta, "type": "Opaque"},
           "encryptedData": {"token": seal(b"from-python"), "raw": seal(b"\xff\x00")}}}, indent=2))
"#;

#[test]
fn tfrs_unseal_opens_a_kubeseal_style_file_sealed_by_python_cryptography() {
    let Some(python) = common::python_with("cryptography") else { return };
    let output = Command::new(python)
        .args(["-c", PYTHON_SEALER])
        .arg(demo("sealed-secrets.pem"))
        .args(["apps", "api"])
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", text(&output));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "api.json", &String::from_utf8_lossy(&output.stdout));
    let opened = tfrs(&["unseal", "--private-key", "fixtures/demo/keys/sealed-secrets.key", &path.to_string_lossy()]);
    assert_eq!(opened.status.code(), Some(0), "{}", text(&opened));
    let printed = tfrs_gitops::spec::yaml::parse(0, &String::from_utf8_lossy(&opened.stdout)).expect("YAML")[0].to_json();
    assert_eq!(printed["stringData"]["token"], "from-python");
    assert_eq!(printed["data"]["raw"], "/wA=");
    assert_eq!(printed["metadata"]["namespace"], "apps");
    assert!(printed["metadata"].get("creationTimestamp").is_none());
}

#[test]
fn real_sops_decrypts_our_file_with_its_mac_and_rejects_tampering() {
    let Some(sops) = common::tool_or_skip("sops") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _, expected) = sops_file(dir.path());
    let run = |file: &Path| {
        Command::new(&sops)
            .args(["--disable-version-check", "--decrypt", "--output-type", "json"])
            .arg(file)
            .env("SOPS_AGE_KEY_FILE", demo("age.txt"))
            .env_remove("SOPS_AGE_KEY")
            .output()
            .expect("sops runs")
    };
    let output = run(&path);
    assert!(output.status.success(), "{}", text(&output));
    let decrypted: Json = serde_json::from_slice(&output.stdout).expect("JSON");
    let values: BTreeMap<String, String> = serde_json::from_value(decrypted["stringData"].clone()).expect("stringData");
    assert_eq!(values, expected);
    assert_eq!(decrypted["metadata"]["labels"]["app.kubernetes.io/managed-by"], "tfrs");
    // Changing an unencrypted field (covered by the MAC) must fail in sops, and in tfrs unseal.
    let original = std::fs::read_to_string(&path).expect("read");
    assert!(original.contains("managed-by: tfrs"), "{original}");
    let tampered = write(dir.path(), "tampered.yaml", &original.replacen("managed-by: tfrs", "managed-by: evil", 1));
    let output = run(&tampered);
    assert!(!output.status.success(), "sops accepted a tampered file");
    assert!(text(&output).contains("MAC mismatch"), "{}", text(&output));
}

#[test]
fn tfrs_unseal_decrypts_our_sops_file_and_rejects_tampering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _, expected) = sops_file(dir.path());
    let output = tfrs(&["unseal", "--age-identity", "fixtures/demo/keys/age.txt", &path.to_string_lossy()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let printed = tfrs_gitops::spec::yaml::parse(0, &String::from_utf8_lossy(&output.stdout)).expect("YAML")[0].to_json();
    let values: BTreeMap<String, String> = serde_json::from_value(printed["stringData"].clone()).expect("stringData");
    assert_eq!(values, expected);
    let original = std::fs::read_to_string(&path).expect("read");
    let tampered = write(dir.path(), "tampered.yaml", &original.replacen("managed-by: tfrs", "managed-by: evil", 1));
    let output = tfrs(&["unseal", "--age-identity", "fixtures/demo/keys/age.txt", &tampered.to_string_lossy()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("MAC mismatch"), "{}", text(&output));
    // The SealedSecret key does not open SOPS files, and says what to pass instead.
    let output = tfrs(&["unseal", "--private-key", "fixtures/demo/keys/sealed-secrets.key", &path.to_string_lossy()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("--age-identity"), "{}", text(&output));
}

#[test]
fn age_opens_the_wrapped_data_key() {
    let Some(age) = common::tool_or_skip("age") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, object, _) = sops_file(dir.path());
    let enc = object["sops"]["age"][0]["enc"].as_str().expect("enc");
    let path = write(dir.path(), "key.age", enc);
    let output = Command::new(age).arg("-d").arg("-i").arg(demo("age.txt")).arg(&path).output().expect("age runs");
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(output.stdout.len(), 32, "a 32-byte data key");
}

/// A sealing certificate that expires within 30 days is a warning at render time (the render
/// succeeds and seals with it); one with longer to run is not.
#[test]
fn a_certificate_close_to_expiry_warns() {
    let Some(openssl) = common::tool_or_skip("openssl") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let specs = dir.path().join("demo");
    common::copy_dir(&root().join("fixtures/demo"), &specs);
    let cert = specs.join("keys/sealed-secrets.pem");
    let make = |days: &str| {
        let status = Command::new(&openssl)
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=soon", "-days", days, "-keyout"])
            .arg(dir.path().join("key.pem"))
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("openssl");
        assert!(status.status.success(), "{}", text(&status));
    };
    make("10");
    let spec = specs.display().to_string();
    let out = dir.path().join("out").display().to_string();
    let output = tfrs(&["render", &spec, "--master-key-file", "fixtures/demo/keys/master.key", "--out", &out]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let said = |days: u32| {
        stderr.contains(&format!(
            "keys/sealed-secrets.pem` (spec.sealing.certFile of cluster `demo`): the certificate expires in {days} days"
        ))
    };
    assert!(said(9) || said(10), "{stderr}");
    assert!(stderr.contains("kubeseal --fetch-cert"), "{stderr}");
    make("1000");
    let output = tfrs(&["render", &spec, "--master-key-file", "fixtures/demo/keys/master.key", "--out", &out]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("warning"), "{}", text(&output));
}
