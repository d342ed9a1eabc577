//! `tfrs` turns TFRS platform specs (TFRCluster, TFRTenant, TFRServer) into the complete set of
//! Kubernetes manifests that Argo CD or Flux applies.
//!
//! The pipeline is `load -> render -> seal -> write`, then `commit` / `diff` / `reconcile`:
//!
//! - [`source`] (the edge) reads spec files and overlays into an in-memory [`spec::Bundle`];
//! - [`spec::load`] parses, merges overlays, validates and returns a [`spec::Spec`] or every
//!   problem found, each with its file, line, column and field path;
//! - [`render::render`] (pure) turns a spec into components of checked objects and in-memory
//!   Secrets; [`render::tree::build`] seals the Secrets ([`secrets`]) and lays out the files;
//! - [`git`] commits the tree to a branch (compare-and-swap, non-forced push) and diffs it
//!   against a ref per object;
//! - [`reconcile`] rolls a rendered plan out to a cluster (server-side apply, readiness).
//!
//! The purity rule: [`spec`], [`render`] and [`secrets`] do no I/O and read no clock, environment
//! or randomness (the clock, secret inputs and RNG are passed in). Only
//! [`source`] and [`cli`] touch the outside world.

pub mod audit;
pub mod catalog;
pub mod cli;
pub mod git;
pub mod manifest;
pub mod object;
pub mod pipeline;
pub mod reconcile;
pub mod render;
pub mod secrets;
pub mod source;
pub mod spec;
pub mod tree;
