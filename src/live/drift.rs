//! `tfrs diff --live`: what applying the tree would change on the cluster, as two trees of files
//! that the Git diff compares (so the format, the masking and the review are the same).
//!
//! Every object labelled as ours for the cluster is listed, one list per kind; an object of the
//! plan that the lists do not hold in the plan's version is read on its own. Every object of the
//! plan is then applied with `dryRun=All` (server-side, field manager `tfrs`, no force). The server's answer is what the
//! object would become: our fields set, every other manager's fields and the server's defaults
//! kept. Comparing it with the live object therefore shows only what we would change: status,
//! defaults and fields another manager owns are not drift. `metadata` fields the server keeps
//! for itself (`resourceVersion`, `managedFields`, `generation`, `uid`, `creationTimestamp`) and
//! `status` are dropped from both sides.
//!
//! Objects the cluster holds, labelled as ours for this cluster ([`owned_selector`]), that the
//! plan does not have are on the live side only (`clusters/<cluster>/cluster-only/…`): what
//! `reconcile --prune` would delete.
//!
//! A Secret's values (what reconcile applies after decrypting a SOPS file) are replaced on both
//! sides by an HMAC under a key made for this run: equal values give equal tokens, and nothing
//! about a value can be learned from its token.

use super::bootstrap::objects::reuse_sealed;
use crate::manifest::to_yaml;
use crate::object::ObjectId;
use crate::reconcile::apply::{Cause, Target, has_owner};
use crate::reconcile::prune::owned_selector;
use crate::reconcile::rollout::{Rollout, strip};
use crate::reconcile::{Failure, readiness_once};
use crate::tree::Files;
use futures::StreamExt as _;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::collections::{BTreeSet, HashMap};
use tokio::time::Instant;

/// The component directory of objects only the cluster has.
pub const CLUSTER_ONLY: &str = "cluster-only";

/// The two sides of the comparison.
#[derive(Debug, Default)]
pub struct Drift {
    /// The live objects, as files at the tree's paths (`clusters/<cluster>/…`).
    pub live: Files,
    /// What applying the tree would make of them, at the same paths.
    pub applied: Files,
    /// Objects whose dry-run apply the server refused, with why (a conflict with another field
    /// manager, an invalid field).
    pub refused: Vec<String>,
    /// Objects with fields we set that another field manager now owns (shown in the diff as
    /// what a forced apply would change), with the server's words.
    pub conflicts: Vec<String>,
    /// The components not ready, from the live objects read ([`readiness_once`]).
    pub unready: Vec<Failure>,
}

/// Compares the plan of `rollout` with the cluster, `concurrency` objects at a time; `secret_key`
/// keys the tokens that stand for Secret values.
///
/// # Errors
///
/// A read the API server failed (after retries); a refused dry run is in [`Drift::refused`].
pub async fn compare(
    target: &Target,
    rollout: &Rollout,
    secret_key: &[u8; 32],
    concurrency: usize,
    deadline: Instant,
) -> Result<Drift, Cause> {
    let cluster = &rollout.plan.cluster;
    let prefix = crate::layout::cluster_dir(cluster);
    let labelled = target.list_labelled(&owned_selector(cluster), deadline).await?;
    let mut listed: HashMap<String, &Value> = labelled.iter().map(|o| (ObjectId::of(o).server_key(), o)).collect();
    let mut work = Vec::new();
    for (c, (component, objects)) in rollout.plan.components.iter().zip(&rollout.objects).enumerate() {
        for (o, (entry, object)) in component.objects.iter().zip(objects).enumerate() {
            let reference = ObjectId::of(object);
            // NB: a list answers in the kind's preferred version; another version is read.
            let live = listed.remove(&reference.server_key()).filter(|l| ObjectId::of(l).api_version == reference.api_version);
            work.push(((c, o), format!("{prefix}/{}", entry.file), object, live.cloned()));
        }
    }
    let compared: Vec<Result<Compared, Cause>> = futures::stream::iter(work)
        .map(|(at, path, object, live)| async move { Ok((at, path, one(target, object, live, deadline).await?)) })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut drift = Drift::default();
    let mut lives: Vec<Vec<Option<Value>>> = rollout.objects.iter().map(|o| vec![None; o.len()]).collect();
    for result in compared {
        let ((c, o), path, One { live, applied, conflict }) = result?;
        lives[c][o].clone_from(&live);
        drift.conflicts.extend(conflict);
        let live = live.map(|mut live| {
            tidy(&mut live, secret_key);
            live
        });
        match applied {
            Ok(mut applied) => {
                tidy(&mut applied, secret_key);
                drift.applied.insert(path.clone(), yaml(&applied));
            }
            Err(why) => {
                drift.refused.push(why);
                // NB: the refusal is reported; the object shows no diff of its own.
                if let Some(live) = &live {
                    drift.applied.insert(path.clone(), yaml(live));
                }
            }
        }
        if let Some(live) = live {
            drift.live.insert(path, yaml(&live));
        }
    }
    let lives: Vec<Vec<Option<&Value>>> = lives.iter().map(|c| c.iter().map(Option::as_ref).collect()).collect();
    drift.unready = readiness_once(rollout, &lives).map_err(|e| Cause::Other(e.to_string()))?;
    cluster_only(rollout, &labelled, secret_key, &mut drift.live);
    drift.refused.sort();
    drift.conflicts.sort();
    Ok(drift)
}

