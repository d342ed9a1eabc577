//! The scale platform the benchmarks render (`benches/scale/platform.rs`) stays a valid spec:
//! a benchmark of specs that `tfrs render` refuses measures nothing.

#[allow(dead_code)]
#[path = "../benches/scale/platform.rs"]
mod platform;

use tfrs_gitops::spec::{Bundle, load};

#[test]
fn the_scale_platform_is_valid() {
    // A small one: the same generator, the same shapes (shared and personal tenants).
    let (tenants, servers) = (12, 40);
    let mut bundle = Bundle::with_builtins();
    bundle.add_spec("scale/cluster.yaml", platform::cluster());
    bundle.add_spec("scale/tenants.yaml", platform::tenants(tenants));
    bundle.add_spec("scale/servers.yaml", platform::servers(tenants, servers, None));
    let loaded = load(&bundle);
    let errors: Vec<String> = loaded.diagnostics.iter().filter(|d| d.is_error()).map(|d| format!("{}: {}", d.path, d.message)).collect();
    assert!(errors.is_empty(), "the scale platform is not a valid spec:\n{}", errors.join("\n"));
    let spec = loaded.spec.expect("a spec");
    assert_eq!((spec.tenants.len(), spec.servers.len()), (tenants, servers));
}
