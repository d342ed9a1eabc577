//! Readiness read from one watch per kind instead of a GET per object per poll.
//!
//! The first time a component applies or waits on an object of a kind, the [`Observer`] lists
//! that kind in every namespace, only the objects labelled as ours for the cluster
//! ([`owned_selector`](super::prune::owned_selector)), and then watches them, keeping each
//! object's readiness verdict and digest (never the whole object). A waiting component registers a bell per object and is woken when one of its
//! objects changes, so noticing readiness costs no request and no polling delay.
//!
//! The same watches tell an apply what the object was before ([`Observer::before`]), so that
//! the apply needs no read first once its kind is listed. An object another writer created or
//! changed a moment before our apply, which the watch has not delivered yet, or an object that
//! exists without our labels, is then counted as created or configured rather than configured
//! or unchanged: the counts are a report, and the apply itself is the same.
//!
//! A verdict is used only when it describes the object at least as new as the component's own
//! apply left it ([`Since`]): the watch may not have delivered that write yet, and an older
//! "ready" (the previous generation's status) must not count. Where the watch cannot answer
//! (the kind is still being listed, the user may not list or watch it cluster-wide, the server
//! does not serve watches, or the watch keeps failing), the component reads the object itself,
//! as before ([`Seen::Unwatched`]).

use super::apply::{Before, Target, digest};
use super::wait::{self, Readiness};
use crate::object::ObjectId;
use futures::StreamExt as _;
use kube::api::{Api, DynamicObject, ListParams, WatchEvent, WatchParams};
use kube::discovery::ApiResource;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// A readiness verdict and the object's conditions (`Type=Status (Reason): message`).
pub(super) type Verdict = (Readiness, Vec<String>);

/// Consecutive failed watch attempts after which a kind falls back to reads.
const WATCH_ATTEMPTS: u32 = 5;

/// How long one watch request lasts before the server ends it (it is then resumed).
const WATCH_SECONDS: u32 = 290;

/// The version of an object a component's apply left; a verdict must be at least this new.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Since {
    resource_version: Option<u64>,
    generation: Option<i64>,
    /// Whether there is a version to compare with (false: any verdict will do).
    applied: bool,
}

impl Since {
    /// The version of `object` as the API server answered an apply with it.
    pub(super) fn of(object: &Value) -> Since {
        let (resource_version, generation) = versions(object);
        Since { resource_version, generation, applied: true }
    }

    /// Any version (nothing was applied: verify only).
    pub(super) fn any() -> Since {
        Since::default()
    }
}

/// The resourceVersion (when it is a number, as etcd revisions are) and the generation.
fn versions(object: &Value) -> (Option<u64>, Option<i64>) {
    let resource_version = object.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
    (resource_version, object.pointer("/metadata/generation").and_then(Value::as_i64))
}

/// What the watch knows about one object.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Seen {
    /// Its verdict, as new as asked or newer.
    Verdict(Verdict),
    /// The watch has not delivered the object (or the applied version of it) yet.
    NotYet(String),
    /// The watch cannot say: read the object.
    Unwatched,
}

/// Where a kind's watch stands. Its verdicts are trusted only while a watch is up: between a
/// watch ending and the next one starting, a change could be missed for as long as that lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Listing, or between two watches.
    Listing,
    /// A watch is up: the verdicts follow every change (with the watch's small lag).
    Synced,
    /// Given up: the objects are read.
    Unavailable,
}

/// `(namespace or "", name)`.
type Key = (String, String);

struct Entry {
    resource_version: Option<u64>,
    generation: Option<i64>,
    verdict: Verdict,
    /// [`digest`] of the object: how an apply changed it, without reading it first.
    digest: u64,
}

/// One watched kind: its verdicts and the bells of the components waiting on its objects.
struct Watched {
    namespaced: bool,
    state: Mutex<KindState>,
}

struct KindState {
    phase: Phase,
    objects: HashMap<Key, Entry>,
    bells: HashMap<Key, Vec<Weak<Notify>>>,
}

impl Watched {
    fn lock(&self) -> MutexGuard<'_, KindState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves to `phase`, waking every waiter (what they should read changed).
    fn enter(&self, phase: Phase) {
        let mut state = self.lock();
        state.phase = phase;
        let bells: Vec<Weak<Notify>> = state.bells.values().flatten().cloned().collect();
        drop(state);
        ring(&bells);
    }

