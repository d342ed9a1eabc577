//! The simulator's HTTP server on 127.0.0.1 and the handle tests drive it with: seeding, served
//! kinds, behaviours, faults, and what was logged and stored.

use super::{Behaviour, Config, Fault, FaultAction, Kind, Life, Logged, Sim, State, Stored, builtin_kinds, failure, id_of};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

impl Sim {
    /// Starts a simulator on 127.0.0.1 (a random port) on the current tokio runtime.
    pub async fn start(config: Config) -> Sim {
        let state = Arc::new(Mutex::new(State {
            kinds: builtin_kinds(),
            objects: BTreeMap::new(),
            version: 100,
            behaviours: BTreeMap::new(),
            default_delay: config.default_delay,
            crd_delay: config.crd_delay,
            pending_crds: Vec::new(),
            faults: Vec::new(),
            log: Vec::new(),
            lives: BTreeMap::new(),
            faults_fired: 0,
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the simulator");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| serve(state.clone(), request));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        let sim = Sim { state, url };
        sim.seed_namespace("default");
        sim.seed_namespace("kube-system");
        sim
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Creates a namespace as if it always existed.
    pub fn seed_namespace(&self, name: &str) {
        let mut state = self.lock();
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "resourceVersion": "1", "uid": format!("uid-seed-{name}")}, "status": {"phase": "Active"}});
        state.objects.insert(
            (String::new(), "namespaces".into(), String::new(), name.into()),
            Stored { object, owners: BTreeMap::new(), due: None },
        );
    }

    /// Records the cluster identity `tfrs reconcile --adopt` writes, naming `cluster`.
    pub fn seed_identity(&self, cluster: &str) {
        self.seed_identity_with_uid(cluster, "uid-seed-kube-system");
    }

    /// Records an identity naming `cluster` with the kube-system UID `uid` (another cluster's,
    /// unless it is `uid-seed-kube-system`).
    pub fn seed_identity_with_uid(&self, cluster: &str, uid: &str) {
        let identity = tfrs_gitops::live::guard::Identity { cluster: cluster.into(), uid: uid.into() };
        let mut object = tfrs_gitops::live::guard::object(&identity);
        object["metadata"]["resourceVersion"] = json!("1");
        self.lock().objects.insert(
            (String::new(), "configmaps".into(), "kube-system".into(), "tfrs".into()),
            Stored { object, owners: BTreeMap::new(), due: None },
        );
    }

    /// Serves a custom kind as if its CRD were installed already.
    pub fn serve(&self, api_version: &str, kind: &str, plural: &str, namespaced: bool) {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.lock().kinds.push(Kind { group: group.into(), version: version.into(), kind: kind.into(), plural: plural.into(), namespaced });
    }

    /// Sets how the fake controller treats an object (`Kind/namespace/name`, or a bare name).
    pub fn behave(&self, object: &str, behaviour: Behaviour) {
        self.lock().behaviours.insert(object.into(), behaviour);
    }

    /// Adds a fault.
    pub fn fault(&self, fault: Fault) {
        self.lock().faults.push(fault);
    }

    /// How many injected faults fired.
    pub fn faults_fired(&self) -> u32 {
        self.lock().faults_fired
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<Logged> {
        self.lock().log.clone()
    }

    /// Requests that were not reads.
    pub fn writes(&self) -> Vec<Logged> {
        self.log().into_iter().filter(|l| l.method != "GET").collect()
    }

    /// Each object's first write and readiness, by `Kind/namespace/name`.
    pub fn lives(&self) -> BTreeMap<String, Life> {
        let mut state = self.lock();
        state.tick(Instant::now());
        state.lives.clone()
    }

    /// A stored object by `Kind/namespace/name`.
    pub fn object(&self, id: &str) -> Option<Value> {
        self.lock().objects.values().map(|s| &s.object).find(|o| id_of(o) == id).cloned()
    }

    /// The number of stored objects.
    pub fn count(&self) -> usize {
        self.lock().objects.len()
    }

    /// A kubeconfig for this simulator.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {}\nusers:\n- name: sim\n  user:\n    token: sim\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\ncurrent-context: sim\n",
            self.url
        )
    }

    /// A kube client for this simulator.
    pub fn client(&self) -> kube::Client {
        let mut config = kube::Config::new(self.url.parse().expect("simulator URL"));
        config.default_retry = false;
        kube::Client::try_from(config).expect("client")
    }
}

async fn serve(state: Arc<Mutex<State>>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, std::io::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(std::io::Error::other)?.to_bytes();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or("").to_owned();
    let now = Instant::now();
    let fault = {
        let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.log.push(Logged { method: method.clone(), path: path.clone(), query: query.clone(), at: now });
        let found = state.faults.iter_mut().find(|f| f.times > 0 && f.method.is_none_or(|m| m == method) && path.contains(&f.path));
        let action = found.map(|f| {
            f.times -= 1;
            f.action
        });
        if action.is_some() {
            state.faults_fired += 1;
        }
        action
    };
    match fault {
        Some(FaultAction::Drop) => return Err(std::io::Error::other("dropped by fault injection")),
        Some(FaultAction::Delay(delay)) => tokio::time::sleep(delay).await,
        Some(FaultAction::Status(code)) => {
            let reason = if code == 429 { "TooManyRequests" } else { "InternalError" };
            let answer = failure(code, reason, format!("injected fault {code}"), json!({}));
            let mut response = Response::builder().status(code).header("content-type", "application/json");
            if code == 429 {
                response = response.header("retry-after", "1");
            }
            return Ok(response.body(Full::new(Bytes::from(answer.body))).expect("response"));
        }
        None => {}
    }
    let answer = {
        let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.handle(&method, &path, &query, &body, Instant::now())
    };
    let content_type = if answer.plain { "text/plain; charset=utf-8" } else { "application/json" };
    Ok(Response::builder()
        .status(answer.code)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(answer.body)))
        .expect("response"))
}
