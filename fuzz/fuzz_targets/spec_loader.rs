//! Arbitrary bytes as a spec file: loading never panics, hangs or overflows; it returns a spec or
//! diagnostics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrs_gitops::spec::{Bundle, load};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut bundle = Bundle::with_builtins();
    bundle.add_spec("fuzz/spec.yaml", text);
    let loaded = load(&bundle);
    // Every diagnostic renders (locations inside the text, excerpts never out of bounds).
    let _ = tfrs_gitops::spec::diagnostic::render(&loaded.diagnostics, &bundle);
});
