//! `tfrs infra render|check|plan`: the central infrastructure's files, written and checked.

use super::Status;
use super::infra_args::{InfraArgs, InfraCheckArgs, InfraCommand, InfraPlanArgs, InfraRenderArgs, PlanFormat};
use crate::infra::check::{self, EnvFile, Role};
use crate::infra::model::InfraSpec;
use crate::infra::spec::Loaded;
use crate::infra::{compose, dotenv, plan, reuse, spec, variables};
use crate::secrets::MasterKey;
use crate::secrets::sops;
use crate::source::inputs;
use crate::spec::diagnostic::{FileTable, render};
use anyhow::{Context, bail};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// Runs `tfrs infra …`.
pub fn run(args: &InfraArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    match &args.command {
        InfraCommand::Render(a) => run_render(a, stdout),
        InfraCommand::Check(a) => run_check(a, stdout),
        InfraCommand::Plan(a) => run_plan(a, stdout),
        InfraCommand::Schema => {
            let schema = crate::spec::schema::export_document(spec::schema(), crate::infra::model::KIND);
            writeln!(stdout, "{}", serde_json::to_string_pretty(&schema)?)?;
            Ok(Status::Success)
        }
    }
}

/// One spec file, for diagnostics.
struct OneFile {
    name: String,
    text: String,
}

impl FileTable for OneFile {
    fn name(&self, _: usize) -> &str {
        &self.name
    }
    fn text(&self, _: usize) -> &str {
        &self.text
    }
}

/// Reads and loads the spec; `Ok(None)` when it is invalid (reported on stderr).
fn load(path: &Path) -> anyhow::Result<Option<Loaded>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    let file = OneFile { name: path.display().to_string(), text };
    match spec::load(0, &file.text) {
        Ok(loaded) => Ok(Some(loaded)),
        Err(diagnostics) => {
            let count = diagnostics.iter().filter(|d| d.is_error()).count();
            eprint!("{}", render(&diagnostics, &file));
            eprintln!("error: `{}` is not a valid `TFRInfra` spec ({count} error{})", file.name, if count == 1 { "" } else { "s" });
            Ok(None)
        }
    }
}

/// The files of a render, by name below `--out`.
const RENDERED: [&str; 4] = [compose::FILE_NAME, "env.infra.sops.yaml", "infisical-bootstrap.md", "infisical-bootstrap.json"];

/// The name of the encrypted manager file of an environment.
fn manager_file(environment: &str) -> String {
    format!("tfrsmanager_env.{environment}.yml")
}

fn run_render(args: &InfraRenderArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some(loaded) = load(&args.spec)? else { return Ok(Status::Failure) };
    let spec = &loaded.document.spec;
    let Some(key) = inputs::master_key(args.master_key_file.as_deref())? else {
        bail!(
            "the generated values need a master key: set `TFRS_MASTER_KEY` to 64 hex characters, e.g. from `openssl rand -hex 32`, or pass `--master-key-file`"
        );
    };
    for plaintext in [&args.plaintext_out, &args.manager_plaintext_out].into_iter().flatten() {
        refuse_inside(plaintext, &args.out)?;
    }
    let environment = spec.environment.as_str();
    let infra = variables::infra(&key, spec);
    let manager = variables::manager(&key, spec);
    // Everything is made in memory first: a failure writes nothing.
    let (infra_text, manager_text, fingerprints) = encrypted_files(&args.out, &key, spec, &infra, &manager)?;
    let files: Vec<(String, String)> = vec![
        (RENDERED[0].to_owned(), compose::to_text(spec).context("cannot write the compose file")?),
        (RENDERED[1].to_owned(), infra_text),
        (manager_file(environment), manager_text),
        (RENDERED[2].to_owned(), plan::to_markdown(spec)),
        (RENDERED[3].to_owned(), format!("{}\n", serde_json::to_string_pretty(&plan::to_json(spec))?)),
        (reuse::FILE_NAME.to_owned(), fingerprints),
    ];
    let plaintext: Vec<(&PathBuf, Zeroizing<String>)> = [
        args.plaintext_out.as_ref().map(|p| (p, variables::to_dotenv(&infra, environment))),
        args.manager_plaintext_out.as_ref().map(|p| manager_yaml(&manager).map(|text| (p, text))).transpose()?,
    ]
    .into_iter()
    .flatten()
    .collect();
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create `{}`", args.out.display()))?;
    let mut targets: Vec<(PathBuf, &[u8], u32)> = files.iter().map(|(name, text)| (args.out.join(name), text.as_bytes(), 0o644)).collect();
    targets.extend(plaintext.iter().map(|(path, text)| ((*path).clone(), text.as_bytes(), 0o600)));
    write_all(&targets)?;
    for (path, _, mode) in targets.iter().filter(|_| !args.quiet) {
        let note = if *mode == 0o600 { " (plaintext, mode 0600: keep it off Git)" } else { "" };
        writeln!(stdout, "wrote {}{note}", path.display())?;
    }
    writeln!(stdout, "rendered the {environment} infrastructure into {} ({} files)", args.out.display(), targets.len())?;
    Ok(Status::Success)
}

