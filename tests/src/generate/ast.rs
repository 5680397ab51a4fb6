//! The generated machines as a small syntax tree, printed as `.stm` text. Only what the
//! generator produces is modelled: a shrinker edits this tree, never the text.

use std::fmt::Write;

/// One generated file: the events it declares and the machine it runs.
#[derive(Debug, Clone)]
pub struct Program {
    /// Event kinds; each declares one optional field `n: int?`.
    pub events: Vec<String>,
    /// Selector handler names, bound to `sel.NAME` (the harness answers them).
    pub selectors: Vec<String>,
    /// The one machine the file declares.
    pub machine: Machine,
}

/// `machine NAME { context ... ttl ... BODY }`; the context is always [`CONTEXT`].
#[derive(Debug, Clone)]
pub struct Machine {
    /// The machine's name (the generator's is always `Gen`).
    pub name: String,
    /// `ttl SECONDS`: the execution expires after it (`None`: no `ttl`).
    pub ttl: Option<u32>,
    /// Its top-level states and transitions.
    pub body: Body,
}

/// The inside of a machine, a composite, a region or an inline submachine.
#[derive(Debug, Clone, Default)]
pub struct Body {
    /// `initial NAME`: the state entered first (empty: no `initial` line is printed).
    pub initial: String,
    /// The states, in declaration order.
    pub states: Vec<State>,
    /// The transitions among these states (the generator only links siblings).
    pub transitions: Vec<Transition>,
    /// Context keys a region or submachine reports when it finishes.
    pub carry: Vec<String>,
}

/// One state: `state NAME { ... }`, `final NAME VERDICT` or `orthogonal NAME { ... }`, with
/// its own items.
#[derive(Debug, Clone)]
pub struct State {
    /// Its name, unique in the machine (`S3`, `C4`, `F5`, ...: a fresh number each).
    pub name: String,
    /// What it is: a leaf, a final, or one holding states of its own.
    pub kind: Kind,
    /// `timeout N` or `timeout context KEY`: a `Timeout` event once it has been active that
    /// long.
    pub timeout: Option<Timeout>,
    /// Hooks record themselves with `harel.lib.linear_backoff` into the context.
    pub on_enter: bool,
    /// `on exit mark(...)`: records its exit, as `on_enter` its entry.
    pub on_exit: bool,
    /// `defer KIND, ...`: event kinds held while it is active and replayed after.
    pub defer: Vec<String>,
}

/// What a [`State`] is, and what it holds.
#[derive(Debug, Clone)]
pub enum Kind {
    /// A plain state with no states inside.
    Leaf,
    /// `final NAME VERDICT`: entering it ends its body with that verdict (`success`,
    /// `failed`, `cancelled`, ...).
    Final(String),
    /// A state with states of its own.
    Composite {
        /// Its inner states and transitions.
        body: Body,
        /// `no history`: re-entered from its `initial`, not where it was left.
        no_history: bool,
    },
    /// `orthogonal NAME { ... }`: regions running side by side, each a child execution.
    Orthogonal {
        /// The regions, each a [`State`] of kind [`Kind::Composite`] whose body can finish.
        regions: Vec<State>,
        /// `cancel_on_failure`: a region that fails cancels the others.
        cancel_on_failure: bool,
    },
    /// An inline `invoke { ... }` with `with { key: key }` pairs.
    Invoke {
        /// The submachine's states and transitions (it can finish).
        body: Body,
        /// Context keys passed in, each under its own name.
        with: Vec<String>,
    },
}

/// How long a state waits before its `Timeout` event.
#[derive(Debug, Clone)]
pub enum Timeout {
    /// `timeout N`: N seconds.
    Seconds(u32),
    /// `timeout context KEY`: as many seconds as the context's `KEY` says when it is entered.
    Context(String),
}

/// `from STATE ... [on KINDS [where GUARD]] [set ...]`: one transition line.
#[derive(Debug, Clone)]
pub struct Transition {
    /// The state it leaves.
    pub from: String,
    /// `None`: an automatic transition.
    pub on: Option<Trigger>,
    /// `set context.KEY = EXPR, ...`: assignments made when it is taken.
    pub set: Vec<Assign>,
    /// Where it goes.
    pub route: Route,
}

/// `on KIND | KIND ... [where GUARD]`: the events that take a transition.
#[derive(Debug, Clone)]
pub struct Trigger {
    /// The event kinds, any of which triggers it.
    pub kinds: Vec<String>,
    /// `where PRED`: taken only when it holds.
    pub guard: Option<Pred>,
}

