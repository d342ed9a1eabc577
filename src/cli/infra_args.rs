//! The arguments of `tfrs infra` (the central infrastructure of an environment).

use clap::ValueEnum;
use std::path::PathBuf;

/// `tfrs infra`.
#[derive(Debug, clap::Args)]
pub struct InfraArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: InfraCommand,
}

/// `tfrs infra` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum InfraCommand {
    /// Render a `TFRInfra` spec: the compose file, `.env.infra` and the manager's environment
    /// values (both SOPS-encrypted for the spec's age recipients) and the Infisical bootstrap
    /// plan, into `--out DIR`.
    ///
    /// Every generated value is derived from the master key, so the values both files hold are
    /// equal. Plaintext is written only where `--plaintext-out` / `--manager-plaintext-out` say,
    /// with mode 0600. Exit status: 0 rendered, 1 invalid spec, 2 usage, I/O or environment
    /// error (for example no master key).
    Render(InfraRenderArgs),
    /// Check existing `.env.infra` and manager environment files (plain, or SOPS with
    /// `--age-identity`) against the invariants between them; each broken one is named by
    /// variable and file, never by value.
    ///
    /// A file named `tfrsmanager_env…` (or holding manager variables) is a manager file; any
    /// other is an `.env.infra`. Exit status: 0 every invariant holds, 1 some are broken, 2
    /// usage or a file that cannot be read or decrypted.
    Check(InfraCheckArgs),
    /// Print the Infisical bootstrap of a `TFRInfra` spec: folders, machine identities,
    /// privileges and the secrets each folder must hold (names only, never values).
    ///
    /// Exit status: 0 printed, 1 invalid spec, 2 usage or I/O error.
    Plan(InfraPlanArgs),
    /// Print the JSON Schema of `TFRInfra` (for editors).
    Schema,
}

/// `tfrs infra render`.
#[derive(Debug, clap::Args)]
pub struct InfraRenderArgs {
    /// The `TFRInfra` spec file.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// File holding the 32-byte master key as 64 hex characters (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub master_key_file: Option<PathBuf>,
    /// The directory to write into (created when missing); the files tfrs writes are
    /// replaced, others are left alone.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Also write `.env.infra` in plaintext to this path (mode 0600), for the server. Never
    /// commit it.
    #[arg(long, value_name = "PATH")]
    pub plaintext_out: Option<PathBuf>,
    /// Also write the manager's environment values in plaintext to this path (mode 0600).
    #[arg(long, value_name = "PATH")]
    pub manager_plaintext_out: Option<PathBuf>,
    /// Print only the result line, not each file written.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `tfrs infra check`.
#[derive(Debug, clap::Args)]
pub struct InfraCheckArgs {
    /// `.env.infra` and manager environment files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// An age identity file (`age-keygen` output) that opens SOPS-encrypted files.
    #[arg(long, value_name = "FILE")]
    pub age_identity: Option<PathBuf>,
}

/// `tfrs infra plan`.
#[derive(Debug, clap::Args)]
pub struct InfraPlanArgs {
    /// The `TFRInfra` spec file.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Markdown)]
    pub format: PlanFormat,
}

/// `tfrs infra plan --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A checklist.
    Markdown,
    /// One JSON document.
    Json,
}
