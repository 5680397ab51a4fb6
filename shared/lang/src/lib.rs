//! The `.stm` language: harel 0.9.0's DSL parsed with pest, loaded into a `Definition`,
//! statically validated and rendered.
//!
//! - [`parse`] / [`parse_file`]: text -> [`Program`], each machine as the config dict
//!   harel's parser produces (the grammar, `stm.pest`, mirrors `grammar.lark` rule for rule);
//! - [`load_file`] / [`load_str`] (and the `_with` forms taking [`LoadOptions`]): resolve
//!   bindings and named guards, select the machine and build it with harel's builder;
//! - [`validate()`]: harel's static checks, same codes, severities and messages;
//! - [`render`]: PlantUML and Mermaid text, as harel's `viz` draws them.
//! - [`fmt`]: the canonical layout (harel's `fmt.py` reindenter), checked to keep the machine.
//! - [`ide`]: diagnostics, symbols and cursor lookups for editors (`harel lsp`).
//!
//! Every failure is a [`LangError`] that renders as `file:line:col: message`, the source
//! line and a caret, in the file it is about (an imported fragment's own file included).
//! Submachines: an inline `invoke { ... }` is built into the Definition's `submachines`,
//! and every machine of an imported file is registered there under its FQN (`ns.Name`).

pub mod error;
mod expand;
pub mod fmt;
pub mod ide;
mod imports;
pub mod loader;
pub mod machines;
mod nesting;
pub mod parser;
mod position;
pub mod render;
mod syntax;
mod unquote;
pub mod validate;

pub use error::{ErrorKind, LangError, Pos};
pub use loader::{
    load_file, load_file_with, load_str, load_str_with, load_text_with, parse_file, stm_files,
    LoadOptions, Loaded,
};
pub use machines::{load_machines, MachinesError};
pub use parser::{parse, DeclKind, Program};
pub use validate::{validate, validate_or_raise, Issue, Severity, ValidationError};