/// Adds the objects labelled as ours for this cluster (`labelled`) that the plan does not have,
/// on the live side only; what a controller made for an owner is not ours.
fn cluster_only(rollout: &Rollout, labelled: &[Value], secret_key: &[u8; 32], live: &mut Files) {
    let prefix = crate::layout::cluster_dir(&rollout.plan.cluster);
    let keep: BTreeSet<String> = rollout.objects.iter().flatten().map(|o| ObjectId::of(o).server_key()).collect();
    for object in labelled.iter().filter(|o| !has_owner(o)) {
        let reference = ObjectId::of(object);
        if keep.contains(&reference.server_key()) {
            continue;
        }
        let mut object = object.clone();
        tidy(&mut object, secret_key);
        let file = format!(
            "{}-{}{}.yaml",
            reference.kind.to_lowercase(),
            reference.namespace().map(|n| format!("{n}.")).unwrap_or_default(),
            reference.name
        );
        live.insert(format!("{prefix}/{CLUSTER_ONLY}/{file}"), yaml(&object));
    }
}

/// One object's comparison, with its place in the plan (component, object) and its path.
type Compared = ((usize, usize), String, One);

/// What one object's comparison found: the live object, what the apply would make of it (or
/// why the server refused), and a note on fields another manager owns.
struct One {
    live: Option<Value>,
    applied: Result<Value, String>,
    conflict: Option<String>,
}

/// Reads one object (unless a list gave it: `listed`) and dry-runs its apply. A refusal because the object's namespace or kind
/// does not exist yet (the plan creates them first) means it would be created as rendered. A
/// conflict (a field we set that another manager took over, as `kubectl edit` does) is dry-run
/// again with force, so that the diff names the field, and noted.
async fn one(target: &Target, object: &Value, listed: Option<Value>, deadline: Instant) -> Result<One, Cause> {
    let reference = ObjectId::of(object);
    let live = match listed {
        Some(live) => Some(live),
        None => target.get(&reference, deadline).await?,
    };
    let mut desired = object.clone();
    if let Some(live) = &live {
        reuse_sealed(&mut desired, live);
    }
    let mut conflict = None;
    let applied = match target.dry_run(&desired, false, deadline).await {
        Ok(applied) => Ok(applied),
        Err(cause) if live.is_none() && (cause.is_not_found() || matches!(cause, Cause::NotServed { .. })) => Ok(desired),
        Err(cause) if cause.is_connection() => return Err(cause),
        Err(cause @ Cause::Status { code: 409, .. }) => {
            conflict = Some(format!("`{reference}`: {cause}; `tfrs reconcile` takes them back only with `--force-conflicts`"));
            target.dry_run(&desired, true, deadline).await.map_err(|cause| format!("`{reference}`: {cause}"))
        }
        Err(cause) => Err(format!("`{reference}`: {cause}")),
    };
    Ok(One { live, applied, conflict })
}

fn yaml(object: &Value) -> Vec<u8> {
    to_yaml(object).unwrap_or_default().into_bytes()
}

/// Drops what the server keeps for itself, and masks Secret values.
fn tidy(object: &mut Value, secret_key: &[u8; 32]) {
    strip(object);
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
        && metadata.get("annotations").and_then(Value::as_object).is_some_and(serde_json::Map::is_empty)
    {
        metadata.remove("annotations");
    }
    if object.get("kind").and_then(Value::as_str) != Some("Secret") || object.get("apiVersion").and_then(Value::as_str) != Some("v1") {
        return;
    }
    for field in ["data", "stringData"] {
        if let Some(values) = object.get_mut(field).and_then(Value::as_object_mut) {
            for (key, value) in values.iter_mut() {
                let text = value.as_str().unwrap_or_default();
                let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret_key).expect("HMAC takes any key length");
                mac.update(key.as_bytes());
                mac.update(&[0]);
                mac.update(text.as_bytes());
                let digest = mac.finalize().into_bytes();
                *value = Value::String(format!("<secret {}>", digest.iter().take(6).map(|b| format!("{b:02x}")).collect::<String>()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_values_are_tokens_that_only_tell_equal_from_different() {
        let secret = |password: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "resourceVersion": "7"}, "data": {"password": password}});
        let (mut a, mut b, mut c) = (secret("aHVudGVyMg=="), secret("aHVudGVyMg=="), secret("c2VjcmV0"));
        for object in [&mut a, &mut b, &mut c] {
            tidy(object, &[7; 32]);
        }
        assert_eq!(a, b);
        assert_ne!(a["data"]["password"], c["data"]["password"]);
        let token = a["data"]["password"].as_str().expect("a token");
        assert!(token.starts_with("<secret ") && !token.contains("aHVudGVyMg"), "{token}");
        assert!(a["metadata"].get("resourceVersion").is_none());
        let mut other = secret("aHVudGVyMg==");
        tidy(&mut other, &[8; 32]);
        assert_ne!(a["data"]["password"], other["data"]["password"], "a token depends on the run's key");
    }
}
