//! The state-machine Definition: an immutable tree of nodes (harel's `definition/model.py`).
//!
//! Nodes live in an arena and point at each other by `NodeId`; `full_path` (dotted, "" for
//! the root) is the stable address an Execution stores in `active_path`, `history` keys and
//! timer paths, exactly as harel addresses states.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;
use smol_str::SmolStr;

use crate::execution::{FastHash, KeyMap, Object};
use crate::schema::{EventType, FieldSpec};

/// Index of a node in its Definition's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The arena slot as a `usize`, for indexing `Definition::nodes`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a node is, by harel's state classes; only a leaf can be the active state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A leaf state.
    Leaf,
    /// A composite (OR) state.
    Composite,
    /// harel's "ParallelState": the machine root, and the regions of an orthogonal node.
    /// The engine treats it like a composite.
    Parallel,
    /// An orthogonal (AND) state: each child region runs as its own child Execution.
    Orthogonal,
}

impl NodeKind {
    /// harel's type names (`State`, `CompositeState`, ...).
    pub fn type_name(self) -> &'static str {
        match self {
            NodeKind::Leaf => "State",
            NodeKind::Composite => "CompositeState",
            NodeKind::Parallel => "ParallelState",
            NodeKind::Orthogonal => "OrthogonalState",
        }
    }

    /// The kind harel's `type` key names (the inverse of [`NodeKind::type_name`]); None for
    /// an unknown name, which the builder reports.
    pub fn from_type_name(name: &str) -> Option<Self> {
        Some(match name {
            "State" => NodeKind::Leaf,
            "CompositeState" => NodeKind::Composite,
            "ParallelState" => NodeKind::Parallel,
            "OrthogonalState" => NodeKind::Orthogonal,
            _ => return None,
        })
    }
}

/// A user action referenced by name (a bound handler resolved to its implementation name,
/// or a literal dotted path such as `harel.lib.exponential_backoff`) plus bound inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionRef {
    /// The implementation name the host's action registry resolves (`pkg.fn`).
    pub function: String,
    /// Inputs bound at definition time, passed to the action with the event and context.
    pub inputs: Object,
}

/// Where a predicate leaf or an expression reads a field from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The triggering event's data (the default, and the bare form in the language).
    Event,
    /// The execution context.
    Context,
}

impl Scope {
    /// The scope's prefix in the language and in the normalized dict (`event`, `context`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Event => "event",
            Scope::Context => "context",
        }
    }

    /// The scope named `event` or `context`; None for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "event" => Some(Scope::Event),
            "context" => Some(Scope::Context),
            _ => None,
        }
    }
}

/// A comparison operator of a guard leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `==`, Python equality (`1 == 1.0`, `True == 1`).
    Eq,
    /// `!=`, the negation of [`Op::Eq`].
    Ne,
    /// `<`, Python ordering (numbers, strings, lists); false where Python raises.
    Lt,
    /// `<=`, as [`Op::Lt`].
    Le,
    /// `>`, as [`Op::Lt`].
    Gt,
    /// `>=`, as [`Op::Lt`].
    Ge,
    /// `in`: the field is an element of a list, a substring of a string, or a key of a dict.
    In,
}

impl Op {
    /// The operator's suffix in a flat `field__op` key (`eq`, `le`, `in`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Ne => "ne",
            Op::Lt => "lt",
            Op::Le => "le",
            Op::Gt => "gt",
            Op::Ge => "ge",
            Op::In => "in",
        }
    }

    /// The operator a `field__op` suffix names; None for an unknown suffix.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "lt" => Op::Lt,
            "le" => Op::Le,
            "gt" => Op::Gt,
            "ge" => Op::Ge,
            "in" => Op::In,
            _ => return None,
        })
    }

    /// The operator as written in the language (`==`, `<=`, `in`, ...).
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::In => "in",
        }
    }
}

/// A `(scope, field)` reference such as `context.max` or `event.limit`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldRef {
    /// The namespace the field is read from.
    pub source: Scope,
    /// The field's key in that namespace (one key, not a dotted path).
    pub field: String,
}

