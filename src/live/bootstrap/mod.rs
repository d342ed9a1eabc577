//! `tfrs bootstrap`: from a cluster that runs Kubernetes and a GitOps engine to one that
//! reconciles the rendered tree from Git, in the five phases of the operator install it
//! replaces (see [`PHASES`]).
//!
//! 1. connectivity: the API server answers, the cluster guard accepts the context, the
//!    cluster has what the tree needs ([`checks`]) and the engine can read the repository.
//!    Nothing is written before every check of this phase has passed.
//! 2. sealing: the key material (the sealed-secrets key pair as an active controller key, or
//!    the `sops-age` Secret), then the sealed-secrets controller component of the tree.
//! 3. image credentials: the tree's `image-registry` component (the tenants' pull Secret).
//! 4. root: the cluster identity, the engine's root object (and Argo CD's health check).
//! 5. verify: the root object becomes ready.
//!
//! Every write is a server-side apply with field manager `tfrs`, so a second run changes
//! nothing ([`Report::changed`] is zero). Sealed values keep their live ciphertext when their
//! keyed fingerprint is unchanged ([`objects::reuse_sealed`]).

pub mod checks;
pub mod objects;

use super::guard::{self, Identity, Refusal, Verdict};
use crate::object::ObjectId;
use crate::reconcile::apply::{Cause, Change, Target};
use crate::reconcile::rollout::{Component, Plan, Rollout};
use crate::reconcile::{self, Failure, Mode, Options};
use crate::render::names::FLUX_NAMESPACE;
use crate::spec::model::GitopsEngine;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;
use zeroize::Zeroizing;

/// One phase: its key (`--progress json`), the step name of the operator install flow it
/// stands for, and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Phase {
    /// A stable key.
    pub key: &'static str,
    /// The install flow's step name.
    pub step: &'static str,
    /// What this phase does, in a few words.
    pub what: &'static str,
}

/// The five phases, in order.
pub const PHASES: [Phase; 5] = [
    Phase { key: "connectivity", step: "检查集群连通性", what: "cluster, identity and prerequisites" },
    Phase { key: "sealing", step: "部署 Operator", what: "sealing key and sealed-secrets controller" },
    Phase { key: "image-credentials", step: "创建租户镜像凭证", what: "image pull credentials" },
    Phase { key: "root", step: "创建 TFRCluster CR", what: "cluster identity and the engine's root object" },
    Phase { key: "verify", step: "验证 TFRCluster", what: "the root object is ready" },
];

/// How a phase went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseStatus {
    /// Started.
    Running,
    /// Finished.
    Done,
    /// Failed: the run stops.
    Failed,
}

/// A progress event.
#[derive(Debug, Clone)]
pub enum Event {
    /// A phase started, finished or failed (`index` into [`PHASES`]).
    Phase {
        /// The phase.
        index: usize,
        /// What happened.
        status: PhaseStatus,
        /// A short detail (what changed, or why it failed).
        detail: String,
    },
    /// Something the user has to know or do by hand.
    Note {
        /// The phase.
        index: usize,
        /// What to know.
        text: String,
    },
    /// An object was applied.
    Object {
        /// The phase.
        index: usize,
        /// `Kind/namespace/name`.
        object: String,
        /// How it changed.
        change: Change,
    },
}

/// The key material bootstrap brings into the cluster.
pub enum Sealing {
    /// A sealed-secrets key pair, made the controller's active key.
    SealedSecrets {
        /// The controller's namespace.
        namespace: String,
        /// SHA-256 of the certificate's DER, hex.
        fingerprint: String,
        /// The certificate PEM (`spec.sealing.certFile`).
        certificate: Vec<u8>,
        /// Its private key PEM.
        private_key: Zeroizing<Vec<u8>>,
    },
    /// An age identity file for Flux's SOPS decryption.
    SopsAge {
        /// The identity file.
        identity: Zeroizing<Vec<u8>>,
    },
}

/// What bootstrap needs besides the rendered rollout.
pub struct Settings {
    /// The cluster's name.
    pub cluster: String,
    /// What the tree needs from the cluster.
    pub needs: checks::Needs,
    /// The key material.
    pub sealing: Sealing,
    /// Where the engine reads the tree.
    pub source: objects::Source,
    /// Record the identity over one copied from another cluster.
    pub adopt: bool,
    /// How long each phase may wait for readiness.
    pub timeout: Duration,
    /// The longest pause between readiness polls.
    pub poll_interval: Duration,
}

