//! `tfrs unseal`: decrypt a SealedSecret (with the controller's private key) or a SOPS file (with
//! an age identity) and print the plaintext Secret. Prints secrets to stdout by design.

use super::Status;
use super::args::UnsealArgs;
use crate::secrets::{PrivateKey, sealed, sops};
use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value as Json};
use std::io::Write;
use zeroize::Zeroizing;

/// Runs `tfrs unseal`: every document of FILE is opened and printed as a plaintext `Secret`.
pub fn run(args: &UnsealArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let name = args.file.display().to_string();
    let text = std::fs::read_to_string(&args.file).with_context(|| format!("cannot read `{name}`"))?;
    let documents = crate::spec::yaml::parse(0, &text).map_err(|errors| {
        let first = errors.first().map(|e| format!("{}:{}: {}", e.origin.line, e.origin.column, e.message)).unwrap_or_default();
        anyhow::anyhow!("`{name}` is not YAML or JSON: {first}")
    })?;
    if documents.is_empty() {
        bail!("`{name}` holds no document");
    }
    let private_key = match &args.private_key {
        Some(path) => {
            let pem =
                Zeroizing::new(std::fs::read_to_string(path).with_context(|| format!("cannot read private key `{}`", path.display()))?);
            Some(PrivateKey::from_pem(&pem).with_context(|| format!("cannot use private key `{}`", path.display()))?)
        }
        None => None,
    };
    let identity = match &args.age_identity {
        Some(path) => {
            Some(Zeroizing::new(std::fs::read_to_string(path).with_context(|| format!("cannot read age identity `{}`", path.display()))?))
        }
        None => None,
    };
    let mut out = Vec::new();
    for (index, document) in documents.iter().enumerate() {
        let document = document.to_json();
        let at = if documents.len() > 1 { format!("`{name}` (document {})", index + 1) } else { format!("`{name}`") };
        let secret = if sops::is_sops(&document) {
            let Some(identity) = &identity else { bail!("{at} is a SOPS file: pass `--age-identity KEY`") };
            sops::decrypt(&document, identity).with_context(|| format!("cannot decrypt {at}"))?
        } else if document.get("kind").and_then(Json::as_str) == Some("SealedSecret") {
            let Some(key) = &private_key else { bail!("{at} is a SealedSecret: pass `--private-key KEY.pem`") };
            let opened = sealed::unseal(key, &document).with_context(|| format!("cannot unseal {at}"))?;
            plain_secret(&opened)
        } else {
            bail!("{at} is neither a SealedSecret nor a SOPS-encrypted file");
        };
        out.push(secret);
    }
    let text = Zeroizing::new(crate::manifest::to_yaml_stream(&out).context("cannot write YAML")?);
    stdout.write_all(text.as_bytes())?;
    Ok(Status::Success)
}

/// The Secret a SealedSecret stands for: the template's metadata and type, UTF-8 values in
/// `stringData`, others base64 in `data`.
fn plain_secret(opened: &sealed::Unsealed) -> Json {
    let template_meta = opened.template.get("metadata").and_then(Json::as_object).cloned().unwrap_or_default();
    let mut metadata = Map::new();
    metadata.insert("name".to_owned(), Json::String(opened.name.clone()));
    metadata.insert("namespace".to_owned(), Json::String(opened.namespace.clone()));
    for (key, value) in template_meta {
        if key != "name" && key != "namespace" && key != "creationTimestamp" {
            metadata.insert(key, value);
        }
    }
    let mut secret = Map::new();
    secret.insert("apiVersion".to_owned(), Json::String("v1".to_owned()));
    secret.insert("kind".to_owned(), Json::String("Secret".to_owned()));
    secret.insert("metadata".to_owned(), Json::Object(metadata));
    secret.insert("type".to_owned(), opened.template.get("type").cloned().unwrap_or_else(|| Json::String("Opaque".to_owned())));
    let (mut text, mut binary) = (Map::new(), Map::new());
    for (key, value) in &opened.data {
        match std::str::from_utf8(value) {
            Ok(utf8) => text.insert(key.clone(), Json::String(utf8.to_owned())),
            Err(_) => binary.insert(key.clone(), Json::String(STANDARD.encode(value.as_slice()))),
        };
    }
    if !binary.is_empty() {
        secret.insert("data".to_owned(), Json::Object(binary));
    }
    if !text.is_empty() {
        secret.insert("stringData".to_owned(), Json::Object(text));
    }
    Json::Object(secret)
}
