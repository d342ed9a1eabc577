//! What tfrs does with a live cluster beyond rolling a plan out: the cluster guard (which cluster
//! a context reaches) `tfrs bootstrap`, and
//! the drift `tfrs diff --live` shows.

pub mod bootstrap;
pub mod drift;
pub mod guard;
