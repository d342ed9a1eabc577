//! Two arbitrary YAML documents merged as an overlay under a spec: no panic; the merged tree
//! converts to JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrs_gitops::spec::load::merge;
use tfrs_gitops::spec::yaml::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (lower, upper) = text.split_once("\n%%\n").unwrap_or((text, ""));
    let (Ok(lower), Ok(upper)) = (parse(0, lower), parse(1, upper)) else { return };
    for (a, b) in lower.iter().zip(upper.iter()) {
        let merged = merge(a.clone(), b);
        let _ = merged.to_json();
    }
});
