//! How a rendered object is shown in a diff (pure): sealed values and their metadata replaced
//! by fixed markers, so that no ciphertext (and no plaintext) ever shows, and the checksum
//! annotations of pod templates folded.

use crate::secrets::fingerprint::ANNOTATION;
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// One sealed value: its keyed fingerprint, when the object carries them, and its ciphertext.
pub(crate) struct Sealed {
    pub(crate) fingerprint: Option<String>,
    pub(crate) ciphertext: String,
}

/// Masks sealed values and their metadata with fixed markers, so ciphertext never shows in a
/// diff; returns the sealed values.
pub(crate) fn mask(object: &Json) -> (Json, BTreeMap<String, Sealed>) {
    let mut masked = object.clone();
    let fingerprints: BTreeMap<String, String> = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Json::as_str)
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    if let Some(value) = masked.pointer_mut("/metadata/annotations").and_then(|a| a.get_mut(ANNOTATION)) {
        *value = Json::String("<fingerprints>".to_owned());
    }
    let mut sealed = BTreeMap::new();
    let mut take = |map: Option<&mut Json>, only_sops: bool| {
        let Some(Json::Object(map)) = map else { return };
        for (key, value) in map.iter_mut() {
            let Json::String(text) = value else { continue };
            if only_sops && !text.starts_with("ENC[") {
                continue;
            }
            sealed.insert(key.clone(), Sealed { fingerprint: fingerprints.get(key).cloned(), ciphertext: text.clone() });
            *value = Json::String("<sealed>".to_owned());
        }
    };
    if object.get("kind").and_then(Json::as_str) == Some("SealedSecret") {
        take(masked.pointer_mut("/spec/encryptedData"), false);
    }
    if masked.get("sops").is_some() {
        take(masked.get_mut("data"), true);
        take(masked.get_mut("stringData"), true);
        masked["sops"] = Json::String("<sops metadata>".to_owned());
    }
    mask_stray_ciphertext(&mut masked);
    (masked, sealed)
}

/// Replaces the values of a pod template's `checksum/*` annotations with `<checksum>`: they
/// change whenever a config or credential does, and the review's "rolls" line says so once.
pub(crate) fn fold_checksums(mut object: Json) -> Json {
    if let Some(Json::Object(notes)) = object.pointer_mut("/spec/template/metadata/annotations") {
        for (key, value) in notes.iter_mut() {
            if key.starts_with("checksum/") {
                *value = Json::String("<checksum>".to_owned());
            }
        }
    }
    object
}

/// Masks any other SOPS ciphertext, wherever it is (it is noise, and never worth showing).
fn mask_stray_ciphertext(value: &mut Json) {
    match value {
        Json::String(text) if text.starts_with("ENC[AES256_GCM,") => *text = "<sealed>".to_owned(),
        Json::Array(items) => items.iter_mut().for_each(mask_stray_ciphertext),
        Json::Object(map) => map.values_mut().for_each(mask_stray_ciphertext),
        _ => {}
    }
}
