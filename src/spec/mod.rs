//! The input model and its loading and validation.
pub mod model;
pub mod yaml;