/// A transition's destination, as written after `from STATE`.
#[derive(Debug, Clone)]
pub enum Route {
    /// `to STATE`.
    To(String),
    /// `choose { when PRED to STATE [set ...] ... else to STATE }`.
    Choose {
        /// The branches in order: the first whose predicate holds is taken, with its own
        /// assignments.
        when: Vec<(Pred, String, Vec<Assign>)>,
        /// `else to STATE`: when no predicate holds.
        otherwise: String,
    },
    /// `select HANDLER { VALUE to STATE ... else to STATE }`: the selector's answer picks.
    Select {
        /// The selector (`pick`, `route`), answered by the case's `--selector NAME=VALUE`.
        handler: String,
        /// `(answer, state)` pairs.
        branches: Vec<(String, String)>,
        /// `else to STATE`: for any other answer.
        otherwise: String,
    },
    /// `join any|all to STATE else to STATE`: from an orthogonal state once its regions end.
    Join {
        /// `any`: one successful region suffices; else (`all`) every region must succeed.
        any: bool,
        /// Where it goes when the join succeeds.
        to: String,
        /// `else to STATE`: where it goes when it does not.
        otherwise: String,
    },
}

/// `context.KEY = EXPR`.
#[derive(Debug, Clone)]
pub struct Assign {
    /// The context key assigned.
    pub key: String,
    /// The expression as written (`context.x + 1`, `event.n`, ...).
    pub expr: String,
}

/// A guard or a `choose` branch's condition.
#[derive(Debug, Clone)]
pub enum Pred {
    /// A comparison as written, e.g. `n > 2`, `context.x == event.n`.
    Cmp(String),
    /// `not P`.
    Not(Box<Pred>),
    /// `P and Q and ...` (each operand parenthesized unless a comparison).
    And(Vec<Pred>),
    /// `P or Q or ...`.
    Or(Vec<Pred>),
}

impl Pred {
    fn print(&self, out: &mut String) {
        match self {
            Pred::Cmp(text) => out.push_str(text),
            Pred::Not(inner) => {
                out.push_str("not ");
                inner.print_atom(out);
            }
            Pred::And(items) | Pred::Or(items) => {
                let sep = if matches!(self, Pred::And(_)) {
                    " and "
                } else {
                    " or "
                };
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    item.print_atom(out);
                }
            }
        }
    }

    fn print_atom(&self, out: &mut String) {
        if matches!(self, Pred::Cmp(_)) {
            self.print(out);
        } else {
            out.push('(');
            self.print(out);
            out.push(')');
        }
    }
}

/// The context every generated machine declares (so guards, `set` and `timeout context`
/// have fields to read).
pub const CONTEXT: &str = "context { x: int = 0  y: int = 1  wait: int = 15  tag: string = \"a\" }";

