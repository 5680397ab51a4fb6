//! Resolve a parsed `Program` into a `Definition` (harel's `dsl/loader.py`).
//!
//! The program and its imports are merged (`imports`), the selected machine is expanded
//! (`expand`: `use`s spliced in, each action resolved through the bindings — `bind {}`,
//! then the programmatic overrides, which win —, named guards and value parameters
//! substituted). Unbound names are aggregated across the machine and reported at the
//! machine's declaration, as harel does. Then harel's builder runs; its errors come back
//! located at the node that caused them, in the file that node was written in.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use harel_model::build::build_definition;
use harel_model::pyrepr::py_repr;
use harel_model::Definition;

use crate::error::{ErrorKind, LangError, Pos};
use crate::expand::{pos_of, Expander, Scope};
use crate::imports::{Base, Importer, Source};
use crate::parser::{parse, Object, Program};

/// How to load: harel's `actions=` / `guards=` seams, and our own leniency switch.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// handler name -> implementation path; overrides the file's `bind {}`.
    pub bindings: IndexMap<String, String>,
    /// guard name -> predicate dict (`{"status__eq": "x"}`); overrides `guard` declarations.
    pub guards: IndexMap<String, Object>,
    /// harel refuses a handler no `bind` maps; with this set, an unbound handler is kept
    /// as its own name instead (`harel run` treats unimplemented actions as no-ops).
    pub allow_unbound_actions: bool,
}

/// Everything a load produced, for tools that need more than the Definition.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The built machine.
    pub definition: Definition,
    /// The parsed file the machine came from (all its declarations, not only the machine's).
    pub program: Program,
    /// The machine's name (the selected one).
    pub name: String,
    /// The effective handler -> implementation map (file bindings, then overrides).
    pub bindings: IndexMap<String, String>,
    /// Handlers nothing binds, kept as their own names (only under `allow_unbound_actions`).
    pub unbound_actions: Vec<String>,
    /// The resolved config dict handed to the builder.
    pub config: Value,
    /// `full_path -> (line, column)` of every state (harel's `_position_index`); a state
    /// spliced from an imported fragment has its position in that fragment's file.
    pub positions: HashMap<String, Pos>,
    /// `full_path -> file` of every state: the machine's file, or for a state spliced
    /// from an imported fragment, that fragment's file (where `positions` points).
    pub position_files: HashMap<String, String>,
    /// The files imported, directly or not, in the order first read.
    pub imports: Vec<String>,
}

impl Loaded {
    /// Where the state a validation issue is about was declared (harel's
    /// `definition_with_positions`, for tools that point at the source).
    pub fn issue_pos(&self, issue: &crate::validate::Issue) -> Option<Pos> {
        self.positions.get(&issue.path).copied()
    }

    /// The file `issue_pos` is a position in.
    pub fn issue_file(&self, issue: &crate::validate::Issue) -> Option<&str> {
        self.position_files.get(&issue.path).map(String::as_str)
    }
}

/// Load and build the machine `name` (or the only one) of the file at `path`.
pub fn load_file(path: &Path, name: Option<&str>) -> Result<Definition, LangError> {
    load_file_with(path, name, &LoadOptions::default()).map(|l| l.definition)
}

/// Load and build from text; `origin` names the text in errors (usually its path).
pub fn load_str(text: &str, name: Option<&str>, origin: &str) -> Result<Definition, LangError> {
    load_str_with(text, name, origin, &LoadOptions::default()).map(|l| l.definition)
}

/// [`load_file`] with [`LoadOptions`], returning everything the load produced ([`Loaded`]):
/// the Definition, and what tools need to point back at the source.
pub fn load_file_with(
    path: &Path,
    name: Option<&str>,
    options: &LoadOptions,
) -> Result<Loaded, LangError> {
    load_text_with(&read(path)?, path, name, options)
}

/// [`load_file_with`] on `text` instead of the file's contents: an editor's unsaved
/// buffer for the file at `path` (its imports resolved from `path`'s directory).
pub fn load_text_with(
    text: &str,
    path: &Path,
    name: Option<&str>,
    options: &LoadOptions,
) -> Result<Loaded, LangError> {
    let source = Rc::new(Source {
        origin: path.display().to_string(),
        text: text.to_string(),
    });
    let real = std::fs::canonicalize(path).ok();
    load_source(
        &source,
        real,
        Some(&Base::of_file(path)),
        name,
        options,
        true,
    )
}

/// Parse a file into its `Program` without building anything (`harel list`).
pub fn parse_file(path: &Path) -> Result<Program, LangError> {
    let text = read(path)?;
    parse(&text, &path.display().to_string())
}

fn read(path: &Path) -> Result<String, LangError> {
    std::fs::read_to_string(path).map_err(|e| {
        LangError::new(
            ErrorKind::Io,
            &path.display().to_string(),
            format!("cannot read the file: {e}"),
        )
    })
}