/// A composable guard.
#[derive(Clone, Debug, PartialEq)]
pub enum Predicate {
    /// `field op value` over `source`; compared with `value_ref`'s field instead of the
    /// literal `value` when set.
    Leaf {
        /// The key read from `source`.
        field: String,
        /// How the field compares with the value.
        op: Op,
        /// The literal the field is compared with (ignored when `value_ref` is set).
        value: Value,
        /// The namespace `field` is read from.
        source: Scope,
        /// The field whose value replaces the literal `value`, read at evaluation time.
        value_ref: Option<FieldRef>,
    },
    /// `all`: every child holds (true when empty).
    All(Vec<Predicate>),
    /// `any`: some child holds (false when empty).
    Any(Vec<Predicate>),
    /// `not`; harel allows an empty child list (which its evaluator would index out of).
    Not(Vec<Predicate>),
}

/// A guard over events: `kind` allows `A | B` alternation; `predicates` are the flat
/// `field__op -> value` leaves over the event's data (AND-ed, in order); `predicate` is the
/// composable tree. Both, when present, are AND-ed.
#[derive(Clone, Debug, PartialEq)]
pub struct EventFilter {
    /// The kind as written (`A | B`), for rendering.
    pub kind: String,
    /// The alternatives, trimmed.
    pub kinds: Vec<String>,
    /// `(field, op, value)` in declaration order; the key `f` alone means `f__eq`.
    pub predicates: Vec<(String, Op, Value)>,
    /// The composable guard (`all`, `any`, `not`, references), AND-ed after `predicates`.
    pub predicate: Option<Predicate>,
}

impl EventFilter {
    /// A filter matching the kinds of `kind` (`A | B` splits on `|`), with no predicates yet.
    pub fn new(kind: &str) -> Self {
        EventFilter {
            kind: kind.to_string(),
            kinds: kind.split('|').map(|k| k.trim().to_string()).collect(),
            predicates: Vec::new(),
            predicate: None,
        }
    }

    /// Whether `kind` is one of the alternatives (the kind only: predicates are not checked).
    pub fn names(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k == kind)
    }
}

/// A transition bifurcation: run `action`, look `str(result)` up in `mapper` (target names
/// resolved in the transition's scope), else `default`, else an error.
#[derive(Clone, Debug, PartialEq)]
pub struct Selector {
    /// The action whose result picks the target.
    pub action: ActionRef,
    /// `str(result)` to the target's name, resolved in the transition's scope.
    pub mapper: IndexMap<String, String>,
    /// The target's name when the result is not in `mapper`; None makes that an error.
    pub default: Option<String>,
    /// Declared result values (`returns {...}`), for validation only.
    pub enum_values: Option<Vec<String>>,
}

/// The right-hand side of a `set`: a reference, a literal, or one arithmetic operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// The value of a field of the event or the context.
    Ref(FieldRef),
    /// A JSON literal.
    Lit(Value),
    /// `left op right`, evaluated as Python would.
    Arith {
        /// One of `+`, `-`, `*`, `/` (the builder refuses any other).
        op: char,
        /// The left operand.
        left: Box<Expr>,
        /// The right operand.
        right: Box<Expr>,
    },
}

/// `set context.<field> = <expr>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Assign {
    /// The context key written.
    pub field: String,
    /// The value written.
    pub expr: Expr,
}

/// A guarded choice (`choose { when P to A ... else to B }`).
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// `when P to A`, in order: the first predicate that holds picks its node.
    pub branches: Vec<(Predicate, NodeId)>,
    /// The `else` target; None: no branch holding is an error.
    pub default: Option<NodeId>,
    /// `branch_assignments[i]` is the `set` of `branches[i]`.
    pub branch_assignments: Vec<Vec<Assign>>,
    /// The `set` of the `else` branch.
    pub default_assignments: Vec<Assign>,
}

