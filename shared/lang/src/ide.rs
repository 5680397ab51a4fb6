//! What an editor asks of a `.stm` file, without the protocol (`harel lsp` maps it onto
//! LSP): harel 0.9.0's `lsp/diagnostics.py` and `lsp/symbols.py`, plus actions (hover,
//! go-to-definition and completion of `bind` names) and document symbols.
//!
//! - [`analyze`]: the diagnostics an author would get from `harel validate`, located:
//!   the parser's error, else each machine's load error, else its validation issues at
//!   the state they are about (same codes and messages).
//! - [`index`]: the document's declarations (and those of the files it imports) with
//!   their positions and a markdown detail for hover and completion.
//! - [`word_at`], [`category_at`], [`import_at`]: what the cursor is on, and what kind of
//!   name the keyword before it expects. These read the line's text, not the parse tree,
//!   because an editor's buffer is mid-edit (and so does not parse) most of the time.
//!
//! Positions in symbols and diagnostics are 1-based (line, character column) as in
//! [`LangError`]; cursors are 0-based (line, character column) as editors count lines.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use pest::iterators::Pair;
use pest::Parser as _;
use serde_json::Value;

use harel_model::pyrepr::py_repr;
use harel_model::{Definition, NodeId};

use crate::error::LangError;
use crate::loader::{load_str_with, load_text_with, LoadOptions, Loaded};
use crate::parser::{parse, DeclKind, Program, Rule, StmParser};
use crate::validate::{validate, Severity};

/// One finding for the editor, spanning (line, column) to (end_line, end_column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The 1-based line it starts on.
    pub line: usize,
    /// The 1-based character column it starts at.
    pub column: usize,
    /// The 1-based line it ends on (the start line: a diagnostic spans to its line's end).
    pub end_line: usize,
    /// The 1-based character column it ends before (exclusive).
    pub end_column: usize,
    /// Error or warning, as `harel validate` grades it.
    pub severity: Severity,
    /// The validation code (`unreachable`, ...); `None` for a parse or load error.
    pub code: Option<&'static str>,
    /// The text shown, in harel's words.
    pub message: String,
}

/// The lines as the parser counts them (`\n`-separated, a `\r` before it dropped).
fn lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

fn line_len(text: &str, line: usize) -> usize {
    lines(text)
        .get(line.wrapping_sub(1))
        .map_or(0, |l| l.chars().count())
}

/// A located diagnostic running to the end of its line, where the editor squiggles it.
fn spanning(text: &str, (line, column): (usize, usize), severity: Severity) -> Diagnostic {
    let end_column = (line_len(text, line) + 1).max(column + 1);
    Diagnostic {
        line,
        column,
        end_line: line,
        end_column,
        severity,
        code: None,
        message: String::new(),
    }
}

/// A load or parse error as a diagnostic: the message, what was expected and the hint
/// (the editor draws the caret itself). An error located in another file (an imported
/// fragment) is anchored at the top of this one and names where it is.
fn from_error(e: &LangError, text: &str, origin: &str) -> Diagnostic {
    let mut message = e.message.clone();
    let pos = match e.pos {
        Some(pos) if e.origin == origin => pos,
        Some((l, c)) => {
            message = format!("{}:{l}:{c}: {message}", e.origin);
            (1, 1)
        }
        None if e.origin != origin => {
            message = format!("{}: {message}", e.origin);
            (1, 1)
        }
        None => (1, 1),
    };
    if let Some(expected) = &e.expected {
        message.push_str(&format!("\nexpected {expected}"));
    }
    if let Some(hint) = &e.hint {
        message.push_str(&format!("\nhint: {hint}"));
    }
    Diagnostic {
        message,
        ..spanning(text, pos, Severity::Error)
    }
}

fn origin_of(path: Option<&Path>) -> String {
    path.map_or_else(|| "<buffer>".to_string(), |p| p.display().to_string())
}

/// `text` loaded as the file at `path` (its imports resolved from there), or on its own.
fn load(
    text: &str,
    path: Option<&Path>,
    name: &str,
    options: &LoadOptions,
) -> Result<Loaded, LangError> {
    match path {
        Some(path) => load_text_with(text, path, Some(name), options),
        None => load_str_with(text, Some(name), &origin_of(None), options),
    }
}

