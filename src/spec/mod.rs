//! The input model and its loading and validation. No I/O: files arrive in a [`Bundle`].
pub mod bundle;
pub mod check;
pub mod crd;
pub mod diagnostic;
pub mod duration;
pub mod explain;
pub mod fleet;
pub mod load;
pub mod model;
mod prerequisites;
pub mod schema;
pub mod select;
pub mod yaml;

pub use bundle::{Bundle, SourceFile};
pub use diagnostic::{Diagnostic, Rule};
pub use load::{Loaded, Object, Spec, load, load_kept};