/// What a finished bootstrap did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Objects created, configured and unchanged.
    pub changes: [usize; 3],
    /// The Kubernetes version the API server reported.
    pub version: String,
}

impl Report {
    /// Objects created or configured.
    #[must_use]
    pub fn changed(&self) -> usize {
        self.changes[0] + self.changes[1]
    }
}

/// Why bootstrap stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server did not answer.
    #[error("cannot reach the API server")]
    Connect(#[source] Cause),
    /// The cluster guard refused the context.
    #[error("refusing to act: {0}")]
    Guard(#[source] Refusal),
    /// The cluster lacks prerequisites (each named).
    #[error("the cluster lacks what the tree needs:\n{}", .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Prerequisites(Vec<String>),
    /// A request failed.
    #[error("`{object}`: {cause}")]
    Api {
        /// `Kind/namespace/name`.
        object: String,
        /// What the API said.
        cause: Cause,
    },
    /// Something did not become ready.
    #[error("{0}")]
    NotReady(Box<Failure>),
}

impl Error {
    /// Whether this is a refusal before any write (exit 2) rather than a failed rollout.
    #[must_use]
    pub fn is_refusal(&self) -> bool {
        matches!(self, Error::Connect(_) | Error::Guard(_) | Error::Prerequisites(_))
    }
}

/// One bootstrap run.
struct Run<'a> {
    target: &'a Target,
    settings: &'a Settings,
    rollout: &'a Rollout,
    progress: &'a (dyn Fn(&Event) + Sync),
    report: Report,
    /// The changes when the current phase began.
    since: [usize; 3],
}

/// Bootstraps the cluster `target` reaches (see the module docs).
///
/// # Errors
///
/// The first phase's failure; refusals ([`Error::is_refusal`]) come before any write.
pub async fn bootstrap(
    target: &Target,
    settings: &Settings,
    rollout: &Rollout,
    progress: &(dyn Fn(&Event) + Sync),
) -> Result<Report, Error> {
    let mut run = Run { target, settings, rollout, progress, report: Report::default(), since: [0; 3] };
    run.begin(0);
    let identity = run.connectivity().await;
    let identity = run.end(0, identity)?;
    run.begin(1);
    let sealed = run.sealing().await;
    run.end(1, sealed)?;
    run.begin(2);
    let credentials = run.components(2, &["cluster/image-registry"]).await;
    run.end(2, credentials)?;
    run.begin(3);
    let root = run.root(&identity).await;
    let root = run.end(3, root)?;
    run.begin(4);
    let ready = run.wait("bootstrap/root", vec![root]).await;
    run.end(4, ready)?;
    Ok(run.report)
}

