//! Zero-diff re-render of the encrypted files: SOPS ciphertext is new on every encryption, so
//! an unchanged file is kept byte for byte when its keyed fingerprint says it still holds the
//! same values for the same recipients.
//!
//! The fingerprints live next to the files in [`FILE_NAME`] (file name -> fingerprint). Each is
//! `FingerprintKey::fingerprint` (keyed by the master key, so the committed fingerprint tells
//! nothing about the values) over the values as a JSON map, bound to the file's name, the sorted
//! recipients and the SHA-256 of the file's whole text as written: a file changed in any way
//! since (edited with `sops`, re-encrypted by hand, a line lost in a merge, a damaged `ENC[…]`
//! value) no longer matches and is encrypted afresh.

use super::variables::{Values, to_map};
use crate::secrets::fingerprint::Binding;
use crate::secrets::{MasterKey, sops};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// The fingerprints file, next to the encrypted files.
pub const FILE_NAME: &str = ".tfrs-infra-fingerprints.json";

/// The fingerprint of `values` in file `name`, encrypted for `recipients` as `text`.
#[must_use]
pub fn fingerprint(key: &MasterKey, name: &str, values: &Values, recipients: &[String], text: &str) -> String {
    let mut sorted: Vec<&str> = recipients.iter().map(|r| r.trim()).collect();
    sorted.sort_unstable();
    let sealer = sorted.join("\n");
    let binding = Binding { backend: "sops-age", sealer: &sealer, scope: "file", namespace: "infra", name };
    let plaintext = zeroize::Zeroizing::new(to_map(values).to_string());
    key.fingerprint_key().fingerprint(&binding, &text_digest(text), plaintext.as_bytes())
}

/// The previous text of file `name` when it can be kept: it is a SOPS file for the same
/// recipients whose recorded fingerprint matches `values`.
#[must_use]
pub fn reusable<'a>(
    key: &MasterKey,
    name: &str,
    values: &Values,
    recipients: &[String],
    previous: Option<&'a str>,
    recorded: &BTreeMap<String, String>,
) -> Option<&'a str> {
    let text = previous?;
    let document: Json = serde_saphyr::from_str(text).ok()?;
    if !sops::is_sops(&document) {
        return None;
    }
    let mut wanted: Vec<&str> = recipients.iter().map(|r| r.trim()).collect();
    wanted.sort_unstable();
    if sops::recipients_of(&document) != wanted {
        return None;
    }
    (recorded.get(name)? == &fingerprint(key, name, values, recipients, text)).then_some(text)
}

/// The SHA-256 of a file's text, in hex (what its fingerprint is bound to).
fn text_digest(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::spec::tests::spec;
    use crate::infra::variables;

    #[test]
    fn a_file_is_kept_only_while_values_recipients_and_file_are_unchanged() {
        let key = MasterKey::from_bytes([5; 32]);
        let mut spec = spec();
        let values = variables::infra(&key, &spec);
        let recipients = spec.sops.age_recipients.clone();
        let mut rng = rand::rng();
        let document = sops::encrypt_with(&to_map(&values), &recipients, "2026-01-02T03:04:05Z", sops::Rule::Every, &mut rng).unwrap();
        let text = crate::manifest::to_yaml(&document).unwrap();
        let mac = document["sops"]["mac"].as_str().unwrap().to_owned();
        let recorded: BTreeMap<String, String> = [("f".to_owned(), fingerprint(&key, "f", &values, &recipients, &text))].into();
        assert_eq!(reusable(&key, "f", &values, &recipients, Some(&text), &recorded), Some(text.as_str()));
        // Another value, another key, another name, another recipient list, an edited file: no.
        spec.rotation.insert("DB_PASSWORD".to_owned(), 1);
        assert_eq!(reusable(&key, "f", &variables::infra(&key, &spec), &recipients, Some(&text), &recorded), None);
        assert_eq!(reusable(&MasterKey::from_bytes([6; 32]), "f", &values, &recipients, Some(&text), &recorded), None);
        assert_eq!(reusable(&key, "g", &values, &recipients, Some(&text), &recorded), None);
        let more = vec![recipients[0].clone(), "age1763reswr756hamsur7pj5sq2slkhpr9zenkp94ua0sjallefrqqsgwe89c".to_owned()];
        assert_eq!(reusable(&key, "f", &values, &more, Some(&text), &recorded), None);
        let edited = text.replace(&mac, "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]");
        assert_eq!(reusable(&key, "f", &values, &recipients, Some(&edited), &recorded), None);
        // A line lost in a merge, with the MAC left as it was: no.
        let lost: String = text.lines().filter(|l| !l.starts_with("DB_PASSWORD:")).map(|l| format!("{l}\n")).collect();
        assert_ne!(lost, text, "the file has a DB_PASSWORD line");
        assert_eq!(reusable(&key, "f", &values, &recipients, Some(&lost), &recorded), None);
        // The fingerprint does not hold the values.
        for (_, value) in &values.0 {
            assert!(!recorded["f"].contains(value.as_str()));
        }
    }
}