/// [`load_str`] with [`LoadOptions`], returning everything the load produced ([`Loaded`]);
/// imports resolve from the current directory (there is no file to be relative to).
pub fn load_str_with(
    text: &str,
    name: Option<&str>,
    origin: &str,
    options: &LoadOptions,
) -> Result<Loaded, LangError> {
    let source = Rc::new(Source {
        origin: origin.to_string(),
        text: text.to_string(),
    });
    load_source(&source, None, None, name, options, true)
}

/// `_resolve_cfg` + `_build`: load the program and its imports, select the machine,
/// expand it, report what did not resolve, build; then (`definition_from_dsl`'s
/// `_register_imports`) register every machine of the imported files as a submachine.
fn load_source(
    source: &Rc<Source>,
    real: Option<PathBuf>,
    base: Option<&Base>,
    name: Option<&str>,
    options: &LoadOptions,
    register_imports: bool,
) -> Result<Loaded, LangError> {
    let origin = source.origin.as_str();
    let mut importer = Importer::new(real, origin);
    let (program, registry) = importer.load(source, base)?;
    let name = select(&program, name, origin)?;
    let machine = &program.machines[&name];

    let mut bindings = registry.bindings.clone();
    bindings.extend(options.bindings.clone());
    let mut guards = registry.guards.clone();
    guards.extend(options.guards.clone());
    let scope = Scope {
        bindings: bindings.clone(),
        guards,
        values: IndexMap::new(),
        states: IndexMap::new(),
        events: IndexMap::new(),
        source: Rc::clone(source),
    };
    let mut cx = Expander::new(&registry.fragments);
    let mut cfg = cx.expand(machine, &scope, "")?;
    // unbound references are aggregated across the whole machine (no single site), so
    // they point at the machine declaration, as harel's do
    let located = |message: String| source.error(ErrorKind::Semantic, pos_of(machine), message);
    if !cx.unbound.is_empty() && !options.allow_unbound_actions {
        return Err(located(format!(
            "unbound action handlers: {} (add a `bind` or pass actions=)",
            sorted(&cx.unbound)
        ))
        .with_hint(Some(format!(
            "declare it with `bind {{ {} = pkg.mod.fn }}`",
            sorted_vec(&cx.unbound)[0]
        ))));
    }
    if !cx.unbound_g.is_empty() {
        return Err(located(format!(
            "unbound guards: {} (add a `guard` decl, a use arg, or pass guards=)",
            sorted(&cx.unbound_g)
        )));
    }
    if !cx.unbound_v.is_empty() {
        return Err(located(format!(
            "unbound value params: {} (only valid inside a fragment)",
            sorted(&cx.unbound_v)
        )));
    }
    if let Some(cycle) = &cx.cycle {
        return Err(located(format!(
            "guard {} refers to itself",
            py_repr(&Value::String(cycle.clone()))
        )));
    }
    if !registry.events.is_empty() {
        // `{**events, **cfg.get("events", {})}`
        let mut events: Map<String, Value> = registry
            .events
            .iter()
            .map(|(k, v)| (k.clone(), Value::Object(v.clone())))
            .collect();
        if let Some(Value::Object(own)) = cfg.get("events") {
            events.extend(own.clone());
        }
        cfg.insert("events".into(), Value::Object(events));
    }
    let config = Value::Object(cfg);
    let mut definition = build_definition(&config, &name, None).map_err(|e| {
        // a position can be in the machine's file or in an imported fragment's: shown in
        // the one file it can come from (harel shows no source line once there are imports)
        match (e.pos, e.pos.and_then(|p| cx.origin_of(p))) {
            (Some(pos), Some(file)) => file.error(ErrorKind::Semantic, Some(pos), e.message),
            (Some(pos), None) => LangError::new(
                ErrorKind::Semantic,
                origin,
                format!(
                    "{} (at line {}, column {} of {origin} or of a file it imports)",
                    e.message, pos.0, pos.1
                ),
            ),
            (None, _) => LangError::new(ErrorKind::Semantic, origin, e.message),
        }
    })?;
    if register_imports {
        let mut seen = HashSet::new();
        let imported = imported_machines(&source.text, &source.origin, base, &mut seen, options);
        for (fqn, sub) in imported {
            definition.submachines.entry(fqn).or_insert(sub);
        }
    }
    let mut positions = HashMap::new();
    position_index(
        config.as_object().expect("config is an object"),
        "",
        &mut positions,
    );
    let mut unbound_actions = sorted_vec(&cx.unbound);
    unbound_actions.dedup();
    Ok(Loaded {
        definition,
        program,
        name,
        bindings,
        unbound_actions,
        config,
        positions,
        position_files: std::mem::take(&mut cx.state_files),
        imports: registry.files,
    })
}

