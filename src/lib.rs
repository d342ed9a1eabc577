//! tfrs
pub mod spec;
