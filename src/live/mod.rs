//! What tfrs does with a live cluster beyond rolling a plan out: the cluster guard (which cluster
//! a context reaches) and `tfrs bootstrap`.

pub mod bootstrap;
pub mod guard;
