//! In-process stages of `tfrs render` on the scale platform (`benches/scale/platform.rs`):
//! load (parse + validate), render (templates + parse-back checks), render with the memo of an
//! unchanged tree (every unit reused), build cold (seal every Secret + serialize) and build with
//! reuse (every Secret kept by fingerprint). The allocator is the binary's (mimalloc).
//!
//! ```console
//! $ cargo bench --bench render                                  # 200 tenants, 2,000 servers
//! $ TFRS_BENCH_TENANTS=20 TFRS_BENCH_SERVERS=200 cargo bench --bench render
//! ```
//!
//! Whole-process comparisons (cp, kustomize, git) are in `benches/scale.sh`.

#[path = "scale/platform.rs"]
#[allow(dead_code)]
mod platform;

use criterion::{Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::hint::black_box;
use tfrs_gitops::render::{Memo, Options, RenderedCluster, render, render_with_memo};
use tfrs_gitops::secrets::{Certificate, MapInputs, MasterKey, Sealer};
use tfrs_gitops::spec::{Bundle, load};
use tfrs_gitops::tree::{Files, Tree};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn size(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn bundle(tenants: usize, servers: usize) -> Bundle {
    let mut bundle = Bundle::with_builtins();
    bundle.add_spec("scale/cluster.yaml", platform::cluster());
    bundle.add_spec("scale/tenants.yaml", platform::tenants(tenants));
    bundle.add_spec("scale/servers.yaml", platform::servers(tenants, servers, None));
    bundle
}

fn parse_previous(files: &BTreeMap<String, Vec<u8>>, path: &str) -> Option<Json> {
    tfrs_gitops::manifest::read_object(files.get(path)?)
}

fn stages(c: &mut Criterion) {
    let tenants = size("TFRS_BENCH_TENANTS", platform::DEFAULT_TENANTS);
    let servers = size("TFRS_BENCH_SERVERS", platform::DEFAULT_SERVERS);
    let bundle = bundle(tenants, servers);
    let master_text = String::from_utf8_lossy(platform::MASTER_KEY).into_owned();
    let master = MasterKey::from_hex(&master_text).expect("the demo master key");
    let certificate = Certificate::from_pem(platform::CERT_PEM, 1_800_000_000).expect("the demo certificate");
    let sealer = Sealer::SealedSecrets { certificate };
    // Lays out one cluster and seals its Secrets: the tree stage of a render.
    let build = |cluster: RenderedCluster, previous: &dyn Fn(&str) -> Option<Json>, seed: u64| -> Option<Files> {
        let mut tree = Tree::new(Some(master.fingerprint_key()));
        tree.add(cluster, Some(sealer.clone())).ok()?;
        tree.seal(previous, &mut StdRng::seed_from_u64(seed)).ok()?;
        Some(tree.into_files().0)
    };
    let options = Options::default();
    let inputs = MapInputs::default();

    let spec = load(&bundle).spec.expect("the scale platform is valid");
    let rendered = render(&spec, &bundle, &options, &inputs, Some(&master)).expect("the scale platform renders");
    let cluster = &rendered.clusters[0];
    let cold = build(cluster.clone(), &|_| None, 1).expect("builds");
    // The memo of a render into `cold`'s directory.
    let empty: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let recorder = Memo::new(master.memo_key(), "bench".to_owned(), Default::default(), &empty);
    let table = render_with_memo(&spec, &bundle, &options, &inputs, Some(&master), Some(&recorder)).expect("renders").memo;

    let mut group = c.benchmark_group(format!("scale-{tenants}t-{servers}s"));
    group.sample_size(10);
    group.bench_function("load", |b| b.iter(|| black_box(load(&bundle).spec.is_some())));
    group.bench_function("render", |b| {
        b.iter(|| black_box(render(&spec, &bundle, &options, &inputs, Some(&master)).map(|r| r.clusters.len()).unwrap_or(0)))
    });
    group.bench_function("render-memo", |b| {
        b.iter(|| {
            let memo = Memo::new(master.memo_key(), "bench".to_owned(), tfrs_gitops::render::memo::previous(table.clone()), &cold);
            let rendered = render_with_memo(&spec, &bundle, &options, &inputs, Some(&master), Some(&memo)).expect("renders");
            assert_eq!(rendered.reused, table.len(), "every unit is reused");
            black_box(rendered.clusters.len())
        })
    });
    group.bench_function("build-cold", |b| b.iter(|| black_box(build(cluster.clone(), &|_| None, 2).map(|f| f.len()).unwrap_or(0))));
    group.bench_function("build-reuse", |b| {
        let previous = |path: &str| parse_previous(&cold, path);
        b.iter(|| black_box(build(cluster.clone(), &previous, 3).map(|f| f.len()).unwrap_or(0)))
    });
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