    /// `answer` of what the watch holds of `reference` (`None`: not there), when the watch can
    /// answer: it is up, and the object names its namespace. NB: a namespaced object without a
    /// namespace goes to the client's default namespace, which the watch cannot name.
    fn synced<T>(&self, reference: &ObjectId, answer: impl FnOnce(Option<&Entry>) -> T) -> Option<T> {
        if self.namespaced && reference.namespace().is_none() {
            return None;
        }
        let state = self.lock();
        (state.phase == Phase::Synced).then(|| answer(state.objects.get(&key_of(reference))))
    }

    /// Replaces every verdict with a fresh list's (trusted once the watch that follows is up).
    fn replace(&self, objects: HashMap<Key, Entry>) {
        self.lock().objects = objects;
    }

    /// Records a change (`None`: deleted) and wakes the object's waiters.
    fn record(&self, key: Key, entry: Option<Entry>) {
        let mut state = self.lock();
        match entry {
            Some(entry) => state.objects.insert(key.clone(), entry),
            None => state.objects.remove(&key),
        };
        let bells = state.bells.get_mut(&key).map(|b| {
            b.retain(|w| w.strong_count() > 0);
            b.clone()
        });
        drop(state);
        ring(&bells.unwrap_or_default());
    }
}

fn ring(bells: &[Weak<Notify>]) {
    for bell in bells.iter().filter_map(Weak::upgrade) {
        // NB: `notify_one` keeps a wake-up for a component that is not waiting yet, so a change
        // between its check and its wait is not lost.
        bell.notify_one();
    }
}

/// The watches of one rollout, one per kind, stopped when it is dropped.
pub(super) struct Observer {
    /// The label selector of the objects watched: ours, for this cluster.
    selector: String,
    kinds: Mutex<HashMap<(String, String), Arc<Watched>>>,
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
}

impl Observer {
    /// Watches only objects matching `selector` (every object a plan holds carries its labels).
    pub(super) fn new(selector: String) -> Self {
        Observer { selector, kinds: Mutex::new(HashMap::new()), tasks: Mutex::new(Vec::new()) }
    }

    /// Rings `bell` whenever `reference` changes, watching its kind from now on if no one did.
    /// Returns false when the kind is not known to the target yet (nothing read or applied of
    /// it): the caller reads the object and follows it later.
    pub(super) fn follow(&self, target: &Target, reference: &ObjectId, bell: &Arc<Notify>) -> bool {
        let Some(watched) = self.watch(target, reference) else { return false };
        watched.lock().bells.entry(key_of(reference)).or_default().push(Arc::downgrade(bell));
        true
    }

    /// The watch of `reference`'s kind, started now if no one did; `None` when the kind is not
    /// known to the target yet.
    fn watch(&self, target: &Target, reference: &ObjectId) -> Option<Arc<Watched>> {
        let (resource, namespaced) = target.known_resource(&reference.api_version, &reference.kind)?;
        let kind = (reference.api_version.clone(), reference.kind.clone());
        let mut kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        let watched = kinds.entry(kind).or_insert_with(|| {
            let watched = Arc::new(Watched {
                namespaced,
                state: Mutex::new(KindState { phase: Phase::Listing, objects: HashMap::new(), bells: HashMap::new() }),
            });
            let api = Api::all_with(target.client().clone(), &resource);
            let task = tokio::spawn(watch_kind(api, resource, self.selector.clone(), watched.clone()));
            self.tasks.lock().unwrap_or_else(PoisonError::into_inner).push(task.abort_handle());
            watched
        });
        Some(watched.clone())
    }

    /// Starts the watches of every kind of `rollout` the server serves now (one discovery attempt
    /// each, no retries: a kind the rollout installs is watched when first used), so that they
    /// are listed before the components that apply them start.
    pub(super) async fn prepare(&self, target: &Target, rollout: &super::rollout::Rollout) {
        let mut kinds: Vec<ObjectId> = rollout.objects.iter().flatten().map(ObjectId::of).collect();
        kinds.sort_by(|a, b| (&a.api_version, &a.kind).cmp(&(&b.api_version, &b.kind)));
        kinds.dedup_by(|a, b| (&a.api_version, &a.kind) == (&b.api_version, &b.kind));
        let served = futures::future::join_all(kinds.iter().map(|r| target.discover_once(&r.api_version, &r.kind))).await;
        for (reference, served) in kinds.iter().zip(served) {
            if served {
                self.watch(target, reference);
            }
        }
    }

