//! A server's ConfigMap data: its `configData` with the keys tfrs injects, which win over it.
//! The server templates write it; the tenant stage reads the schema a personal robot's database
//! role owns from it.

use crate::spec::model::{ServerSpec, TenantSpec, TenantType};
use std::collections::BTreeMap;

/// Where both workers find `config.toml`.
pub const CONFZ_DIR: &str = crate::spec::check::CONFZ_DIR;
/// The injected key that always wins over configData: the shared cache directory.
pub const IMAGES_DIR_KEY: &str = "TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR";
/// The per-robot schema key (personal namespaces default it).
pub const DB_SCHEMA_KEY: &str = "TFS_ROBOT__DB_SCHEMA";

/// The ConfigMap data: `configData`, with the injected keys, which win over configData. The cache directory
/// always wins; in a personal namespace the schema defaults to the server name with `-` -> `_`.
#[must_use]
pub fn config_data(server: &str, spec: &ServerSpec, tenant: &TenantSpec) -> BTreeMap<String, String> {
    let mut data = spec.config_data.clone();
    if tenant.shared_cache.enabled {
        data.insert(IMAGES_DIR_KEY.to_owned(), tenant.shared_cache.cache_dir.clone());
    }
    if tenant.kind == TenantType::Personal {
        data.entry(DB_SCHEMA_KEY.to_owned()).or_insert_with(|| server.replace('-', "_"));
    }
    data
}
