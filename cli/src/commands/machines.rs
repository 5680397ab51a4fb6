//! The machines an operator command knows: read from `.stm` files and directories
//! (`--machines`, else `HAREL_MACHINES`), never compiled in, since a general tool must not
//! carry one application's machines. The deployed functions run theirs; the operator points
//! here at the same files (the app's `machines/`, the `machines-layer/`).
//!
//! `create` checks a machine name and its context against them, `send` an event's data: both
//! still send without them (the worker dead-letters what does not fit), saying so. `cancel`
//! reads whether the machine models `Cancel` and `redrive` checks its target: they cannot
//! decide without the machine, and refuse.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use harel_model::Definition;

/// Where the machines come from when no `--machines` is given: a path list, as PATH is.
pub const ENV: &str = "HAREL_MACHINES";

/// How to give the machines, for the messages that ask for them.
const HOW: &str = "--machines DIR or FILE.stm (the .stm files the functions run, e.g. functions/app/machines) or HAREL_MACHINES";

#[derive(Clone, Debug, Default, clap::Args)]
pub struct MachineArgs {
    /// The machines the functions run: a .stm file, or a directory whose *.stm files are all
    /// read (sorted by name, not its subdirectories). Repeatable; a later machine of the same
    /// name replaces an earlier one. Without it, HAREL_MACHINES (paths separated as in PATH)
    #[arg(long = "machines", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug)]
pub struct Machines {
    all: BTreeMap<String, Definition>,
    /// Where they were read from, for messages: `--machines` or `HAREL_MACHINES`.
    origin: &'static str,
}

impl MachineArgs {
    pub fn load(&self) -> anyhow::Result<Machines> {
        self.load_with(std::env::var_os(ENV))
    }

    /// [`MachineArgs::load`] with `env` as the value of `HAREL_MACHINES` (tests set none).
    fn load_with(&self, env: Option<OsString>) -> anyhow::Result<Machines> {
        let (paths, origin) = match (&self.paths[..], env) {
            ([], Some(list)) => (
                std::env::split_paths(&list)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect(),
                ENV,
            ),
            _ => (self.paths.clone(), "--machines"),
        };
        let mut all = BTreeMap::new();
        for path in &paths {
            for file in stm_files(path, origin)? {
                for defn in load_file(&file)? {
                    all.insert(defn.id.clone(), defn);
                }
            }
        }
        Ok(Machines { all, origin })
    }
}

/// `path` itself, or the `.stm` files of the directory `path`, by name.
fn stm_files(path: &Path, origin: &str) -> anyhow::Result<Vec<PathBuf>> {
    harel_lang::machines::machine_files(path)
        .map_err(|e| super::exit::usage(format_args!("{origin} {e}")))
}

/// Every machine of `file`, loaded and validated as the functions load them; a file that does
/// not parse says where (`file:line:col` and a caret, harel_lang's own message).
fn load_file(file: &Path) -> anyhow::Result<Vec<Definition>> {
    Ok(harel_lang::machines::load_machines_of_file(file)?)
}

impl Machines {
    /// No machine given at all: what is sent cannot be checked here.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// Machine `id`, which the command cannot do without (`why`: what it reads it for).
    /// Unknown among the machines given is "not found"; none given at all is a missing
    /// argument.
    pub fn get(&self, id: &str, why: &str) -> anyhow::Result<&Definition> {
        if self.is_empty() {
            return Err(super::exit::usage(format_args!(
                "machine {id:?} is unknown here, as no machines were given; {why}. Give them with {HOW}"
            )));
        }
        self.all.get(id).ok_or_else(|| {
            super::exit::not_found(format_args!(
                "unknown machine {id:?}: the functions run {} (per {}); {why}. Add the .stm file or directory that declares it",
                self.all.keys().map(String::as_str).collect::<Vec<_>>().join(", "),
                self.origin,
            ))
        })
    }

    /// Every machine given, by name.
    pub fn all(&self) -> impl Iterator<Item = &Definition> {
        self.all.values()
    }

    pub fn find(&self, id: &str) -> Option<&Definition> {
        self.all.get(id)
    }

