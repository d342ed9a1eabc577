//! `tfrs` turns TFRS platform specs (TFRCluster, TFRTenant, TFRServer) into the complete set of
//! Kubernetes manifests that Argo CD or Flux applies.
//!
//! The pipeline is `spec -> render (pure) -> tree -> seal -> write | commit | diff -> reconcile`,
//! each stage in one module ([`pipeline`] runs the first four for every command):
//!
//! - [`source`] (the edge) reads spec files and overlays into an in-memory [`spec::Bundle`], and
//!   the secret inputs, master key, clock and RNG the pipeline needs;
//! - [`spec`] parses, merges overlays, validates and returns a [`spec::Spec`] or every problem
//!   found, each with its file, line, column and field path;
//! - [`render`] (pure) turns a spec into components of checked objects and in-memory Secrets;
//! - [`tree`] lays the components out as files with their plan ([`tree::Plan`]), checks the
//!   tree's integrity, seals the Secrets ([`secrets`]) and writes or diffs the result;
//! - [`git`] commits a tree to a branch (compare-and-swap, non-forced push) and reads refs;
//! - [`reconcile`] rolls a cluster's plan out (server-side apply, readiness).
//!
//! [`object::ObjectId`] is the one identity of an object across all of them.
//!
//! Beside the pipeline, [`infra`] (pure) renders and checks the central infrastructure of an
//! environment (the compose stack on the platform's own server and its credentials).
//!
//! The purity rule: [`spec`], [`render`], [`secrets`] and [`infra`] do no I/O and read no
//! clock, environment or randomness (the clock, secret inputs and RNG are passed in). Only
//! [`source`], [`pipeline`] (the sealing certificate), [`tree::write`], [`git`], [`reconcile`],
//! [`cache`] (where caches live) and [`cli`] touch the outside world.

pub mod audit;
pub mod cache;
pub mod catalog;
pub mod cli;
pub(crate) mod codec;
pub mod git;
pub mod infra;
pub mod layout;
pub mod live;
pub mod manifest;
pub mod object;
pub mod pipeline;
pub mod reconcile;
pub mod render;
pub mod secrets;
pub(crate) mod sorted;
pub mod source;
pub mod spec;
pub mod tree;
