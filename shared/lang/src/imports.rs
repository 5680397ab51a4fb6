//! `import "file.stm" [as ns]`: a program and everything it imports, merged into the
//! registries the expansion resolves against (harel's `_load_program`).
//!
//! Merging is harel's: an imported file's events, bindings and guards come in bare, its
//! fragments under `ns.` when the import is aliased (so a transitive import's fragment
//! becomes `ns.inner.F`); the importing file's own declarations are merged last and win.
//! Paths are relative to the importing file's directory.
//!
//! A cycle versus a diamond: harel keeps one set of files already seen and silently skips
//! any file seen before, so `a -> b -> a` loads (the root file is read twice) and so does a
//! diamond (`a -> b -> d`, `a -> c -> d`: `d` is read once, through `b`). Here a file that
//! imports a file still being loaded above it (the root included, and a file importing
//! itself) is an `import cycle` error naming the chain, since such a file can only mean
//! itself and harel's result depends on which end it happened to start from. A file
//! imported again from another branch (a diamond) is skipped exactly as harel skips it, so
//! every program harel loads without a cycle loads here the same.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use indexmap::IndexMap;

use crate::error::{ErrorKind, LangError, Pos};
use crate::parser::{parse, Object, Program};

/// A file's text and the name it goes by in errors, so an error inside an imported
/// fragment points into that file.
#[derive(Debug)]
pub(crate) struct Source {
    pub origin: String,
    pub text: String,
}

impl Source {
    pub(crate) fn error(&self, kind: ErrorKind, pos: Option<Pos>, message: String) -> LangError {
        match pos {
            Some(pos) => LangError::at(kind, &self.origin, &self.text, pos, message),
            None => LangError::new(kind, &self.origin, message),
        }
    }
}

/// A fragment declaration and the file it was declared in (harel's `__src__`).
#[derive(Clone, Debug)]
pub(crate) struct Fragment {
    pub cfg: Object,
    pub source: Rc<Source>,
}

/// What a program and its imports declare, merged.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub events: IndexMap<String, Object>,
    pub fragments: IndexMap<String, Fragment>,
    pub bindings: IndexMap<String, String>,
    pub guards: IndexMap<String, Object>,
    /// Every imported file, in the order first read.
    pub files: Vec<String>,
}

/// A file on the import chain: its real path (to recognise it again) and its name in
/// messages.
struct Link {
    real: Option<PathBuf>,
    shown: String,
}

pub(crate) struct Importer {
    seen: HashSet<PathBuf>,
    chain: Vec<Link>,
}

/// Where an importing file's imports resolve from: its real directory (harel resolves
/// against `resolved.parent`) and the directory as written, for readable file names.
#[derive(Clone)]
pub(crate) struct Base {
    pub real: PathBuf,
    pub shown: PathBuf,
}

impl Base {
    /// The directory of the file at `path` (as given by the caller).
    pub(crate) fn of_file(path: &Path) -> Base {
        let shown = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let real = std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| shown.clone());
        Base { real, shown }
    }
}

/// `a/./b` -> `a/b`, so chains read as the files are named.
fn tidy(path: &Path) -> String {
    let parts: PathBuf = path
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    parts.display().to_string()
}

impl Importer {
    /// Loading starts at the root file: `real` is its path when it is a file.
    pub(crate) fn new(root_real: Option<PathBuf>, root_shown: &str) -> Importer {
        Importer {
            seen: HashSet::new(),
            chain: vec![Link {
                real: root_real,
                shown: root_shown.to_string(),
            }],
        }
    }

    fn chain_to(&self, last: &str) -> String {
        let mut names: Vec<&str> = self.chain.iter().map(|l| l.shown.as_str()).collect();
        names.push(last);
        names.join(" -> ")
    }

    /// Parse `source` and pull in its imports, recursively (`_load_program`). `base` is
    /// where its imports resolve from: `None` for text that is not a file (harel then
    /// resolves against the working directory).
    pub(crate) fn load(
        &mut self,
        source: &Rc<Source>,
        base: Option<&Base>,
    ) -> Result<(Program, Registry), LangError> {
        let prog = parse(&source.text, &source.origin)?;
        let mut reg = Registry::default();
        for import in &prog.imports {
            let (real, shown) = match base {
                Some(b) => (b.real.join(&import.path), b.shown.join(&import.path)),
                None => (PathBuf::from(&import.path), PathBuf::from(&import.path)),
            };
            let shown = tidy(&shown);
            let located =
                |message: String| source.error(ErrorKind::Semantic, Some(import.pos), message);
            if !real.exists() {
                return Err(located(format!(
                    "import not found: {} (import chain: {})",
                    import.path,
                    self.chain_to(&shown)
                )));
            }
            let real = std::fs::canonicalize(&real).map_err(|e| {
                source.error(
                    ErrorKind::Io,
                    Some(import.pos),
                    format!("cannot read the import {}: {e}", import.path),
                )
            })?;
            if self.chain.iter().any(|l| l.real.as_ref() == Some(&real)) {
                return Err(located(format!("import cycle: {}", self.chain_to(&shown))));
            }
            if !self.seen.insert(real.clone()) {
                // a diamond: already merged through another branch (harel skips it too)
                continue;
            }
            let text = std::fs::read_to_string(&real).map_err(|e| {
                source.error(
                    ErrorKind::Io,
                    Some(import.pos),
                    format!("cannot read the import {}: {e}", import.path),
                )
            })?;
            let imported = Rc::new(Source {
                origin: shown.clone(),
                text,
            });
            let next = Base {
                real: real.parent().map(Path::to_path_buf).unwrap_or_default(),
                shown: Path::new(&shown)
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default(),
            };
            self.chain.push(Link {
                real: Some(real),
                shown: shown.clone(),
            });
            reg.files.push(shown);
            let (_, inner) = self.load(&imported, Some(&next))?;
            self.chain.pop();
            reg.events.extend(inner.events);
            reg.bindings.extend(inner.bindings);
            reg.guards.extend(inner.guards);
            reg.files.extend(inner.files);
            for (name, frag) in inner.fragments {
                let key = match &import.alias {
                    Some(alias) => format!("{alias}.{name}"),
                    None => name,
                };
                reg.fragments.insert(key, frag);
            }
        }
        reg.events.extend(prog.events.clone());
        reg.bindings.extend(prog.bindings.clone());
        reg.guards.extend(prog.guards.clone());
        for (name, cfg) in &prog.fragments {
            reg.fragments.insert(
                name.clone(),
                Fragment {
                    cfg: cfg.clone(),
                    source: Rc::clone(source),
                },
            );
        }
        Ok((prog, reg))
    }
}