/// The diagnostics of the document `text` (the file at `path`, if it is one). A parse
/// error stops there; otherwise each machine is loaded as `harel validate` loads it and
/// validated, each issue at the state it names (the top of the file when that state
/// comes from another file). A file of fragments and events alone has none.
pub fn analyze(text: &str, path: Option<&Path>) -> Vec<Diagnostic> {
    let origin = origin_of(path);
    let program = match parse(text, &origin) {
        Ok(p) => p,
        Err(e) => return vec![from_error(&e, text, &origin)],
    };
    let mut out = Vec::new();
    for name in program.machines.keys() {
        let loaded = match load(text, path, name, &LoadOptions::default()) {
            Ok(l) => l,
            Err(e) => {
                out.push(from_error(&e, text, &origin));
                continue;
            }
        };
        for issue in validate(&loaded.definition) {
            let here = loaded.issue_file(&issue) == Some(origin.as_str());
            let pos = loaded.issue_pos(&issue).filter(|_| here).unwrap_or((1, 1));
            let at = if issue.path.is_empty() {
                String::new()
            } else {
                format!(" (at {})", issue.path)
            };
            out.push(Diagnostic {
                code: Some(issue.code),
                message: format!("{}: {}{at}", issue.code, issue.message),
                ..spanning(text, pos, issue.severity)
            });
        }
    }
    out
}

/// What a declaration is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// A state (`state NAME`), of any kind.
    State,
    /// `event NAME { ... }`.
    Event,
    /// `guard NAME = ...`.
    Guard,
    /// `fragment NAME { ... }`.
    Fragment,
    /// A machine, as an `invoke` names it.
    Machine,
    /// An action handler (`bind { name = impl }`, or used unbound).
    Action,
    /// A `context { ... }` field.
    Context,
}

/// A declaration: its name, 1-based position, a markdown detail, and its file (`None`:
/// the open document; set for what an `import` brought in).
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    /// The name as declared (a state's own name, not its full path).
    pub name: String,
    /// What it declares.
    pub kind: SymbolKind,
    /// The 1-based line of the name.
    pub line: usize,
    /// The 1-based character column of the name.
    pub column: usize,
    /// Markdown for hover and completion: its kind, and what it holds (an event's fields, a
    /// state's children and hooks, a binding's implementation...).
    pub detail: String,
    /// The file it is declared in, for a declaration an `import` brought in; None: the open
    /// document.
    pub file: Option<PathBuf>,
}

/// A machine of the document, built, with its states' symbols by full path.
#[derive(Clone, Debug)]
pub struct MachineIndex {
    /// The built machine (validation and state lookups run on it).
    pub definition: Definition,
    /// full_path -> the state's declaration.
    pub states: HashMap<String, Symbol>,
}

/// The document's declarations and those of its imports (a local one wins).
#[derive(Clone, Debug, Default)]
pub struct SymbolIndex {
    /// State name -> its declarations (a name repeats across scopes and machines).
    pub states: IndexMap<String, Vec<Symbol>>,
    /// Event name -> its declaration.
    pub events: IndexMap<String, Symbol>,
    /// Guard name -> its declaration.
    pub guards: IndexMap<String, Symbol>,
    /// Keyed as a `use` names them (`alias.Frag` for an aliased import's).
    pub fragments: IndexMap<String, Symbol>,
    /// Keyed as an `invoke` names them (`alias.Machine` for an aliased import's).
    pub machines: IndexMap<String, Symbol>,
    /// Handler name -> its `bind` entry (or its first use, for a handler nothing binds).
    pub actions: IndexMap<String, Symbol>,
    /// Context field name -> its declaration in a machine's `context { ... }` block.
    pub context_fields: IndexMap<String, Symbol>,
    /// The document's own machines, by name (those that load).
    pub built: IndexMap<String, MachineIndex>,
}

