//! The `.stm` language: harel 0.9.0's DSL parsed with pest, loaded into a `Definition`,
//! statically validated and rendered.

pub mod error;
pub mod loader;
pub mod parser;
pub mod render;
mod syntax;
mod unquote;
pub mod validate;

pub use error::{ErrorKind, LangError, Pos};
pub use loader::{
    load_file, load_file_with, load_str, load_str_with, parse_file, LoadOptions, Loaded,
};
pub use parser::{parse, DeclKind, Program};
pub use validate::{validate, validate_or_raise, Issue, Severity, ValidationError};