    /// The stderr line of a command that sent `what` for machine `id` without checking it.
    pub fn unchecked(&self, id: &str, what: &str) -> String {
        let why = if self.is_empty() {
            format!("no machines were given; to have them checked, give {HOW}")
        } else {
            format!(
                "machine {id} is not among those of {}; add the .stm file that declares it",
                self.origin
            )
        };
        format!(
            "note: {what} not checked locally, {why}. The worker dead-letters what does not fit."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("harel-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
        let path = dir.join(file);
        std::fs::write(&path, text).expect("write");
        path
    }

    fn machine(name: &str, first: &str) -> String {
        format!("machine {name} {{\n  initial {first}\n  final {first} done\n}}\n")
    }

    fn args(paths: &[&Path]) -> MachineArgs {
        MachineArgs {
            paths: paths.iter().map(|p| p.to_path_buf()).collect(),
        }
    }

    fn names(m: &Machines) -> Vec<&str> {
        m.all.keys().map(String::as_str).collect()
    }

    #[test]
    fn a_directory_gives_its_stm_files_in_name_order_and_later_wins() {
        let dir = scratch("dir");
        write(&dir, "b.stm", &machine("Shared", "FromB"));
        write(
            &dir,
            "a.stm",
            &(machine("Shared", "FromA") + &machine("Alone", "X")),
        );
        write(&dir, "notes.md", "not a machine");
        let sub = dir.join("lib");
        std::fs::create_dir_all(&sub).expect("subdir");
        write(&sub, "deep.stm", &machine("Deep", "D"));
        let loaded = args(&[&dir]).load_with(None).expect("loads");
        assert_eq!(names(&loaded), ["Alone", "Shared"], "not recursive");
        let shared = loaded.find("Shared").expect("there");
        assert!(shared.get("FromB").is_some(), "b.stm after a.stm");

        // a file given after the directory replaces its machine of the same name
        let later = write(&sub, "override.stm", &machine("Shared", "Later"));
        let loaded = args(&[&dir, &later]).load_with(None).expect("loads");
        let shared = loaded.find("Shared").expect("there");
        assert!(shared.get("Later").is_some());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn harel_machines_is_read_only_without_the_option() {
        let dir = scratch("env");
        let one = write(&dir, "one.stm", &machine("One", "A"));
        let two = write(&dir, "two.stm", &machine("Two", "A"));
        let list = std::env::join_paths([&one, &two]).expect("joins");
        let loaded = args(&[]).load_with(Some(list.clone())).expect("loads");
        assert_eq!(names(&loaded), ["One", "Two"]);
        assert_eq!(loaded.origin, ENV);
        let loaded = args(&[&one]).load_with(Some(list)).expect("loads");
        assert_eq!(names(&loaded), ["One"], "--machines wins");
        let loaded = args(&[]).load_with(Some("".into())).expect("loads");
        assert!(loaded.is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn without_machines_get_asks_for_them_and_unknown_is_not_found() {
        let none = args(&[]).load_with(None).expect("nothing to load");
        assert!(none.is_empty());
        let err = none.get("Job", "cancel reads it").expect_err("none given");
        assert_eq!(
            super::super::exit::kind_of(&err),
            Some(super::super::exit::Kind::Usage)
        );
        let said = err.to_string();
        assert!(said.contains("machine \"Job\""), "{said}");
        assert!(said.contains("--machines DIR"), "{said}");
        assert!(said.contains("HAREL_MACHINES"), "{said}");
        assert!(none.unchecked("Job", "x").contains("--machines DIR"));

        let dir = scratch("get");
        write(&dir, "one.stm", &machine("One", "A"));
        let some = args(&[&dir]).load_with(None).expect("loads");
        let err = some.get("Nope", "create checks it").expect_err("unknown");
        assert_eq!(
            super::super::exit::kind_of(&err),
            Some(super::super::exit::Kind::NotFound)
        );
        assert!(err
            .to_string()
            .starts_with("unknown machine \"Nope\": the functions run One (per --machines"));
        assert!(some
            .unchecked("Nope", "x")
            .contains("not among those of --machines"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_missing_path_is_a_usage_error_and_a_broken_file_says_where() {
        let dir = scratch("broken");
        let err = args(&[&dir.join("gone")])
            .load_with(None)
            .expect_err("missing");
        assert_eq!(
            super::super::exit::kind_of(&err),
            Some(super::super::exit::Kind::Usage)
        );
        let file = write(&dir, "bad.stm", "machine Bad {\n  initial A\n  state A {\n");
        let err = args(&[&dir]).load_with(None).expect_err("broken");
        let said = format!("{err:#}");
        assert!(said.starts_with(&format!("{}:", file.display())), "{said}");
        assert!(said.contains('^'), "a caret: {said}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