/// The two encrypted files (each the previous file when its values, recipients and content are
/// unchanged, else encrypted afresh) and the fingerprints file.
fn encrypted_files(
    out: &Path,
    key: &MasterKey,
    spec: &InfraSpec,
    infra: &variables::Values,
    manager: &variables::Values,
) -> anyhow::Result<(String, String, String)> {
    let read = |name: &str| std::fs::read_to_string(out.join(name)).ok();
    let recorded: BTreeMap<String, String> = read(reuse::FILE_NAME).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let recipients = &spec.sops.age_recipients;
    let lastmodified = inputs::rfc3339(inputs::unix_now());
    let mut rng = inputs::system_rng();
    let mut fingerprints = BTreeMap::new();
    let mut texts = Vec::new();
    for (name, values) in [(RENDERED[1].to_owned(), infra), (manager_file(spec.environment.as_str()), manager)] {
        let previous = read(&name);
        let text = match reuse::reusable(key, &name, values, recipients, previous.as_deref(), &recorded) {
            Some(kept) => kept.to_owned(),
            None => {
                let document = sops::encrypt_with(&variables::to_map(values), recipients, &lastmodified, sops::Rule::Every, &mut rng)
                    .context("cannot encrypt for the age recipients")?;
                crate::manifest::to_yaml(&document).context("cannot write YAML")?
            }
        };
        fingerprints.insert(name.clone(), reuse::fingerprint(key, &name, values, recipients, &text));
        texts.push(text);
    }
    let manager_text = texts.pop().unwrap_or_default();
    let infra_text = texts.pop().unwrap_or_default();
    Ok((infra_text, manager_text, format!("{}\n", serde_json::to_string_pretty(&fingerprints)?)))
}

fn manager_yaml(values: &variables::Values) -> anyhow::Result<Zeroizing<String>> {
    Ok(Zeroizing::new(crate::manifest::to_yaml(&variables::to_map(values)).context("cannot write YAML")?))
}

/// A plaintext path inside the output directory would put plaintext next to the files meant
/// for the repository.
fn refuse_inside(plaintext: &Path, out: &Path) -> anyhow::Result<()> {
    // Absolute, `..` folded away, then symlinks resolved where the path exists.
    let normal = |p: &Path| {
        let absolute = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut folded = PathBuf::new();
        for component in absolute.components() {
            match component {
                std::path::Component::ParentDir => {
                    folded.pop();
                }
                std::path::Component::CurDir => {}
                other => folded.push(other),
            }
        }
        std::fs::canonicalize(&folded).unwrap_or(folded)
    };
    let parent = normal(plaintext).parent().map(Path::to_path_buf).unwrap_or_default();
    if normal(&parent).starts_with(normal(out)) {
        bail!(
            "`{}` is inside `--out {}`: the plaintext copy would sit next to the files meant for the repository\n  hint: write it outside the output directory, e.g. `/opt/tfrs/.env.infra` on the server",
            plaintext.display(),
            out.display()
        );
    }
    Ok(())
}

/// Writes every file, each to a temporary file next to its path (created with its mode), and
/// only when all are written renames each over its path: a failure while writing (a full disk,
/// a missing directory) leaves every file as it was, and a reader sees an old file or a new
/// one, never a part.
fn write_all(targets: &[(PathBuf, &[u8], u32)]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let temp_of = |path: &Path| {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        dir.join(format!(".{name}.tfrs-{}.tmp", std::process::id()))
    };
    let mut written: Vec<(PathBuf, &Path)> = Vec::new();
    for (path, bytes, mode) in targets {
        let temp = temp_of(path);
        let result = std::fs::OpenOptions::new().write(true).create_new(true).mode(*mode).open(&temp).and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        });
        if let Err(error) = result {
            let _ = std::fs::remove_file(&temp);
            for (temp, _) in &written {
                let _ = std::fs::remove_file(temp);
            }
            return Err(error).with_context(|| format!("cannot write `{}`", path.display()));
        }
        written.push((temp, path));
    }
    for (temp, path) in &written {
        std::fs::rename(temp, path).with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    Ok(())
}

