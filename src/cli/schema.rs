//! `tfrs schema`: JSON Schema for editors, or CRDs.

use super::Status;
use super::args::{KindArg, SchemaArgs};
use crate::spec::crd::crd;
use crate::spec::model::API_VERSION;
use crate::spec::schema::{Kind, export};
use serde_json::{Map, Value as Json, json};
use std::io::Write;

/// Runs `tfrs schema`.
pub fn run(args: &SchemaArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let kinds: Vec<Kind> = match args.kind {
        None => Kind::ALL.to_vec(),
        Some(KindArg::Cluster) => vec![Kind::Cluster],
        Some(KindArg::Tenant) => vec![Kind::Tenant],
        Some(KindArg::Server) => vec![Kind::Server],
    };
    if args.crd {
        let documents: Vec<Json> = kinds.into_iter().map(crd).collect();
        let options = serde_saphyr::ser_options! { folded_wrap_chars: usize::MAX / 2 };
        stdout.write_all(serde_saphyr::to_string_multiple_with_options(&documents, options)?.as_bytes())?;
    } else {
        let schema = combined(&kinds);
        serde_json::to_writer_pretty(&mut *stdout, &schema)?;
        writeln!(stdout)?;
    }
    Ok(Status::Success)
}

/// One schema for a spec file: dispatches on `kind` with `if`/`then`, so editors report
/// errors against the right kind.
fn combined(kinds: &[Kind]) -> Json {
    if let [kind] = kinds {
        return export(*kind);
    }
    let mut defs = Map::new();
    let mut branches = Vec::new();
    for kind in kinds {
        let mut schema = export(*kind);
        if let Some(object) = schema.as_object_mut() {
            if let Some(Json::Object(kind_defs)) = object.remove("$defs") {
                defs.extend(kind_defs);
            }
            object.remove("$schema");
        }
        defs.insert(kind.as_str().to_owned(), schema);
        branches.push(json!({
            "if": { "properties": { "kind": { "const": kind.as_str() } }, "required": ["kind"] },
            "then": { "$ref": format!("#/$defs/{}", kind.as_str()) },
        }));
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tfrs spec",
        "description": format!("A TFRCluster, TFRTenant or TFRServer document (apiVersion {API_VERSION})"),
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": { "const": API_VERSION },
            "kind": { "enum": kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>() },
        },
        "allOf": branches,
        "$defs": defs,
    })
}