/// A transition, owned by the composite that is its scope. Its destination is exactly one
/// of `target`, `selector` or `choice`.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    /// The state this transition leaves (its `from`); its scope is the owner composite.
    pub source: NodeId,
    /// The destination state when it is fixed (`to`); None for a selector or a choice.
    pub target: Option<NodeId>,
    /// None: an automatic transition.
    pub event_filter: Option<EventFilter>,
    /// The destination picked by an action's result.
    pub selector: Option<Selector>,
    /// The destination picked by guards.
    pub choice: Option<Choice>,
    /// The `set context.f = ...` applied when the transition fires: after the
    /// exits, before the target is entered.
    pub assignments: Vec<Assign>,
    /// (line, column) in the `.stm` source, when it came from one.
    pub pos: Option<(usize, usize)>,
}

impl Transition {
    /// Whether this transition fires without an event, as soon as its source is active.
    pub fn is_automatic(&self) -> bool {
        self.event_filter.is_none()
    }
}

/// A state's timeout: literal seconds, or the context key to read the delay from when armed.
#[derive(Clone, Debug, PartialEq)]
pub enum Timeout {
    /// A fixed delay in seconds.
    Seconds(f64),
    /// The context key holding the delay, read when the state is entered.
    Context(String),
}

/// A state of the machine, as harel's `State` classes hold it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The name as declared (one segment of `full_path`).
    pub name: String,
    /// A [`SmolStr`]: an Execution stores it (active path, history, region roots, timer
    /// paths), and cloning it out of the Definition must not allocate.
    pub full_path: SmolStr,
    /// Leaf, composite, parallel or orthogonal.
    pub kind: NodeKind,
    /// The enclosing state; None for the root.
    pub parent: Option<NodeId>,
    /// The children in declaration order (empty for a leaf).
    pub children: Vec<NodeId>,
    /// Run when the state is entered.
    pub on_enter: Option<ActionRef>,
    /// Run when the state is active and an event reaches it that no transition takes (and it
    /// does not defer).
    pub on_activity: Option<ActionRef>,
    /// Run when the state is left.
    pub on_exit: Option<ActionRef>,
    /// Arms a timer when the state is entered (cancelled when it is left): its firing is a
    /// `Timeout` event for this state.
    pub timeout: Option<Timeout>,
    /// The verdict recorded on the Execution when this state is a terminal (a clone, not a
    /// copy, when it is).
    pub outcome: Option<SmolStr>,
    /// Context keys a region propagates on its `Finished`.
    pub carry: Vec<String>,
    /// Event kinds held (not dropped) while unhandled in this node's scope.
    pub defer: Vec<String>,
    /// Submachine FQN: entering this state runs that machine as a child execution.
    pub invoke: Option<String>,
    /// `with { child_key: parent_key }`, in declaration order.
    pub invoke_with: IndexMap<String, String>,
    /// `for VAR in COLL`: fan out one child per collection entry.
    pub invoke_each: Option<(String, String)>,
    /// The initial child's name (composites).
    pub start_state: Option<String>,
    /// Whether re-entering this composite resumes its last active child (harel's shallow
    /// history, on by default); false: it starts at `start_state` each time.
    pub allow_history: bool,
    /// Whether an orthogonal state stops waiting for its regions once one fails (finishes
    /// with a declared non-success verdict) instead of joining all of them.
    pub cancel_on_failure: bool,
    /// Transitions whose scope is this node.
    pub transitions: Vec<Transition>,
    /// (line, column) of the state in the `.stm` source, when it came from one.
    pub pos: Option<(usize, usize)>,
}

impl Node {
    /// Whether the node has children to enter (every kind but a leaf).
    pub fn is_composite(&self) -> bool {
        self.kind != NodeKind::Leaf
    }
}

/// The whole program: the node arena, the root, and a path index.
#[derive(Clone, Debug)]
pub struct Definition {
    /// The definition id (the machine's name unless the builder was given one; `{machine}#{path}`
    /// for an inline submachine).
    pub id: String,
    /// The arena: `NodeId(i)` is `nodes[i]`, depth-first in declaration order.
    pub nodes: Vec<Node>,
    /// The machine itself: a `ParallelState` with full_path "".
    pub root: NodeId,
    /// `full_path` to node, for every node.
    pub index: HashMap<String, NodeId, FastHash>,
    /// Declared event types (empty: events unchecked).
    pub events: IndexMap<String, EventType>,
    /// Inline `invoke` targets by synthetic FQN, and imported machines.
    pub submachines: IndexMap<String, Arc<Definition>>,
    /// Seconds a root execution may go without a domain event before it expires.
    pub ttl: Option<i64>,
    /// The context's declared, typed fields (empty: an untyped context).
    pub context_schema: KeyMap<FieldSpec>,
    /// The normalized machine dict this was built from: kept so a machine version can be
    /// hashed and stored in a form any process rebuilds it from (see harel-runtime's
    /// `versions`).
    pub source: Option<Arc<Value>>,
}

