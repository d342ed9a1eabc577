//! What tfrs does with a live cluster beyond rolling a plan out: today the cluster guard (which
//! cluster a context reaches).

pub mod guard;
