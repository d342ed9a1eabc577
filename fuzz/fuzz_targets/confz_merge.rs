//! Arbitrary `confzData` merged over the generated config.toml: a typed error or TOML that parses
//! back, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrs_gitops::render::server::confz;
use tfrs_gitops::render::tenant::Credentials;
use tfrs_gitops::spec::model::ServerSpec;
use zeroize::Zeroizing;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let spec = ServerSpec { confz_data: text.to_owned(), ..ServerSpec::default() };
    let credentials = Credentials {
        postgresql: Some(Zeroizing::new("p@ss/w:rd#%".to_owned())),
        redis: Some(Zeroizing::new("r".to_owned())),
        rabbitmq: Some((Zeroizing::new("u ser".to_owned()), Zeroizing::new("p:w@".to_owned()))),
        ..Credentials::default()
    };
    if let Ok(toml) = confz("bot", "ns", &spec, &credentials) {
        assert!(toml.parse::<toml::Table>().is_ok(), "config.toml must parse back");
    }
});