impl Definition {
    /// The node `id` addresses; panics on an id from another Definition.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The node at a dotted `full_path`; None when no node has it.
    pub fn get(&self, path: &str) -> Option<NodeId> {
        self.index.get(path).copied()
    }

    /// [`Definition::get`], trying `hint` first (an arena index found earlier for this
    /// path) and leaving the answer in it: one comparison of the path on a hit.
    pub fn get_hinted(&self, path: &str, hint: &AtomicU32) -> Option<NodeId> {
        let at = hint.load(Ordering::Relaxed);
        if let Some(node) = self.nodes.get(at as usize) {
            if node.full_path == path {
                return Some(NodeId(at));
            }
        }
        let id = self.get(path)?;
        hint.store(id.0, Ordering::Relaxed);
        Some(id)
    }

    /// The node at `path`; panics on an unknown path (callers hold paths the engine wrote).
    pub fn at(&self, path: &str) -> &Node {
        self.node(self.index[path])
    }

    /// The enclosing node of `id`; None for the root.
    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.node(id).parent
    }

    /// The child of `id` named `name`.
    pub fn child(&self, id: NodeId, name: &str) -> Option<NodeId> {
        self.node(id)
            .children
            .iter()
            .copied()
            .find(|c| self.node(*c).name == name)
    }

    /// `id`'s ancestors from the parent up to the root (inclusive).
    pub fn ancestors(&self, id: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut cur = self.node(id).parent;
        while let Some(n) = cur {
            out.push(n);
            cur = self.node(n).parent;
        }
        out
    }

    /// Whether `node` is `ancestor` or below it.
    pub fn is_descendant(&self, node: NodeId, ancestor: NodeId) -> bool {
        let mut cur = Some(node);
        while let Some(n) = cur {
            if n == ancestor {
                return true;
            }
            cur = self.node(n).parent;
        }
        false
    }

    /// The nodes from `top` (inclusive) down to `leaf` (inclusive); None if `top` is not an
    /// ancestor-or-self of `leaf`.
    pub fn chain(&self, top: NodeId, leaf: NodeId) -> Option<Vec<NodeId>> {
        let mut out = Vec::new();
        let mut cur = Some(leaf);
        while let Some(n) = cur {
            out.push(n);
            if n == top {
                out.reverse();
                return Some(out);
            }
            cur = self.node(n).parent;
        }
        None
    }

    /// The least common ancestor of two nodes (the UML enter/exit pivot).
    pub fn lca(&self, a: NodeId, b: NodeId) -> NodeId {
        let mut cur = Some(b);
        while let Some(n) = cur {
            if self.is_descendant(a, n) {
                return n;
            }
            cur = self.node(n).parent;
        }
        self.root
    }

    /// Resolve a dotted `name` relative to `scope` by descending child by child.
    pub fn descend(&self, scope: NodeId, name: &str) -> Option<NodeId> {
        let mut node = scope;
        for seg in name.split('.') {
            node = self.child(node, seg)?;
        }
        Some(node)
    }

    /// Sibling lookup: descend `name` from `scope`, then from each ancestor in turn
    /// (the innermost match wins), as harel resolves transition targets.
    pub fn resolve_relative(&self, scope: NodeId, name: &str) -> Option<NodeId> {
        let mut cur = Some(scope);
        while let Some(n) = cur {
            if let Some(found) = self.descend(n, name) {
                return Some(found);
            }
            cur = self.node(n).parent;
        }
        None
    }

    /// Every node, in arena (depth-first, declaration) order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }
}