impl Program {
    /// The program as `.stm` text, the file both sides run: the events, the `bind` block
    /// (`mark` and the selectors), then the machine.
    pub fn to_stm(&self) -> String {
        let mut out = String::from("# generated by harel-tests' generator (tests/src/generate)\n");
        for kind in &self.events {
            let _ = writeln!(out, "event {kind} {{ n: int? }}");
        }
        out.push_str("bind {\n  mark = harel.lib.linear_backoff\n");
        for name in &self.selectors {
            let _ = writeln!(out, "  {name} = sel.{name}");
        }
        out.push_str("}\n");
        let m = &self.machine;
        let _ = writeln!(out, "\nmachine {} {{", m.name);
        let _ = writeln!(out, "  {CONTEXT}");
        if let Some(ttl) = m.ttl {
            let _ = writeln!(out, "  ttl {ttl}");
        }
        print_body(&m.body, 1, &mut out);
        out.push_str("}\n");
        out
    }
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

fn hook(which: &str, name: &str) -> String {
    // `mark` is harel.lib.linear_backoff, which both sides run for real: a counter shared by
    // every hook gives the order, `into` names the hook that ran (short text: harel's Earley
    // parser takes time by the character)
    format!(
        "on {which} mark(counter: \"k\", into: \"{}{name}\")",
        &which[..2]
    )
}

fn print_body(body: &Body, depth: usize, out: &mut String) {
    let pad = indent(depth);
    if !body.initial.is_empty() {
        let _ = writeln!(out, "{pad}initial {}", body.initial);
    }
    if !body.carry.is_empty() {
        let _ = writeln!(out, "{pad}carry {}", body.carry.join(", "));
    }
    for state in &body.states {
        print_state(state, depth, out);
    }
    for t in &body.transitions {
        let _ = writeln!(out, "{pad}{}", transition_text(t));
    }
}

fn print_state(state: &State, depth: usize, out: &mut String) {
    let pad = indent(depth);
    let inner = indent(depth + 1);
    let mut items = Vec::new();
    if let Some(t) = &state.timeout {
        items.push(match t {
            Timeout::Seconds(s) => format!("timeout {s}"),
            Timeout::Context(key) => format!("timeout context {key}"),
        });
    }
    if state.on_enter {
        items.push(hook("enter", &state.name));
    }
    if state.on_exit {
        items.push(hook("exit", &state.name));
    }
    if !state.defer.is_empty() {
        items.push(format!("defer {}", state.defer.join(", ")));
    }
    let head = match &state.kind {
        Kind::Final(verdict) => format!("final {} {verdict}", state.name),
        Kind::Orthogonal { .. } => format!("orthogonal {}", state.name),
        _ => format!("state {}", state.name),
    };
    let has_body = !matches!(state.kind, Kind::Leaf | Kind::Final(_));
    if items.is_empty() && !has_body {
        let _ = writeln!(
            out,
            "{pad}{head}{}",
            if matches!(state.kind, Kind::Final(_)) {
                ""
            } else {
                " {}"
            }
        );
        return;
    }
    let _ = writeln!(out, "{pad}{head} {{");
    for item in items {
        let _ = writeln!(out, "{inner}{item}");
    }
    match &state.kind {
        Kind::Leaf | Kind::Final(_) => {}
        Kind::Composite { body, no_history } => {
            if *no_history {
                let _ = writeln!(out, "{inner}no history");
            }
            print_body(body, depth + 1, out);
        }
        Kind::Orthogonal {
            regions,
            cancel_on_failure,
        } => {
            if *cancel_on_failure {
                let _ = writeln!(out, "{inner}cancel_on_failure");
            }
            for region in regions {
                print_state(region, depth + 1, out);
            }
        }
        Kind::Invoke { body, with } => {
            let _ = writeln!(out, "{inner}invoke {{");
            print_body(body, depth + 2, out);
            let _ = writeln!(out, "{inner}}}");
            if !with.is_empty() {
                let pairs: Vec<String> = with.iter().map(|k| format!("{k}: {k}")).collect();
                let _ = writeln!(out, "{inner}with {{ {} }}", pairs.join("  "));
            }
        }
    }
    let _ = writeln!(out, "{pad}}}");
}

fn assigns_text(set: &[Assign]) -> String {
    if set.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = set
        .iter()
        .map(|a| format!("context.{} = {}", a.key, a.expr))
        .collect();
    format!(" set {}", parts.join(", "))
}

fn trigger_text(on: &Option<Trigger>) -> String {
    let Some(on) = on else {
        return String::new();
    };
    let mut text = format!(" on {}", on.kinds.join(" | "));
    if let Some(guard) = &on.guard {
        text.push_str(" where ");
        guard.print(&mut text);
    }
    text
}

/// One transition as its `.stm` line (without indentation).
pub(crate) fn transition_text(t: &Transition) -> String {
    let trig = trigger_text(&t.on);
    let set = assigns_text(&t.set);
    match &t.route {
        Route::To(to) => format!("from {} to {to}{trig}{set}", t.from),
        Route::Choose { when, otherwise } => {
            let mut text = format!("from {} choose{trig}{set} {{", t.from);
            for (pred, to, set) in when {
                text.push_str(" when ");
                pred.print(&mut text);
                let _ = write!(text, " to {to}{}", assigns_text(set));
            }
            let _ = write!(text, " else to {otherwise} }}");
            text
        }
        Route::Select {
            handler,
            branches,
            otherwise,
        } => {
            let mut text = format!("from {} select {handler}{trig} {{", t.from);
            for (value, to) in branches {
                let _ = write!(text, " {value} to {to}");
            }
            let _ = write!(text, " else to {otherwise} }}");
            text
        }
        Route::Join { any, to, otherwise } => format!(
            "from {} join {} to {to} else to {otherwise}",
            t.from,
            if *any { "any" } else { "all" }
        ),
    }
}

impl Body {
    /// Every state name this body's transitions send to (for the shrinker's bookkeeping).
    pub fn targets(t: &Transition) -> Vec<&str> {
        match &t.route {
            Route::To(to) => vec![to],
            Route::Choose { when, otherwise } => {
                let mut v: Vec<&str> = when.iter().map(|(_, to, _)| to.as_str()).collect();
                v.push(otherwise);
                v
            }
            Route::Select {
                branches,
                otherwise,
                ..
            } => {
                let mut v: Vec<&str> = branches.iter().map(|(_, to)| to.as_str()).collect();
                v.push(otherwise);
                v
            }
            Route::Join { to, otherwise, .. } => vec![to, otherwise],
        }
    }
}