    /// What the watch knows of `reference` before it is applied (watching its kind from now on,
    /// for the objects applied after it): [`Before::Unknown`] until the kind is listed.
    pub(super) fn before(&self, target: &Target, reference: &ObjectId) -> Before {
        let Some(watched) = self.watch(target, reference) else { return Before::Unknown };
        watched.synced(reference, |entry| entry.map_or(Before::Absent, |entry| Before::Digest(entry.digest))).unwrap_or(Before::Unknown)
    }

    /// What the watch knows of `reference`, at least as new as `since`.
    pub(super) fn seen(&self, reference: &ObjectId, since: Since) -> Seen {
        let kind = (reference.api_version.clone(), reference.kind.clone());
        let Some(watched) = self.kinds.lock().unwrap_or_else(PoisonError::into_inner).get(&kind).cloned() else {
            return Seen::Unwatched;
        };
        let seen = watched.synced(reference, |entry| match entry.map(|entry| (fresh(entry, since), entry)) {
            // NB: what we applied carries the labels, so the watch will deliver it; an object
            // someone else applies may lack them (or not exist yet): read it.
            None if !since.applied => Seen::Unwatched,
            None | Some((Some(false), _)) => Seen::NotYet("the applied version is not observed yet".into()),
            Some((Some(true), entry)) => Seen::Verdict(entry.verdict.clone()),
            Some((None, _)) => Seen::Unwatched,
        });
        seen.unwrap_or(Seen::Unwatched)
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        for task in self.tasks.get_mut().unwrap_or_else(PoisonError::into_inner).drain(..) {
            task.abort();
        }
    }
}

fn key_of(reference: &ObjectId) -> Key {
    (reference.namespace().unwrap_or_default().to_owned(), reference.name.clone())
}

/// Whether `entry` is at least as new as `since`; `None` when the versions cannot be compared.
fn fresh(entry: &Entry, since: Since) -> Option<bool> {
    if !since.applied {
        return Some(true);
    }
    if let (Some(seen), Some(applied)) = (entry.resource_version, since.resource_version) {
        return Some(seen >= applied);
    }
    match (entry.generation, since.generation) {
        (Some(seen), Some(applied)) if seen > applied => Some(true),
        // NB: the same generation may carry an older status than the apply's answer.
        _ => None,
    }
}

/// An object of the watch, with the kind it was watched as, as a key and an entry.
fn entry_of(object: DynamicObject, resource: &ApiResource) -> Option<(Key, Entry)> {
    let mut object = object;
    object.types = Some(kube::core::TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() });
    let key = (object.metadata.namespace.clone().unwrap_or_default(), object.metadata.name.clone()?);
    let value = serde_json::to_value(object).ok()?;
    let (resource_version, generation) = versions(&value);
    let verdict = (wait::readiness(&value), wait::conditions(&value));
    Some((key, Entry { resource_version, generation, verdict, digest: digest(&value) }))
}

/// Whether a refusal means the watch will never work here (not allowed, not served).
fn refused(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if matches!(status.code, 401 | 403 | 404 | 405))
}