fn run_plan(args: &InfraPlanArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some(loaded) = load(&args.spec)? else { return Ok(Status::Failure) };
    let spec = &loaded.document.spec;
    match args.format {
        PlanFormat::Markdown => stdout.write_all(plan::to_markdown(spec).as_bytes())?,
        PlanFormat::Json => writeln!(stdout, "{}", serde_json::to_string_pretty(&plan::to_json(spec))?)?,
    }
    Ok(Status::Success)
}

fn run_check(args: &InfraCheckArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let identity = match &args.age_identity {
        Some(path) => {
            Some(Zeroizing::new(std::fs::read_to_string(path).with_context(|| format!("cannot read age identity `{}`", path.display()))?))
        }
        None => None,
    };
    let files: Vec<EnvFile> =
        args.files.iter().map(|path| read_env_file(path, identity.as_deref().map(String::as_str))).collect::<anyhow::Result<_>>()?;
    let findings = check::check(&files);
    for finding in &findings {
        writeln!(stdout, "{finding}")?;
    }
    if findings.is_empty() {
        writeln!(stdout, "ok: {} file{}, every invariant holds", files.len(), if files.len() == 1 { "" } else { "s" })?;
        return Ok(Status::Success);
    }
    eprintln!("error: {} broken invariant{}", findings.len(), if findings.len() == 1 { "" } else { "s" });
    Ok(Status::Failure)
}

/// Reads one `.env.infra` or manager file: dotenv text, a YAML map of strings, or either
/// encrypted by SOPS (a YAML or JSON document with a `sops` block).
fn read_env_file(path: &Path, identity: Option<&str>) -> anyhow::Result<EnvFile> {
    let name = path.display().to_string();
    let text = Zeroizing::new(std::fs::read_to_string(path).with_context(|| format!("cannot read `{name}`"))?);
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let yaml_named = [".yml", ".yaml", ".json"].iter().any(|e| file_name.ends_with(e));
    let variables = if yaml_named {
        yaml_variables(&name, &text, identity)?
    } else {
        let variables = check::parse_dotenv(&text).map_err(|lines| {
            let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
            anyhow::anyhow!("`{name}` is not a dotenv file: line {} is not `NAME=value`", lines.join(", "))
        })?;
        if dotenv::is_sops(&variables) {
            let document = dotenv::sops_document(&variables).with_context(|| format!("`{name}`: malformed `sops_` lines"))?;
            map_variables(&name, decrypt(&name, &document, identity)?, None)?
        } else {
            variables
        }
    };
    let role = if file_name.starts_with("tfrsmanager_env") {
        Role::Manager
    } else if file_name.contains("env.infra") {
        Role::Infra
    } else {
        EnvFile::guess_role(&variables)
    };
    Ok(EnvFile { name, role, variables })
}

fn yaml_variables(name: &str, text: &str, identity: Option<&str>) -> anyhow::Result<Vec<check::Variable>> {
    let documents = crate::spec::yaml::parse(0, text).map_err(|errors| {
        let first = errors.first().map(|e| format!("{}:{}: {}", e.origin.line, e.origin.column, e.message)).unwrap_or_default();
        anyhow::anyhow!("`{name}` is not YAML: {first}")
    })?;
    let [document] =
        <[_; 1]>::try_from(documents).map_err(|d: Vec<_>| anyhow::anyhow!("`{name}` must hold one document, found {}", d.len()))?;
    let json = document.to_json();
    if sops::is_sops(&json) {
        map_variables(name, decrypt(name, &json, identity)?, None)
    } else {
        map_variables(name, json, Some(&document))
    }
}

/// Opens a SOPS document (its MAC checked) without its `sops` block.
fn decrypt(name: &str, document: &serde_json::Value, identity: Option<&str>) -> anyhow::Result<serde_json::Value> {
    let Some(identity) = identity else { bail!("`{name}` is SOPS-encrypted: pass `--age-identity FILE`") };
    let mut plain = sops::decrypt(document, identity).with_context(|| format!("cannot decrypt `{name}`"))?;
    if let Some(map) = plain.as_object_mut() {
        map.remove("sops");
    }
    Ok(plain)
}

/// The variables of a map (lines from `located`, the tree it was read from, when there is one).
fn map_variables(name: &str, map: serde_json::Value, located: Option<&crate::spec::yaml::Node>) -> anyhow::Result<Vec<check::Variable>> {
    let Some(map) = map.as_object() else { bail!("`{name}` is not a map of variables") };
    let mut out = Vec::new();
    for (key, value) in map {
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            serde_json::Value::Null => String::new(),
            _ => bail!("`{name}`: `{key}` is not a single value"),
        };
        let line = located.and_then(|tree| tree.get_key(key)).map_or(0, |k| k.origin.line);
        out.push((key.clone(), Zeroizing::new(text), line));
    }
    Ok(out)
}
