//! The spec cache's binary form of parsed documents: arbitrary bytes never make decoding panic,
//! hang or overflow, and whatever arbitrary text parses into comes back the same through it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrs_gitops::spec::yaml::{parse, stored};

fuzz_target!(|data: &[u8]| {
    let _ = stored::decode(data, 0, 3);
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(documents) = parse(0, text) else { return };
    let encoded = stored::encode(&documents, 1, 0);
    let (decoded, nodes) = stored::decode(&encoded, 0, 0).expect("an encoding decodes");
    assert_eq!(nodes, 1);
    // NB: by the debug form, in which NaN equals itself.
    assert_eq!(format!("{decoded:?}"), format!("{documents:?}"));
});
