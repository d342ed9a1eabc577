//! The edge: everything the pipeline reads from the outside world. Spec files, user overlays
//! and `--overlay` files into a [`Bundle`] (here); `fromEnv`/`fromFile` values, the master key,
//! the clock and the RNG ([`inputs`]); the render memo kept between runs ([`memo_cache`]).

pub mod inputs;
pub mod memo_cache;
pub mod spec_cache;

use crate::spec::Bundle;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Directories never searched for specs: they hold overlays, keys and templates.
const SKIPPED_DIRECTORIES: &[&str] = &["overlays", "environments", "keys", "templates", "secrets"];

use crate::layout::RENDERED_MARKER;

/// Errors reading inputs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path could not be read.
    #[error("cannot read `{path}`")]
    Read {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A directory held no spec files.
    #[error("no `*.yaml` or `*.yml` files under `{0}`")]
    Empty(String),
    /// An `--overlay` name is neither a known overlay nor a file.
    #[error("unknown overlay `{name}`, expected one of {known} or a path to a YAML file")]
    UnknownOverlay {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// Two files name one overlay or environment (`prod.yaml` and `prod.yml`, or the
    /// `environments/` beside two inputs).
    #[error("{kind} `{name}` is defined by two files, `{first}` and `{second}`: keep one (one {kind}, one file)")]
    Twice {
        /// `overlay` or `environment`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The file read first.
        first: String,
        /// The other.
        second: String,
    },
}

/// Reads `inputs` (files or directories) and the overlays and environments next to them.
///
/// # Errors
///
/// An unreadable path, a directory without specs, or an unknown `--overlay`.
pub fn read(inputs: &[PathBuf], extra_overlays: &[String]) -> Result<Bundle, Error> {
    let mut bundle = Bundle::with_builtins();
    let mut overlay_dirs = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for input in inputs {
        let display = input.to_string_lossy().into_owned();
        let metadata = fs::metadata(input).map_err(|source| Error::Read { path: display.clone(), source })?;
        if metadata.is_dir() {
            let mut files = Vec::new();
            walk(input, &mut files)?;
            if files.is_empty() {
                return Err(Error::Empty(display));
            }
            for file in files {
                if !seen.insert(fs::canonicalize(&file).unwrap_or_else(|_| file.clone())) {
                    continue;
                }
                let text = read_text(&file)?;
                bundle.add_spec(file.to_string_lossy(), text);
            }
            overlay_dirs.push(input.join("overlays"));
        } else {
            // NB: the same file named twice (or inside a directory also given) is read once.
            if !seen.insert(fs::canonicalize(input).unwrap_or_else(|_| input.clone())) {
                continue;
            }
            let text = read_text(input)?;
            bundle.add_spec(display, text);
            overlay_dirs.push(input.parent().map_or_else(|| PathBuf::from("overlays"), |p| p.join("overlays")));
        }
    }
    read_named(&mut bundle, overlay_dirs)?;
    for overlay in extra_overlays {
        if bundle.overlays.contains_key(overlay) {
            bundle.extra_overlays.push(overlay.clone());
        } else if overlay.contains('/') || is_yaml(Path::new(overlay)) {
            let text = read_text(Path::new(overlay))?;
            bundle.add_overlay(overlay.clone(), overlay.clone(), text);
            bundle.extra_overlays.push(overlay.clone());
        } else {
            let known = bundle.overlays.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
            return Err(Error::UnknownOverlay { name: overlay.clone(), known });
        }
    }
    Ok(bundle)
}

/// Reads the overlays of each of `dirs` and the environments beside them into `bundle`.
fn read_named(bundle: &mut Bundle, dirs: Vec<PathBuf>) -> Result<(), Error> {
    let mut read_dirs = std::collections::BTreeSet::new();
    for dir in dirs {
        // NB: two inputs in one directory share its overlays and environments: read once.
        if !read_dirs.insert(fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone())) {
            continue;
        }
        for (name, path) in named_files(&dir) {
            if let Some(&first) = bundle.overlays.get(&name).filter(|&&index| !bundle.is_builtin(index)) {
                return Err(twice("overlay", name, bundle, first, &path));
            }
            bundle.add_overlay(name, path.to_string_lossy(), read_text(&path)?);
        }
        // NB: `environments/` sits beside `overlays/`.
        for (name, path) in named_files(&dir.with_file_name("environments")) {
            if let Some(&first) = bundle.environments.get(&name) {
                return Err(twice("environment", name, bundle, first, &path));
            }
            bundle.add_environment(name, path.to_string_lossy(), read_text(&path)?);
        }
    }
    Ok(())
}

/// The error for overlay or environment `name`, file `first` of `bundle` and `second`.
fn twice(kind: &'static str, name: String, bundle: &Bundle, first: usize, second: &Path) -> Error {
    Error::Twice { kind, name, first: bundle.files[first].name.clone(), second: second.to_string_lossy().into_owned() }
}

/// The YAML files of `dir` (none when it does not exist), by file stem, sorted.
fn named_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| is_yaml(p)).collect();
    paths.sort();
    paths.into_iter().filter_map(|path| Some((path.file_stem()?.to_string_lossy().into_owned(), path))).collect()
}

fn is_yaml(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
}

fn read_text(path: &Path) -> Result<String, Error> {
    fs::read_to_string(path).map_err(|source| Error::Read { path: path.to_string_lossy().into_owned(), source })
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), Error> {
    let entries = fs::read_dir(dir).map_err(|source| Error::Read { path: dir.to_string_lossy().into_owned(), source })?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.is_dir() {
            // NB: a tree tfrs rendered (it holds the `.tfrs-output` marker) is output, not input,
            // even when `--out` points inside an input directory.
            if !name.starts_with('.') && !SKIPPED_DIRECTORIES.contains(&name.as_str()) && !path.join(RENDERED_MARKER).exists() {
                walk(&path, files)?;
            }
        } else if is_yaml(&path) && !name.starts_with('.') {
            files.push(path);
        }
    }
    Ok(())
}