/// harel `_imported_machines`: every machine of each imported file, built on its own and
/// keyed by its alias-scoped FQN (`{alias}.{name}`, else `{name}`, which becomes its id so
/// a runner registers it under that name), with its inline machines alongside; transitive
/// imports keep the alias chain. A file that does not read, parse or build is skipped: the
/// main load has reported it already (or the machine is not used).
///
/// harel keys a transitive import by the chain (`ns.Inner`) but leaves its id the inner
/// FQN (`Inner`), and a runner registers submachines by id, so `invoke ns.Inner` of a
/// transitive aliased import does not resolve there; kept as harel has it.
fn imported_machines(
    text: &str,
    origin: &str,
    base: Option<&Base>,
    seen: &mut HashSet<PathBuf>,
    options: &LoadOptions,
) -> IndexMap<String, Arc<Definition>> {
    let mut out = IndexMap::new();
    let Ok(prog) = parse(text, origin) else {
        return out;
    };
    // harel builds imported machines without the caller's actions and guards
    let inner_options = LoadOptions {
        allow_unbound_actions: options.allow_unbound_actions,
        ..LoadOptions::default()
    };
    for import in &prog.imports {
        let joined = match base {
            Some(b) => b.real.join(&import.path),
            None => PathBuf::from(&import.path),
        };
        let Ok(real) = std::fs::canonicalize(&joined) else {
            continue;
        };
        if !seen.insert(real.clone()) {
            continue;
        }
        let Ok(itext) = std::fs::read_to_string(&real) else {
            continue;
        };
        let ishown = match base {
            Some(b) => b.shown.join(&import.path).display().to_string(),
            None => import.path.clone(),
        };
        let Ok(iprog) = parse(&itext, &ishown) else {
            continue;
        };
        let ibase = Base::of_file(&real);
        let isource = Rc::new(Source {
            origin: ishown.clone(),
            text: itext.clone(),
        });
        for mname in iprog.machines.keys() {
            let fqn = match &import.alias {
                Some(alias) => format!("{alias}.{mname}"),
                None => mname.clone(),
            };
            let built = load_source(
                &isource,
                Some(real.clone()),
                Some(&ibase),
                Some(mname),
                &inner_options,
                false,
            );
            let Ok(loaded) = built else {
                continue;
            };
            let mut sub = loaded.definition;
            sub.id = fqn.clone();
            let inline: Vec<(String, Arc<Definition>)> = sub
                .submachines
                .iter()
                .map(|(k, v)| (k.clone(), Arc::clone(v)))
                .collect();
            out.insert(fqn, Arc::new(sub));
            out.extend(inline);
        }
        for (tfqn, tsub) in imported_machines(&itext, &ishown, Some(&ibase), seen, options) {
            let key = match &import.alias {
                Some(alias) => format!("{alias}.{tfqn}"),
                None => tfqn,
            };
            out.entry(key).or_insert(tsub);
        }
    }
    out
}

/// harel's machine selection, with its messages.
fn select(program: &Program, name: Option<&str>, origin: &str) -> Result<String, LangError> {
    let err = |m: String| LangError::new(ErrorKind::Selection, origin, m);
    if program.machines.is_empty() {
        return Err(err("no machine declared".into()));
    }
    match name {
        None if program.machines.len() > 1 => Err(err(format!(
            "multiple machines ({}); pass name=",
            program
                .machines
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(program.machines.keys().next().expect("one machine").clone()),
        Some(n) if program.machines.contains_key(n) => Ok(n.to_string()),
        Some(n) => Err(err(format!(
            "no machine named {}",
            py_repr(&Value::String(n.into()))
        ))),
    }
}

fn sorted_vec(names: &[String]) -> Vec<String> {
    let mut v = names.to_vec();
    v.sort();
    v.dedup();
    v
}

fn sorted(names: &[String]) -> String {
    sorted_vec(names).join(", ")
}

/// `_position_index`: full_path -> position, deriving paths as the builder does.
fn position_index(cfg: &Object, path: &str, out: &mut HashMap<String, Pos>) {
    if let Some(pos) = pos_of(cfg) {
        out.insert(path.to_string(), pos);
    }
    if let Some(Value::Object(states)) = cfg.get("states") {
        for (name, st) in states {
            if let Value::Object(st) = st {
                let child = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                position_index(st, &child, out);
            }
        }
    }
}

/// The `.stm` files directly in `dir`, sorted by name: a machines directory, as the functions
/// read `HAREL_DEFINITIONS_DIR` and the CLI `--machines DIR` (subdirectories are not read:
/// they hold what the files import).
pub fn stm_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "stm"))
        .collect();
    files.sort();
    Ok(files)
}
