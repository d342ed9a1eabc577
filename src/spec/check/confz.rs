//! The checks of a server's `confzData`: it is TOML, and it replaces no credential tfrs writes
//! into `config.toml` (a [`ConfzCredential`]) unless `confzCredentialOverrides` names it, and
//! that list names nothing `confzData` does not set. A TOML problem is located at its line and
//! column in the YAML file when `confzData` is a block scalar.
//!
//! A credential key is guarded whether or not the tenant runs its middleware: a literal
//! credential in `confzData` (say, of an outside Redis) is one either way, and naming it is what
//! makes `tfrs audit` search it; a tenant that turns the middleware on later does not silently
//! start connecting with the literal.

use crate::spec::diagnostic::Rule;
use crate::spec::diagnostic::{Diagnostic, FileTable};
use crate::spec::load::Object;
use crate::spec::model::{ConfzCredential, ServerSpec};
use crate::spec::yaml::Origin;
use std::ops::Range;

/// The opt-in list, as written in specs.
const OVERRIDES: &str = "spec.confzCredentialOverrides";

/// What `confzData` sets over a credential of `config.toml`.
enum Found {
    /// A credential key, at the span of the key.
    Key(ConfzCredential, Range<usize>),
    /// A table that holds credentials, given a value that is not a table (which would replace
    /// the whole table): its name and the span of the key.
    Table(&'static str, Range<usize>),
}

/// Checks `server`'s `confzData` and `confzCredentialOverrides`.
pub(super) fn check_confz(server: &Object<ServerSpec>, files: &dyn FileTable, out: &mut Vec<Diagnostic>) {
    let spec = &server.spec;
    if !spec.confz_data.is_empty()
        && let Err(error) = spec.confz_data.parse::<toml::Table>()
    {
        out.push(toml_error(server, &error, files));
        return;
    }
    let found = credentials_set(&spec.confz_data);
    for item in &found {
        match item {
            Found::Key(credential, span) if !spec.confz_credential_overrides.contains(credential) => {
                out.push(unnamed_override(server, *credential, span.start, files));
            }
            Found::Key(..) => {}
            Found::Table(table, span) => out.push(whole_table(server, table, span.start, files)),
        }
    }
    for (index, credential) in spec.confz_credential_overrides.iter().enumerate() {
        let path = format!("{OVERRIDES}[{index}]");
        let name = credential.name();
        if spec.confz_credential_overrides[..index].contains(credential) {
            out.push(Diagnostic::error(Rule::Confz, server.locate(&path), path, format!("`{name}` is named twice")));
        } else if !found.iter().any(|f| matches!(f, Found::Key(c, _) if c == credential)) {
            let message = format!(
                "`{name}` is named, but `confzData` does not set `[{}] {}`: this opt-in overrides nothing",
                credential.table(),
                credential.key()
            );
            let help = "remove it: a stale opt-in would let a later `confzData` replace the credential unnoticed";
            out.push(Diagnostic::error(Rule::Confz, server.locate(&path), path, message).with_help(help));
        }
    }
}

/// Every credential key of `confzData`, and every credential table it gives a value that is
/// not a table; in the order they are written.
fn credentials_set(text: &str) -> Vec<Found> {
    // NB: a TOML key is written as it is, or quoted with escapes (a backslash): a text with
    // neither a credential table's name nor a backslash sets no credential, so it is not parsed
    // (most servers' `confzData` sets none, and a large platform has thousands).
    if !text.contains('\\') && !ConfzCredential::ALL.iter().any(|credential| text.contains(credential.table())) {
        return Vec::new();
    }
    let Ok(document) = toml::de::DeTable::parse(text) else { return Vec::new() };
    let mut found = Vec::new();
    for (name, value) in document.get_ref() {
        let table = name.get_ref().as_ref();
        let Some(first) = ConfzCredential::ALL.into_iter().find(|c| c.table() == table) else { continue };
        match value.get_ref() {
            toml::de::DeValue::Table(section) => {
                for key in section.keys() {
                    if let Some(credential) = ConfzCredential::find(table, key.get_ref()) {
                        found.push(Found::Key(credential, key.span()));
                    }
                }
            }
            _ => found.push(Found::Table(first.table(), name.span())),
        }
    }
    found.sort_by_key(|f| match f {
        Found::Key(_, span) | Found::Table(_, span) => span.start,
    });
    found
}

/// A credential key set without being named in `confzCredentialOverrides`.
fn unnamed_override(server: &Object<ServerSpec>, credential: ConfzCredential, offset: usize, files: &dyn FileTable) -> Diagnostic {
    let (origin, at) = locate(server, offset, files);
    let (table, key, name) = (credential.table(), credential.key(), credential.name());
    let message = format!(
        "`[{table}] {key}` would replace the credential tfrs writes into config.toml ({at}), so the server would no longer connect with the credential its middleware was given"
    );
    let help = format!(
        "remove the key; or, when the server must use another credential on purpose (an outside service), name it: `confzCredentialOverrides: [{name}]`"
    );
    // NB: the line holds the literal: never echoed.
    Diagnostic::error(Rule::Confz, origin, "spec.confzData", message).with_help(help).sensitive()
}

/// A credential table given a value that is not a table.
fn whole_table(server: &Object<ServerSpec>, table: &str, offset: usize, files: &dyn FileTable) -> Diagnostic {
    let (origin, at) = locate(server, offset, files);
    let keys: Vec<String> = ConfzCredential::ALL.iter().filter(|c| c.table() == table).map(|c| format!("`{}`", c.key())).collect();
    let message = format!(
        "`{table}` is not a table ({at}): it would replace the whole `[{table}]` table tfrs writes into config.toml, its credentials ({}) included",
        keys.join(", ")
    );
    let help = format!("set keys inside `[{table}]` instead; a credential key among them must be named in `confzCredentialOverrides`");
    Diagnostic::error(Rule::Confz, origin, "spec.confzData", message).with_help(help).sensitive()
}

/// A TOML error inside `confzData`, located.
fn toml_error(server: &Object<ServerSpec>, error: &toml::de::Error, files: &dyn FileTable) -> Diagnostic {
    let offset = error.span().map_or(0, |span| span.start);
    let (origin, at) = locate(server, offset, files);
    // NB: ConfzData may hold credentials: its lines are never echoed.
    Diagnostic::error(Rule::Confz, origin, "spec.confzData", format!("invalid TOML ({at}): {}", error.message()))
        .with_help("ConfzData is deep-merged over the generated config.toml and must be valid TOML")
        .sensitive()
}

/// Where byte `offset` of `confzData` is: in the YAML file when `confzData` is a block scalar
/// whose lines are the TOML's (a `|` block; not a folded one), else `confzData` itself; and
/// `TOML line L, column C`.
fn locate(server: &Object<ServerSpec>, offset: usize, files: &dyn FileTable) -> (Origin, String) {
    let node = server.tree.get("spec").and_then(|s| s.get("confzData"));
    let mut origin = server.locate("spec.confzData");
    let text = &server.spec.confz_data;
    let end = (0..=offset.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    let before = &text[..end];
    let line = before.matches('\n').count();
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    let at = format!("TOML line {}, column {}", line + 1, column + 1);
    if node.is_some_and(|n| n.block) {
        // NB: a block scalar's origin is its first content line, not the `|` line; the block's
        // indentation is what the YAML line has before the TOML line.
        let toml_line = text.lines().nth(line).unwrap_or_default();
        let yaml_line = files.text(origin.file).lines().nth(origin.line + line - 1).unwrap_or_default();
        if yaml_line.ends_with(toml_line) {
            origin.line += line;
            origin.column = yaml_line.chars().count() - toml_line.chars().count() + column + 1;
        }
    }
    (origin, at)
}

#[cfg(test)]
mod tests {
    use crate::spec::{Bundle, Diagnostic, load};

    const HEAD: &str = "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: lab}\nspec:\n  ingress: {domain: lab.example.com}\n---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {name: acme}\nspec:\n  cluster: lab\n  sharedCache: {storageClass: nfs}\n---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata: {name: bot}\nspec:\n  tenant: acme\n  image: {repository: x/y, tag: v1}\n";

    /// The errors about `confzData` and its opt-ins of a server whose spec ends with `tail`.
    fn errors(tail: &str) -> Vec<Diagnostic> {
        let mut bundle = Bundle::with_builtins();
        bundle.add_spec("spec.yaml", format!("{HEAD}{tail}"));
        let loaded = load(&bundle);
        loaded.diagnostics.into_iter().filter(|d| d.is_error()).collect()
    }

    fn at(diagnostic: &Diagnostic) -> (usize, usize, &str) {
        (diagnostic.origin.line, diagnostic.origin.column, diagnostic.path.as_str())
    }

    #[test]
    fn a_credential_key_needs_an_opt_in_and_is_located_in_the_yaml() {
        let found = errors("  confzData: |\n    [postgresql]\n    port = 6432\n    password = \"hunter2-literal\"\n");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(at(&found[0]), (23, 5, "spec.confzData"));
        assert!(found[0].message.starts_with("`[postgresql] password` would replace the credential"), "{}", found[0].message);
        assert!(found[0].message.contains("(TOML line 3, column 1)"), "{}", found[0].message);
        assert!(found[0].help.as_deref().unwrap_or_default().contains("confzCredentialOverrides: [postgresql.password]"));
        assert!(found[0].sensitive && !format!("{found:?}").contains("hunter2"), "never the literal");
        let named =
            "  confzData: |\n    [postgresql]\n    password = \"hunter2-literal\"\n  confzCredentialOverrides: [postgresql.password]\n";
        assert_eq!(errors(named), []);
    }

    #[test]
    fn hosts_ports_users_and_other_tables_stay_free() {
        let tail = "  confzData: |\n    [postgresql]\n    host = \"db.example.com\"\n    user = \"me\"\n    [cos]\n    bucket = \"b\"\n    [robot]\n    password = \"not ours\"\n";
        assert_eq!(errors(tail), []);
    }

    #[test]
    fn dotted_inline_and_indented_keys_are_found_where_they_are() {
        let found = errors("  confzData: |\n    redis.password = \"x\"\n      cos = { secret_key = \"y\", access_key = \"z\" }\n");
        let located: Vec<_> = found.iter().map(at).collect();
        assert_eq!(located, [(21, 11, "spec.confzData"), (22, 15, "spec.confzData"), (22, 33, "spec.confzData")], "{found:#?}");
        assert!(found[1].message.starts_with("`[cos] secret_key`"), "{}", found[1].message);
    }

    #[test]
    fn a_key_spelled_with_escapes_is_found_and_a_text_naming_no_credential_table_is_free() {
        // `redi\u0073` is `redis` once unescaped: the text never names the table as written.
        let found = errors("  confzData: |\n    [\"redi\\u0073\"]\n    password = \"x\"\n");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.starts_with("`[redis] password`"), "{}", found[0].message);
        assert_eq!(errors("  confzData: |\n    [robot]\n    password = \"x\"\n"), []);
    }

    #[test]
    fn a_credential_table_replaced_whole_is_an_error_even_when_named() {
        let found = errors("  confzData: |\n    celery = \"amqp://u:p@h/\"\n  confzCredentialOverrides: [celery.broker_url]\n");
        let messages: Vec<&str> = found.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(messages[0].starts_with("`celery` is not a table (TOML line 1, column 1)") && messages[0].contains("`broker_url`"));
        assert_eq!(at(&found[0]), (21, 5, "spec.confzData"));
        assert!(messages[1].contains("does not set `[celery] broker_url`"), "{}", messages[1]);
    }

    #[test]
    fn stale_and_repeated_opt_ins_are_errors() {
        let tail = "  confzData: |\n    [redis]\n    password = \"x\"\n  confzCredentialOverrides:\n    - redis.password\n    - timescaledb.password\n    - redis.password\n";
        let found = errors(tail);
        let located: Vec<_> = found.iter().map(at).collect();
        assert_eq!(located, [(25, 7, "spec.confzCredentialOverrides[1]"), (26, 7, "spec.confzCredentialOverrides[2]")], "{found:#?}");
        assert!(found[0].message.contains("this opt-in overrides nothing") && found[1].message.contains("named twice"));
        let unknown = errors("  confzCredentialOverrides: [postgresql.port]\n");
        assert!(unknown[0].message.starts_with("expected one of `postgresql.password`"), "{unknown:#?}");
    }

    #[test]
    fn a_folded_block_is_located_at_confz_data() {
        // Folding joins lines: the TOML's line 2 is not the block's second line (the blank one).
        let found = errors("  confzData: >\n    [postgresql]\n\n    password = \"x\"\n");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!((found[0].origin.line, found[0].message.contains("TOML line 2")), (21, true), "{found:#?}");
    }
}