impl SymbolIndex {
    /// `name` as a declaration of `kind`, or of any kind (state, event, guard, fragment,
    /// action, machine, in that order) when the context does not say.
    pub fn lookup(&self, name: &str, kind: Option<SymbolKind>) -> Option<&Symbol> {
        let order: &[SymbolKind] = match kind {
            Some(k) => &[k][..],
            None => &[
                SymbolKind::State,
                SymbolKind::Event,
                SymbolKind::Guard,
                SymbolKind::Fragment,
                SymbolKind::Action,
                SymbolKind::Machine,
            ],
        };
        let found = order.iter().find_map(|k| match k {
            SymbolKind::State => self.states.get(name).and_then(|s| s.first()),
            SymbolKind::Event => self.events.get(name),
            SymbolKind::Guard => self.guards.get(name),
            SymbolKind::Fragment => self.fragments.get(name),
            SymbolKind::Machine => self.machines.get(name),
            SymbolKind::Action => self.actions.get(name),
            SymbolKind::Context => self.context_fields.get(name),
        });
        found.or_else(|| {
            name.strip_prefix("context.")
                .and_then(|f| self.context_fields.get(f))
        })
    }

    /// Every declaration of `kind` (for completion); every one but context fields
    /// without a kind.
    pub fn names(&self, kind: Option<SymbolKind>) -> Vec<&Symbol> {
        let states = || self.states.values().filter_map(|s| s.first());
        match kind {
            Some(SymbolKind::State) => states().collect(),
            Some(SymbolKind::Event) => self.events.values().collect(),
            Some(SymbolKind::Guard) => self.guards.values().collect(),
            Some(SymbolKind::Fragment) => self.fragments.values().collect(),
            Some(SymbolKind::Machine) => self.machines.values().collect(),
            Some(SymbolKind::Action) => self.actions.values().collect(),
            Some(SymbolKind::Context) => self.context_fields.values().collect(),
            None => states()
                .chain(self.events.values())
                .chain(self.guards.values())
                .chain(self.fragments.values())
                .chain(self.actions.values())
                .collect(),
        }
    }
}

fn symbol(
    name: &str,
    kind: SymbolKind,
    (line, column): (usize, usize),
    detail: String,
    file: Option<&Path>,
) -> Symbol {
    Symbol {
        name: name.to_string(),
        kind,
        line,
        column,
        detail,
        file: file.map(Path::to_path_buf),
    }
}

/// Where `name` itself is written on the line of `pos` (a declaration's position is
/// its keyword's), so an editor's range covers the name; `pos` when it is not found.
fn name_pos(text: &str, (line, column): (usize, usize), name: &str) -> (usize, usize) {
    let Some(row) = lines(text)
        .get(line.wrapping_sub(1))
        .map(|r| r.chars().collect::<Vec<char>>())
    else {
        return (line, column);
    };
    let want: Vec<char> = name.chars().collect();
    let from = column.saturating_sub(1);
    (from..row.len())
        .find(|&i| {
            row[i..].starts_with(&want)
                && (i == 0 || !is_ident_char(row[i - 1]))
                && row.get(i + want.len()).is_none_or(|c| !is_ident_char(*c))
        })
        .map_or((line, column), |i| (line, i + 1))
}

fn event_detail(name: &str, fields: &serde_json::Map<String, Value>) -> String {
    if fields.is_empty() {
        return format!("**event {name}**");
    }
    let parts: Vec<String> = fields
        .iter()
        .map(|(f, spec)| {
            let required = spec
                .get("required")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let ty = spec.get("type").and_then(Value::as_str).unwrap_or("any");
            format!("{f}{}: {ty}", if required { "" } else { "?" })
        })
        .collect();
    format!("**event {name}**\n\nfields: {}", parts.join(", "))
}