impl Run<'_> {
    fn begin(&mut self, index: usize) {
        self.since = self.report.changes;
        (self.progress)(&Event::Phase { index, status: PhaseStatus::Running, detail: String::new() });
    }

    /// Reports how phase `index` ended.
    fn end<T>(&mut self, index: usize, result: Result<T, Error>) -> Result<T, Error> {
        let (status, detail) = match &result {
            Ok(_) => {
                let [c, u, n]: [usize; 3] = std::array::from_fn(|i| self.report.changes[i] - self.since[i]);
                (PhaseStatus::Done, format!("{c} created, {u} configured, {n} unchanged"))
            }
            Err(Error::Prerequisites(missing)) => (PhaseStatus::Failed, format!("{} prerequisites missing", missing.len())),
            Err(error) => (PhaseStatus::Failed, error.to_string().lines().next().unwrap_or_default().to_owned()),
        };
        (self.progress)(&Event::Phase { index, status, detail });
        result
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.settings.timeout
    }

    /// Phase 1: answers, identity, prerequisites, source. Reads only.
    async fn connectivity(&mut self) -> Result<Identity, Error> {
        {
            let deadline = self.deadline();
            self.report.version = self.target.check().await.map_err(Error::Connect)?;
            let cluster = &self.settings.cluster;
            let identity = match guard::recorded(self.target, deadline).await.map_err(Error::Guard)? {
                None => Identity { cluster: cluster.clone(), uid: guard::live_uid(self.target, deadline).await.map_err(Error::Connect)? },
                Some(_) => match guard::check(self.target, cluster, self.settings.adopt, deadline).await.map_err(Error::Guard)? {
                    Verdict::Matches(identity) | Verdict::Unrecorded(identity) => identity,
                },
            };
            let mut missing = checks::missing(self.target, &self.settings.needs, deadline).await.map_err(Error::Connect)?;
            missing.extend(self.source_problem(deadline).await?);
            if missing.is_empty() { Ok(identity) } else { Err(Error::Prerequisites(missing)) }
        }
    }

    /// Flux: an existing GitRepository must read the spec's repository; a new one needs a URL
    /// and, over SSH, credentials. Argo CD: a repository URL.
    async fn source_problem(&self, deadline: Instant) -> Result<Option<String>, Error> {
        let source = &self.settings.source;
        if self.settings.needs.engine == GitopsEngine::Argocd {
            return Ok(source
                .url
                .is_empty()
                .then(|| "`spec.gitops.repoURL` is empty: Argo CD's root Application needs the repository".to_owned()));
        }
        let reference = ObjectId::new("source.toolkit.fluxcd.io/v1", "GitRepository", Some(FLUX_NAMESPACE), &source.source_ref);
        let existing = match self.target.get(&reference, deadline).await {
            Ok(found) => found,
            Err(cause) => return Err(Error::Api { object: reference.to_string(), cause }),
        };
        let url = existing.as_ref().and_then(|g| g.pointer("/spec/url")).and_then(Value::as_str);
        Ok(match url {
            Some(url) if !source.url.is_empty() && !objects::same_repository(url, &source.url) => Some(format!(
                "GitRepository `{FLUX_NAMESPACE}/{}` reads `{url}`, but `spec.gitops.repoURL` is `{}`: the root would read another repository",
                source.source_ref, source.url
            )),
            Some(_) => None,
            None if source.url.is_empty() => Some(format!(
                "there is no GitRepository `{FLUX_NAMESPACE}/{}` (`spec.gitops.sourceRef`) and `spec.gitops.repoURL` is empty: set it, or create the GitRepository (`flux create source git`)",
                source.source_ref
            )),
            None if source.url.starts_with("ssh://") && source.secret.is_none() => Some(format!(
                "`{}` is an SSH repository: pass `--git-secret NAME`, a Secret in `{FLUX_NAMESPACE}` made by `flux create secret git`",
                source.url
            )),
            None => None,
        })
    }

    /// Applies `object` and reports it.
    async fn apply(&mut self, index: usize, object: &Value) -> Result<(), Error> {
        let reference = ObjectId::of(object);
        let (_, change) = self
            .target
            .apply(object, false, false, self.deadline())
            .await
            .map_err(|cause| Error::Api { object: reference.to_string(), cause })?;
        self.report.changes[change as usize] += 1;
        (self.progress)(&Event::Object { index, object: reference.to_string(), change });
        Ok(())
    }

    /// Phase 2: the key material, then the controller.
    async fn sealing(&mut self) -> Result<(), Error> {
        let cluster = self.settings.cluster.clone();
        let key = match &self.settings.sealing {
            Sealing::SealedSecrets { namespace, fingerprint, certificate, private_key } => {
                self.apply(1, &objects::namespace(namespace)).await?;
                objects::sealing_key(&cluster, namespace, fingerprint, certificate, private_key)
            }
            Sealing::SopsAge { identity } => objects::sops_age(&cluster, identity),
        };
        let created_before = self.report.changes[Change::Created as usize];
        self.apply(1, &key).await?;
        drop(key);
        let key_created = self.report.changes[Change::Created as usize] > created_before;
        let installs = self.rollout.plan.components.iter().any(|c| c.id == "cluster/sealed-secrets");
        if let (true, false, Sealing::SealedSecrets { namespace, .. }) = (key_created, installs, &self.settings.sealing) {
            // NB: the tree's controller watches for key Secrets; one installed another way may
            // read its keys only when it starts (without `--watch-for-secrets`).
            let text = format!(
                "the tree does not install the sealed-secrets controller: if one already runs in `{namespace}` without `--watch-for-secrets`, restart it to load the new key (`kubectl -n {namespace} rollout restart deployment/<controller>`)"
            );
            (self.progress)(&Event::Note { index: 1, text });
        }
        self.components(1, &["cluster/sealed-secrets"]).await?;
        Ok(())
    }

    /// Applies the objects of the plan's components `ids` (those it has), then waits for them.
    async fn components(&mut self, index: usize, ids: &[&str]) -> Result<(), Error> {
        let mut objects = Vec::new();
        for (component, its) in self.rollout.plan.components.iter().zip(&self.rollout.objects) {
            if ids.contains(&component.id.as_str()) {
                objects.extend(its.iter().cloned());
            }
        }
        // NB: kinds and namespaces first, as reconcile does.
        objects.sort_by_key(|o| match o.get("kind").and_then(Value::as_str) {
            Some("CustomResourceDefinition") => 0,
            Some("Namespace") => 1,
            _ => 2,
        });
        for object in &mut objects {
            if object.get("kind").and_then(Value::as_str) == Some("SealedSecret") {
                let reference = ObjectId::of(object);
                let live = self
                    .target
                    .get(&reference, self.deadline())
                    .await
                    .map_err(|cause| Error::Api { object: reference.to_string(), cause })?;
                if let Some(live) = live {
                    objects::reuse_sealed(object, &live);
                }
            }
            self.apply(index, object).await?;
        }
        self.wait(ids.join(", ").as_str(), objects).await
    }

    /// Phase 4: the identity, Argo CD's health check, the root object (returned).
    async fn root(&mut self, identity: &Identity) -> Result<Value, Error> {
        let change = guard::record(self.target, identity, self.deadline())
            .await
            .map_err(|cause| Error::Api { object: format!("ConfigMap/{}/{}", guard::NAMESPACE, guard::NAME), cause })?;
        self.report.changes[change as usize] += 1;
        (self.progress)(&Event::Object { index: 3, object: format!("ConfigMap/{}/{}", guard::NAMESPACE, guard::NAME), change });
        let (cluster, source) = (&self.settings.cluster, &self.settings.source);
        let root = match self.settings.needs.engine {
            GitopsEngine::Flux => {
                let reference = ObjectId::new("source.toolkit.fluxcd.io/v1", "GitRepository", Some(FLUX_NAMESPACE), &source.source_ref);
                let existing = self
                    .target
                    .get(&reference, self.deadline())
                    .await
                    .map_err(|cause| Error::Api { object: reference.to_string(), cause })?;
                // NB: an existing GitRepository (`flux bootstrap`'s own) is left alone.
                let owned = existing.as_ref().is_none_or(|g| {
                    g.pointer("/metadata/labels/app.kubernetes.io~1managed-by").and_then(Value::as_str) == Some(objects::MANAGED_BY)
                });
                if owned {
                    self.apply(3, &objects::git_repository(cluster, source)).await?;
                }
                objects::flux_root(cluster, source)
            }
            GitopsEngine::Argocd => {
                self.apply(3, &crate::render::gitops::argocd_health_check_body(cluster)).await?;
                objects::argocd_root(cluster, source)
            }
        };
        self.apply(3, &root).await?;
        Ok(root)
    }

    /// Waits (read only) until `objects` are ready, as `reconcile --verify-only` does.
    async fn wait(&mut self, id: &str, objects: Vec<Value>) -> Result<(), Error> {
        if objects.is_empty() {
            return Ok(());
        }
        let plan_objects = objects.iter().map(|o| crate::tree::plan::Object { id: ObjectId::of(o), file: String::new() }).collect();
        let component = Component { id: id.to_owned(), path: String::new(), depends_on: Vec::new(), objects: plan_objects };
        let rollout =
            Rollout { plan: Plan { cluster: self.settings.cluster.clone(), components: vec![component] }, objects: vec![objects] };
        let options = Options {
            concurrency: 1,
            timeout: Some(self.settings.timeout),
            poll_interval: self.settings.poll_interval,
            mode: Mode::VerifyOnly,
            ..Options::default()
        };
        let outcome = reconcile::reconcile(self.target, &rollout, &options, &|_| {}).await.map_err(|error| match error {
            reconcile::Error::Connect(cause) => Error::Connect(cause),
            other => Error::Api { object: id.to_owned(), cause: Cause::Other(other.to_string()) },
        })?;
        match outcome.failures().first() {
            Some(failure) => Err(Error::NotReady(Box::new((*failure).clone()))),
            None => Ok(()),
        }
    }
}
