//! What tfrs does with a live cluster beyond rolling a plan out: the cluster guard (which cluster a
//! context reaches), bootstrap (from an empty cluster to one that reconciles the tree from Git),
//! and drift (what applying the tree would change).

pub mod guard;
