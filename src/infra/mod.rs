//! The central infrastructure of an environment: the compose stack on the platform's own
//! server (business PostgreSQL and Redis, the central TimescaleDB, Infisical with its own
//! PostgreSQL and Redis), its `.env.infra`, the manager's environment values that must match
//! it, and the Infisical bootstrap plan.
//!
//! Pure, like [`crate::spec`] and [`crate::render`]: a `TFRInfra` spec and the master key in,
//! texts out. `cli::infra` reads and writes the files.
//!
//! - [`spec`] loads and validates a `TFRInfra` document ([`model`]), every problem at once;
//! - [`variables`] derives every generated value from the master key at
//!   `infra/<environment>/<VARIABLE>`, so the values both files hold are equal by construction;
//! - [`compose`] writes the stack (no secret in it: `${VARIABLE}` references);
//! - [`plan`] writes the Infisical bootstrap as a checklist and as JSON;
//! - [`reuse`] keeps an encrypted file byte for byte while its values are unchanged;
//! - [`dotenv`] reads a dotenv file `sops` encrypted;
//! - [`check`] finds the broken invariants of existing files, never printing a value;
//! - [`rules`] holds what both the spec and the check hold values to.

pub mod check;
pub mod compose;
pub mod dotenv;
pub mod model;
pub mod plan;
pub mod reuse;
pub mod rules;
pub mod spec;
pub mod variables;