fn fragment_detail(name: &str, cfg: &serde_json::Map<String, Value>) -> String {
    let params: Vec<String> = cfg
        .get("__params__")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| Some(format!("{}: {}", p.get(0)?.as_str()?, p.get(1)?.as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    format!("**fragment {name}**({})", params.join(", "))
}

fn machine_detail(name: &str, cfg: &serde_json::Map<String, Value>) -> String {
    let mut out = format!("**machine {name}** (invoke target)");
    if let Some(start) = cfg.get("start").and_then(Value::as_str) {
        out.push_str(&format!("\n\ninitial: `{start}`"));
    }
    out
}

fn state_detail(defn: &Definition, id: NodeId) -> String {
    let node = defn.node(id);
    let name = if node.name.is_empty() {
        "<root>"
    } else {
        &node.name
    };
    let mut parts = vec![format!("**state {name}** ({})", node.kind.type_name())];
    if !node.children.is_empty() {
        let names: Vec<&str> = node
            .children
            .iter()
            .map(|c| defn.node(*c).name.as_str())
            .collect();
        parts.push(format!("children: {}", names.join(", ")));
    }
    for (label, hook) in [
        ("on enter", &node.on_enter),
        ("on exit", &node.on_exit),
        ("on activity", &node.on_activity),
    ] {
        if let Some(action) = hook {
            parts.push(format!("{label}: `{}`", action.function));
        }
    }
    if let Some(t) = &node.timeout {
        parts.push(format!("timeout: `{t:?}`"));
    }
    if let Some(o) = &node.outcome {
        parts.push(format!("outcome: `{o}`"));
    }
    if let Some(i) = &node.invoke {
        parts.push(format!("invoke: `{i}`"));
    }
    parts.join("\n\n")
}

/// A program's events, guards, fragments, machines and bindings into `idx`; fragments
/// and machines take the import `prefix` (`alias.`), as the loader names them. Later
/// calls replace earlier ones' entries, so the document's own (collected last) win.
fn collect_decls(
    program: &Program,
    text: &str,
    idx: &mut SymbolIndex,
    file: Option<&Path>,
    prefix: &str,
) {
    let at = |kind: DeclKind, name: &str| {
        let pos = program.positions.get(&(kind, name.to_string())).copied()?;
        Some(name_pos(text, pos, name))
    };
    for (name, fields) in &program.events {
        if let Some(pos) = at(DeclKind::Event, name) {
            let s = symbol(
                name,
                SymbolKind::Event,
                pos,
                event_detail(name, fields),
                file,
            );
            idx.events.insert(name.clone(), s);
        }
    }
    for (name, pred) in &program.guards {
        if let Some(pos) = at(DeclKind::Guard, name) {
            let detail = format!(
                "**guard {name}**\n\n`{}`",
                py_repr(&Value::Object(pred.clone()))
            );
            idx.guards.insert(
                name.clone(),
                symbol(name, SymbolKind::Guard, pos, detail, file),
            );
        }
    }
    for (name, cfg) in &program.fragments {
        if let Some(pos) = at(DeclKind::Fragment, name) {
            let key = format!("{prefix}{name}");
            let s = symbol(
                &key,
                SymbolKind::Fragment,
                pos,
                fragment_detail(name, cfg),
                file,
            );
            idx.fragments.insert(key, s);
        }
    }
    for (name, cfg) in &program.machines {
        if let Some(pos) = at(DeclKind::Machine, name) {
            let key = format!("{prefix}{name}");
            let s = symbol(
                &key,
                SymbolKind::Machine,
                pos,
                machine_detail(name, cfg),
                file,
            );
            idx.machines.insert(key, s);
        }
    }
    collect_actions(text, idx, file);
}

/// The `bind` names of `text` (with their implementation), then the handlers its
/// actions use that nothing binds yet: read from the parse tree, since the `Program`
/// keeps no positions for either.
fn collect_actions(text: &str, idx: &mut SymbolIndex, file: Option<&Path>) {
    // too deep for pest on a small stack: `parse` has reported it already
    if crate::nesting::check(text, "").is_err() {
        return;
    }
    let Ok(mut pairs) = StmParser::parse(Rule::start, text) else {
        return;
    };
    let Some(start) = pairs.next() else { return };
    let mut used: Vec<(String, (usize, usize))> = Vec::new();
    fn walk(
        pair: Pair<'_, Rule>,
        idx: &mut SymbolIndex,
        file: Option<&Path>,
        used: &mut Vec<(String, (usize, usize))>,
    ) {
        match pair.as_rule() {
            Rule::binding => {
                let mut inner = pair.into_inner();
                let (Some(name), Some(_eq), Some(imp)) = (inner.next(), inner.next(), inner.next())
                else {
                    return;
                };
                let pos = name.as_span().start_pos().line_col();
                let detail = format!("**action {}** = `{}`", name.as_str(), imp.as_str());
                let s = symbol(name.as_str(), SymbolKind::Action, pos, detail, file);
                idx.actions.insert(name.as_str().to_string(), s);
            }
            Rule::action => {
                if let Some(head) = pair.into_inner().next() {
                    if head.as_rule() == Rule::NAME {
                        used.push((
                            head.as_str().to_string(),
                            head.as_span().start_pos().line_col(),
                        ));
                    }
                }
            }
            _ => {
                for child in pair.into_inner() {
                    walk(child, idx, file, used);
                }
            }
        }
    }
    walk(start, idx, file, &mut used);
    for (name, pos) in used {
        if !idx.actions.contains_key(&name) {
            let detail = format!("**action {name}** (no `bind` names its implementation)");
            idx.actions.insert(
                name.clone(),
                symbol(&name, SymbolKind::Action, pos, detail, file),
            );
        }
    }
}

/// The imports of `program` (read from `base`), depth first, their declarations tagged
/// with their file and the alias prefix threaded (`import "x.stm" as r` => `r.Frag`).
fn walk_imports(
    program: &Program,
    base: &Path,
    idx: &mut SymbolIndex,
    seen: &mut HashSet<PathBuf>,
    prefix: &str,
) {
    for import in &program.imports {
        let Ok(resolved) = std::fs::canonicalize(base.join(&import.path)) else {
            continue;
        };
        if !seen.insert(resolved.clone()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&resolved) else {
            continue;
        };
        let Ok(imported) = parse(&text, &resolved.display().to_string()) else {
            continue;
        };
        let child_prefix = match &import.alias {
            Some(alias) => format!("{prefix}{alias}."),
            None => prefix.to_string(),
        };
        let dir = resolved.parent().map(Path::to_path_buf).unwrap_or_default();
        walk_imports(&imported, &dir, idx, seen, &child_prefix);
        collect_decls(&imported, &text, idx, Some(&resolved), &child_prefix);
    }
}

/// The declarations of the document `text` (the file at `path`, if it is one) and of
/// the files it imports. Tolerant: a document that does not parse still offers its
/// `context` fields; a machine that does not load still offers its declarations.
pub fn index(text: &str, path: Option<&Path>) -> SymbolIndex {
    let mut idx = SymbolIndex::default();
    scan_context_fields(text, &mut idx);
    let origin = origin_of(path);
    let Ok(program) = parse(text, &origin) else {
        return idx;
    };
    if let Some(dir) = path.and_then(Path::parent) {
        let mut seen: HashSet<PathBuf> = path
            .and_then(|p| std::fs::canonicalize(p).ok())
            .into_iter()
            .collect();
        walk_imports(&program, dir, &mut idx, &mut seen, "");
    }
    collect_decls(&program, text, &mut idx, None, "");

    // states are indexed even when a handler is unbound: that is a diagnostic, not a
    // reason to stop hover and go-to-definition working
    let options = LoadOptions {
        allow_unbound_actions: true,
        ..LoadOptions::default()
    };
    for name in program.machines.keys() {
        let Ok(loaded) = load(text, path, name, &options) else {
            continue;
        };
        let defn = &loaded.definition;
        let mut states = HashMap::new();
        for id in defn.node_ids() {
            let node = defn.node(id);
            let Some(pos) = loaded.positions.get(node.full_path.as_str()).copied() else {
                continue;
            };
            if node.name.is_empty() {
                continue;
            }
            let file = loaded
                .position_files
                .get(node.full_path.as_str())
                .filter(|f| **f != origin)
                .map(PathBuf::from);
            let pos = if file.is_none() {
                name_pos(text, pos, &node.name)
            } else {
                pos
            };
            let s = Symbol {
                file,
                ..symbol(
                    &node.name,
                    SymbolKind::State,
                    pos,
                    state_detail(defn, id),
                    None,
                )
            };
            states.insert(node.full_path.to_string(), s.clone());
            idx.states.entry(node.name.clone()).or_default().push(s);
        }
        idx.built.insert(
            name.clone(),
            MachineIndex {
                definition: loaded.definition,
                states,
            },
        );
    }
    idx
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The fields of every `context { ... }` block, read from the text (no parse needed:
/// `where context.|` is the moment completion is asked for, and it does not parse).
fn scan_context_fields(text: &str, idx: &mut SymbolIndex) {
    let chars: Vec<char> = text.chars().collect();
    let (mut line, mut col) = (1, 1);
    let mut pos_at = Vec::with_capacity(chars.len());
    for c in &chars {
        pos_at.push((line, col));
        if *c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    let word_at = |i: usize, w: &str| -> bool {
        let end = i + w.chars().count();
        end <= chars.len()
            && chars[i..end].iter().copied().eq(w.chars())
            && (i == 0 || !is_ident_char(chars[i - 1]))
            && (end == chars.len() || !is_ident_char(chars[end]))
    };
    let mut i = 0;
    while i < chars.len() {
        if !word_at(i, "context") {
            i += 1;
            continue;
        }
        let mut j = i + "context".len();
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        if chars.get(j) != Some(&'{') {
            i += 1;
            continue;
        }
        let body_start = j + 1;
        let Some(len) = chars[body_start..]
            .iter()
            .position(|c| *c == '{' || *c == '}')
        else {
            break;
        };
        let body_end = body_start + len;
        // `name : type ?` (and a default, shown as written) in the block
        let mut k = body_start;
        while k < body_end {
            if is_ident_start(chars[k]) && (k == body_start || !is_ident_char(chars[k - 1])) {
                let name_end = (k..body_end)
                    .find(|&m| !is_ident_char(chars[m]))
                    .unwrap_or(body_end);
                let mut m = name_end;
                while m < body_end && chars[m].is_whitespace() {
                    m += 1;
                }
                if chars.get(m) == Some(&':') && m < body_end {
                    let name: String = chars[k..name_end].iter().collect();
                    let rest: String = chars[m + 1..body_end].iter().collect();
                    let decl = rest.lines().next().unwrap_or("").trim();
                    let detail = format!("`context.{name}`: {decl}");
                    let s = symbol(&name, SymbolKind::Context, pos_at[k], detail, None);
                    idx.context_fields.insert(name, s);
                }
                k = name_end;
            } else {
                k += 1;
            }
        }
        i = body_end;
    }
}

/// The identifier under a cursor, its 0-based span on the line, and the kind of name
/// the keyword before it expects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordRef {
    /// The identifier as written under the cursor (dots included: `ns.Name`).
    pub word: String,
    /// 0-based line.
    pub line: usize,
    /// 0-based character columns, `end` exclusive.
    pub start: usize,
    /// 0-based character column just past the word.
    pub end: usize,
    /// The kind of name the keyword before it expects (`to` a state, `on` an event, `use` a
    /// fragment, ...); None when nothing before it says.
    pub kind: Option<SymbolKind>,
}

/// What a name starting at column `start` of `line` refers to, from the word before it
/// (a `|` continues an `on A | B` list).
fn kind_before(line: &[char], start: usize) -> Option<SymbolKind> {
    let before: String = line[..start.min(line.len())].iter().collect();
    let trimmed = before.trim_end();
    // completing the field after `context.`
    let tail = trimmed.trim_end_matches(is_ident_char);
    if tail.ends_with("context.") && before.len() == trimmed.len() {
        return Some(SymbolKind::Context);
    }
    if trimmed.ends_with('|') {
        return Some(SymbolKind::Event);
    }
    let word_start = trimmed
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_ident_char(*c))
        .last()
        .map_or(trimmed.len(), |(i, _)| i);
    match &trimmed[word_start..] {
        "on" => Some(SymbolKind::Event),
        "to" | "from" | "initial" => Some(SymbolKind::State),
        "use" => Some(SymbolKind::Fragment),
        "where" | "and" | "or" | "not" => Some(SymbolKind::Guard),
        "invoke" => Some(SymbolKind::Machine),
        "enter" | "exit" | "activity" | "select" => Some(SymbolKind::Action),
        _ => None,
    }
}

fn row(text: &str, line: usize) -> Option<Vec<char>> {
    lines(text).get(line).map(|l| l.chars().collect())
}

/// The kind of name expected at a 0-based cursor, from the keyword before it, even when
/// the cursor is not on a word yet (right after `on `): what completion needs.
pub fn category_at(text: &str, line: usize, character: usize) -> Option<SymbolKind> {
    kind_before(&row(text, line)?, character)
}

/// The identifier under a 0-based cursor; inside a quoted name, its inner text.
pub fn word_at(text: &str, line: usize, character: usize) -> Option<WordRef> {
    let chars = row(text, line)?;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '"' {
            let Some(len) = chars[i + 1..].iter().position(|c| *c == '"') else {
                break;
            };
            let close = i + 1 + len;
            if i < character && character <= close {
                return Some(WordRef {
                    word: chars[i + 1..close].iter().collect(),
                    line,
                    start: i + 1,
                    end: close,
                    kind: kind_before(&chars, i),
                });
            }
            i = close + 1;
        } else if chars[i] == '#' || (chars[i] == '/' && chars.get(i + 1) == Some(&'/')) {
            return None;
        } else if is_ident_start(chars[i]) && (i == 0 || !is_ident_char(chars[i - 1])) {
            let end = (i..chars.len())
                .find(|&k| !(is_ident_char(chars[k]) || chars[k] == '.'))
                .unwrap_or(chars.len());
            if i <= character && character <= end {
                return Some(WordRef {
                    word: chars[i..end].iter().collect(),
                    line,
                    start: i,
                    end,
                    kind: kind_before(&chars, i),
                });
            }
            i = end;
        } else {
            i += 1;
        }
    }
    None
}

/// The path of the `import` whose path string or alias is under a 0-based cursor.
pub fn import_at(text: &str, line: usize, character: usize) -> Option<String> {
    let chars = row(text, line)?;
    let s: String = chars.iter().collect();
    let rest = s.trim_start().strip_prefix("import")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let open = chars.iter().position(|c| *c == '"')?;
    let close = open + 1 + chars[open + 1..].iter().position(|c| *c == '"')?;
    let path: String = chars[open + 1..close].iter().collect();
    if (open..=close).contains(&character) {
        return Some(path);
    }
    let after: String = chars[close + 1..].iter().collect();
    let alias = after.trim_start().strip_prefix("as")?;
    if alias.trim().is_empty() || !alias.starts_with(char::is_whitespace) {
        return None;
    }
    (character > close).then_some(path)
}

/// A `{`'s block, from the text before it on its line: a machine body, a state scope
/// (state, orthogonal, final), or anything else (fragments included: not in a
/// machine's Definition).
enum Block {
    Machine(String),
    Scope(String),
    Other,
}

fn classify_open(prefix: &str) -> Block {
    let p = prefix.trim_start();
    let Some((kw, rest)) = p.split_once(char::is_whitespace) else {
        return Block::Other;
    };
    let rest = rest.trim_start();
    let name = if let Some(q) = rest.strip_prefix('"') {
        q.split('"').next().unwrap_or("")
    } else {
        let end = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        &rest[..end]
    };
    if name.is_empty() {
        return Block::Other;
    }
    match kw {
        "machine" => Block::Machine(name.to_string()),
        "state" | "orthogonal" | "final" => Block::Scope(name.to_string()),
        _ => Block::Other,
    }
}

/// The machine and the state scope (full path) enclosing a 0-based cursor.
pub fn scope_at(text: &str, line: usize, character: usize) -> (Option<String>, String) {
    let mut stack: Vec<Block> = Vec::new();
    for (li, row) in lines(text).iter().enumerate().take(line + 1) {
        let chars: Vec<char> = row.chars().collect();
        let upto = if li == line {
            character.min(chars.len())
        } else {
            chars.len()
        };
        let mut in_str = false;
        let mut i = 0;
        while i < upto {
            let c = chars[i];
            if in_str {
                if c == '\\' {
                    i += 2;
                    continue;
                }
                in_str = c != '"';
            } else if c == '"' {
                in_str = true;
            } else if c == '#' || (c == '/' && chars.get(i + 1) == Some(&'/')) {
                break;
            } else if c == '{' {
                stack.push(classify_open(&chars[..i].iter().collect::<String>()));
            } else if c == '}' {
                stack.pop();
            }
            i += 1;
        }
    }
    let machine = stack.iter().find_map(|b| match b {
        Block::Machine(n) => Some(n.clone()),
        _ => None,
    });
    let scope: Vec<&str> = stack
        .iter()
        .filter_map(|b| match b {
            Block::Scope(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    (machine, scope.join("."))
}

/// The declaration a reference under the cursor names: a state as the engine resolves
/// it from the enclosing scope (descend, then each ancestor), falling back to the first
/// state of that name; anything else by name and kind.
pub fn resolve<'a>(idx: &'a SymbolIndex, text: &str, at: &WordRef) -> Option<&'a Symbol> {
    if at.kind == Some(SymbolKind::State) {
        let (machine, scope) = scope_at(text, at.line, at.start);
        let scoped = machine.and_then(|m| idx.built.get(&m)).and_then(|m| {
            let defn = &m.definition;
            let from = defn.get(&scope).unwrap_or(defn.root);
            let node = defn.resolve_relative(from, &at.word)?;
            m.states.get(defn.node(node).full_path.as_str())
        });
        return scoped.or_else(|| idx.lookup(&at.word, Some(SymbolKind::State)));
    }
    idx.lookup(&at.word, at.kind)
        .or_else(|| at.kind.and_then(|_| idx.lookup(&at.word, None)))
}

/// A declaration of the document, with those inside it, for an outline.
#[derive(Clone, Debug, PartialEq)]
pub struct Outline {
    /// The declaration itself.
    pub symbol: Symbol,
    /// What is declared inside it (a machine's states, a composite's children), in order.
    pub children: Vec<Outline>,
}

/// The document's outline: its events, guards, bindings and fragments, and each machine
/// with its states nested as declared (states from other files left out).
pub fn outline(idx: &SymbolIndex) -> Vec<Outline> {
    let local = |s: &&Symbol| s.file.is_none();
    let leaf = |s: &Symbol| Outline {
        symbol: s.clone(),
        children: Vec::new(),
    };
    let mut out: Vec<Outline> = idx
        .events
        .values()
        .chain(idx.guards.values())
        .chain(idx.actions.values())
        .chain(idx.fragments.values())
        .filter(local)
        .map(leaf)
        .collect();
    fn nest(m: &MachineIndex, id: NodeId) -> Vec<Outline> {
        let defn = &m.definition;
        defn.node(id)
            .children
            .iter()
            .filter_map(|c| {
                let node = defn.node(*c);
                let s = m.states.get(node.full_path.as_str())?;
                Some(Outline {
                    symbol: s.clone(),
                    children: if s.file.is_none() {
                        nest(m, *c)
                    } else {
                        Vec::new()
                    },
                })
            })
            .filter(|o| o.symbol.file.is_none())
            .collect()
    }
    for (name, sym) in &idx.machines {
        if sym.file.is_some() {
            continue;
        }
        let children = idx
            .built
            .get(name)
            .map(|m| nest(m, m.definition.root))
            .unwrap_or_default();
        out.push(Outline {
            symbol: sym.clone(),
            children,
        });
    }
    out.sort_by_key(|o| (o.symbol.line, o.symbol.column));
    out
}

/// The keywords completion offers where no name is expected (harel's list).
pub const KEYWORDS: [&str; 39] = [
    "machine",
    "fragment",
    "state",
    "orthogonal",
    "final",
    "initial",
    "from",
    "to",
    "on",
    "enter",
    "exit",
    "activity",
    "where",
    "select",
    "returns",
    "join",
    "all",
    "any",
    "else",
    "invoke",
    "for",
    "in",
    "with",
    "use",
    "as",
    "import",
    "event",
    "guard",
    "bind",
    "timeout",
    "ttl",
    "set",
    "choose",
    "when",
    "context",
    "outcome",
    "carry",
    "no",
    "history",
];
