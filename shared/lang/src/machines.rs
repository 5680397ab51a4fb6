//! The one way a host loads the machines it runs: every machine of a `.stm` file, or of every
//! `.stm` file of a directory (not its subdirectories, which hold what the files import), in
//! file-name order, each loaded with its imports and validated as harel's worker does
//! (`load_definitions`). The functions' cold start, the CLI's `--machines` and
//! `harel deploy-check` all load through here, so what one accepts the others accept.

use std::path::{Path, PathBuf};

use harel_model::Definition;

use crate::error::LangError;
use crate::loader::{load_file, load_str, parse_file, stm_files};
use crate::parser::parse;
use crate::validate::{validate_or_raise, ValidationError};

/// Why the machines could not be loaded; each says which file (and, for a file that does
/// not parse, `file:line:col` and a caret). The message is whole: no cause is chained
/// after it, so a chain printer (anyhow's `{:#}`) does not say it twice.
#[derive(Debug, thiserror::Error)]
pub enum MachinesError {
    /// The path (or the directory's listing) could not be read.
    #[error("{path}: cannot read: {error}")]
    Unreadable {
        /// The file or directory, as given.
        path: String,
        /// Why the read failed.
        error: std::io::Error,
    },
    /// A file does not parse or its machine does not build (located in its file).
    #[error(transparent)]
    Lang(#[from] LangError),
    /// A machine builds but harel's static checks find errors in it.
    #[error("{file}: machine {name} is invalid: {issues}")]
    Invalid {
        /// The `.stm` file the machine is declared in.
        file: String,
        /// The machine's name.
        name: String,
        /// Every issue the checks found: at least one an error, warnings too.
        issues: ValidationError,
    },
}

/// The `.stm` files `path` stands for: itself, or those of the directory, by name.
pub fn machine_files(path: &Path) -> Result<Vec<PathBuf>, MachinesError> {
    let unreadable = |error| MachinesError::Unreadable {
        path: path.display().to_string(),
        error,
    };
    if std::fs::metadata(path).map_err(unreadable)?.is_dir() {
        stm_files(path).map_err(unreadable)
    } else {
        Ok(vec![path.to_path_buf()])
    }
}

/// Every machine of the file or directory `path`, loaded and validated.
pub fn load_machines(path: &Path) -> Result<Vec<Definition>, MachinesError> {
    let mut out = Vec::new();
    for file in machine_files(path)? {
        out.extend(load_machines_of_file(&file)?);
    }
    Ok(out)
}

/// Every machine of one `.stm` file, loaded with its imports and validated.
pub fn load_machines_of_file(file: &Path) -> Result<Vec<Definition>, MachinesError> {
    let program = parse_file(file)?;
    program
        .machines
        .keys()
        .map(|name| checked(load_file(file, Some(name))?, &file.display().to_string()))
        .collect()
}

/// Every machine of a source compiled into a binary (`origin` names it in errors; it has
/// no directory, so it imports nothing).
pub fn load_machines_of_text(text: &str, origin: &str) -> Result<Vec<Definition>, MachinesError> {
    let program = parse(text, origin)?;
    program
        .machines
        .keys()
        .map(|name| checked(load_str(text, Some(name), origin)?, origin))
        .collect()
}

fn checked(defn: Definition, file: &str) -> Result<Definition, MachinesError> {
    validate_or_raise(&defn).map_err(|issues| MachinesError::Invalid {
        file: file.to_string(),
        name: defn.id.to_string(),
        issues,
    })?;
    Ok(defn)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory of its own per test (they run in parallel).
    fn dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("harel-machines-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn a_directory_gives_every_machine_of_its_files_in_name_order() {
        let d = dir("ok");
        std::fs::write(
            d.join("b.stm"),
            "machine B {\n  initial S\n  final S done\n}\n",
        )
        .expect("b");
        std::fs::write(
            d.join("a.stm"),
            "machine A1 {\n  initial S\n  final S done\n}\n\nmachine A2 {\n  initial S\n  final S done\n}\n",
        )
        .expect("a");
        std::fs::write(d.join("notes.txt"), "not a machine").expect("txt");
        let ids: Vec<String> = load_machines(&d)
            .expect("load")
            .iter()
            .map(|m| m.id.to_string())
            .collect();
        assert_eq!(ids, ["A1", "A2", "B"]);
    }

    #[test]
    fn a_file_that_does_not_parse_says_where() {
        let d = dir("bad");
        std::fs::write(
            d.join("x.stm"),
            "machine X {\n  initial S\n  state S { ??? }\n}\n",
        )
        .expect("x");
        let e = load_machines(&d).expect_err("refused").to_string();
        assert!(e.contains("x.stm:3:"), "{e}");
    }

    #[test]
    fn an_invalid_machine_is_refused_with_its_issues() {
        let text = "machine X {\n  initial S\n  state S {}\n  state Island {}\n}\n";
        let e = load_machines_of_text(text, "x.stm").expect_err("refused");
        assert!(matches!(e, MachinesError::Invalid { .. }), "{e}");
        assert!(
            e.to_string().starts_with("x.stm: machine X is invalid"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_path_is_named() {
        let e = load_machines(Path::new("/no/such/machines")).expect_err("refused");
        assert!(matches!(e, MachinesError::Unreadable { .. }), "{e}");
        assert!(
            e.to_string().starts_with("/no/such/machines: cannot read"),
            "{e}"
        );
    }
}
