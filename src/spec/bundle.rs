//! An in-memory snapshot of every input file: spec files and overlays, keyed by display name.
//!
//! The loader at the edge (`crate::source`) fills it; everything in [`crate::spec`] works on it
//! without touching the filesystem.

use super::diagnostic::FileTable;
use std::collections::BTreeMap;

/// One input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The path as shown in messages, e.g. `fixtures/demo/tenants.yaml`.
    pub name: String,
    /// The file's text.
    pub text: String,
}

/// How the display names of the built-in overlays begin.
const BUILTIN_PREFIX: &str = "<builtin>/";

/// The overlays built into the binary, by name.
pub const BUILTIN_OVERLAYS: &[(&str, &str)] = &[
    ("dev", include_str!("../../overlays/dev.yaml")),
    ("docker-desktop", include_str!("../../overlays/docker-desktop.yaml")),
    ("nodeport", include_str!("../../overlays/nodeport.yaml")),
    ("prod", include_str!("../../overlays/prod.yaml")),
    ("tke", include_str!("../../overlays/tke.yaml")),
];

/// Every file a load needs.
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    /// All files; diagnostics refer to them by index.
    pub files: Vec<SourceFile>,
    /// Indices of spec files, in load order.
    pub specs: Vec<usize>,
    /// Overlays by name; user overlays replace built-ins of the same name.
    pub overlays: BTreeMap<String, usize>,
    /// Overlays named on the command line (`--overlay`), applied after `spec.overlays`.
    pub extra_overlays: Vec<String>,
    /// Environments by name (`environments/<name>.yaml`), for `TFRCluster.spec.environments`.
    pub environments: BTreeMap<String, usize>,
}

impl Bundle {
    /// A bundle holding only the built-in overlays.
    #[must_use]
    pub fn with_builtins() -> Self {
        let mut bundle = Bundle::default();
        for (name, text) in BUILTIN_OVERLAYS {
            let index = bundle.add(SourceFile { name: format!("{BUILTIN_PREFIX}overlays/{name}.yaml"), text: (*text).to_owned() });
            bundle.overlays.insert((*name).to_owned(), index);
        }
        bundle
    }

    /// Whether file `index` is one of the built-in overlays (no file the user wrote).
    #[must_use]
    pub fn is_builtin(&self, index: usize) -> bool {
        self.files[index].name.starts_with(BUILTIN_PREFIX)
    }

    /// Adds a file and returns its index.
    pub fn add(&mut self, file: SourceFile) -> usize {
        self.files.push(file);
        self.files.len() - 1
    }

    /// Adds a spec file.
    pub fn add_spec(&mut self, name: impl Into<String>, text: impl Into<String>) -> usize {
        let index = self.add(SourceFile { name: name.into(), text: text.into() });
        self.specs.push(index);
        index
    }

    /// Adds (or replaces) a named environment.
    pub fn add_environment(&mut self, environment: impl Into<String>, name: impl Into<String>, text: impl Into<String>) -> usize {
        let index = self.add(SourceFile { name: name.into(), text: text.into() });
        self.environments.insert(environment.into(), index);
        index
    }

    /// Adds (or replaces) a named overlay.
    pub fn add_overlay(&mut self, overlay: impl Into<String>, name: impl Into<String>, text: impl Into<String>) -> usize {
        let index = self.add(SourceFile { name: name.into(), text: text.into() });
        self.overlays.insert(overlay.into(), index);
        index
    }
}

impl FileTable for Bundle {
    fn name(&self, index: usize) -> &str {
        self.files.get(index).map_or("<unknown>", |f| f.name.as_str())
    }

    fn text(&self, index: usize) -> &str {
        self.files.get(index).map_or("", |f| f.text.as_str())
    }
}