/// Lists the kind, then watches it from the list's version, resuming where it left off and
/// listing again when the version is gone (410); gives up to reads after repeated failures.
async fn watch_kind(api: Api<DynamicObject>, resource: ApiResource, selector: String, watched: Arc<Watched>) {
    let mut failures = 0;
    let mut version: Option<String> = None;
    while failures < WATCH_ATTEMPTS {
        if failures > 0 {
            tokio::time::sleep(Duration::from_millis(100) * 2u32.pow(failures)).await;
        }
        let from = match version.take() {
            Some(from) => from,
            None => match api.list(&ListParams::default().labels(&selector)).await {
                Ok(list) => {
                    watched.replace(list.items.into_iter().filter_map(|o| entry_of(o, &resource)).collect());
                    list.metadata.resource_version.unwrap_or_default()
                }
                Err(error) if refused(&error) => break,
                Err(_) => {
                    failures += 1;
                    continue;
                }
            },
        };
        let params = WatchParams::default().labels(&selector).timeout(WATCH_SECONDS);
        let stream = match api.watch(&params, &from).await {
            Ok(stream) => {
                watched.enter(Phase::Synced);
                stream
            }
            Err(error) if refused(&error) => break,
            Err(_) => {
                failures += 1;
                version = Some(from);
                continue;
            }
        };
        let (last, gone, delivered) = follow_stream(stream, &resource, &watched, from).await;
        watched.enter(Phase::Listing);
        failures = if delivered { 0 } else { failures + 1 };
        version = (!gone).then_some(last);
    }
    watched.enter(Phase::Unavailable);
}

/// Applies a watch's events until it ends; returns the last version seen, whether it is gone
/// (list again) and whether any event came.
async fn follow_stream(
    stream: impl futures::Stream<Item = kube::Result<WatchEvent<DynamicObject>>>,
    resource: &ApiResource,
    watched: &Watched,
    from: String,
) -> (String, bool, bool) {
    let mut stream = std::pin::pin!(stream);
    let (mut last, mut delivered) = (from, false);
    while let Some(event) = stream.next().await {
        let (object, deleted) = match event {
            Ok(WatchEvent::Added(object) | WatchEvent::Modified(object)) => (object, false),
            Ok(WatchEvent::Deleted(object)) => (object, true),
            Ok(WatchEvent::Bookmark(bookmark)) => {
                last = bookmark.metadata.resource_version;
                continue;
            }
            Ok(WatchEvent::Error(status)) => return (last, status.code == 410, delivered),
            Err(_) => break,
        };
        delivered = true;
        if let Some(version) = object.metadata.resource_version.clone() {
            last = version;
        }
        if let Some((key, entry)) = entry_of(object, resource) {
            watched.record(key, (!deleted).then_some(entry));
        }
    }
    (last, false, delivered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(resource_version: Option<u64>, generation: Option<i64>) -> Entry {
        Entry { resource_version, generation, verdict: (Readiness::Ready, Vec::new()), digest: 0 }
    }

    #[test]
    fn a_verdict_counts_only_when_as_new_as_the_apply() {
        let applied = Since::of(&json!({"metadata": {"resourceVersion": "120", "generation": 3}}));
        assert_eq!(fresh(&entry(Some(119), Some(3)), applied), Some(false), "the watch has not delivered the apply");
        assert_eq!(fresh(&entry(Some(120), Some(3)), applied), Some(true));
        assert_eq!(fresh(&entry(Some(250), Some(3)), applied), Some(true));
        assert_eq!(fresh(&entry(None, Some(3)), applied), None, "same generation, status of unknown age");
        assert_eq!(fresh(&entry(None, Some(4)), applied), Some(true));
        assert_eq!(fresh(&entry(Some(1), Some(1)), Since::any()), Some(true), "verify only: anything");
        let opaque = Since::of(&json!({"metadata": {"resourceVersion": "not-a-number"}}));
        assert_eq!(fresh(&entry(Some(5), None), opaque), None);
    }

    #[test]
    fn waiters_are_woken_by_their_objects_and_by_phase_changes() {
        let watched = Watched {
            namespaced: true,
            state: Mutex::new(KindState { phase: Phase::Listing, objects: HashMap::new(), bells: HashMap::new() }),
        };
        let (mine, other) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let key = |name: &str| ("ns".to_owned(), name.to_owned());
        watched.lock().bells.entry(key("a")).or_default().push(Arc::downgrade(&mine));
        watched.lock().bells.entry(key("b")).or_default().push(Arc::downgrade(&other));
        watched.record(key("a"), Some(entry(Some(1), None)));
        use futures::FutureExt as _;
        assert!(mine.notified().now_or_never().is_some(), "its object changed");
        assert!(other.notified().now_or_never().is_none(), "another object's change does not wake it");
        watched.enter(Phase::Synced);
        assert!(other.notified().now_or_never().is_some(), "a phase change wakes everyone");
    }
}
