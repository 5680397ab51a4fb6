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
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

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
    pub function: String,
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
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Event => "event",
            Scope::Context => "context",
        }
    }

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
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
}

impl Op {
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
    pub source: Scope,
    pub field: String,
}

/// A composable guard.
#[derive(Clone, Debug, PartialEq)]
pub enum Predicate {
    /// `field op value` over `source`; compared with `value_ref`'s field instead of the
    /// literal `value` when set.
    Leaf {
        field: String,
        op: Op,
        value: Value,
        source: Scope,
        value_ref: Option<FieldRef>,
    },
    All(Vec<Predicate>),
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
    pub predicate: Option<Predicate>,
}

impl EventFilter {
    pub fn new(kind: &str) -> Self {
        EventFilter {
            kind: kind.to_string(),
            kinds: kind.split('|').map(|k| k.trim().to_string()).collect(),
            predicates: Vec::new(),
            predicate: None,
        }
    }

    pub fn names(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k == kind)
    }
}

/// A transition bifurcation: run `action`, look `str(result)` up in `mapper` (target names
/// resolved in the transition's scope), else `default`, else an error.
#[derive(Clone, Debug, PartialEq)]
pub struct Selector {
    pub action: ActionRef,
    pub mapper: IndexMap<String, String>,
    pub default: Option<String>,
    /// Declared result values (`returns {...}`), for validation only.
    pub enum_values: Option<Vec<String>>,
}

/// The right-hand side of a `set`: a reference, a literal, or one arithmetic operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Ref(FieldRef),
    Lit(Value),
    Arith {
        op: char,
        left: Box<Expr>,
        right: Box<Expr>,
    },
}

/// `set context.<field> = <expr>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Assign {
    pub field: String,
    pub expr: Expr,
}

/// A guarded choice (`choose { when P to A ... else to B }`).
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub branches: Vec<(Predicate, NodeId)>,
    pub default: Option<NodeId>,
    /// `branch_assignments[i]` is the `set` of `branches[i]`.
    pub branch_assignments: Vec<Vec<Assign>>,
    pub default_assignments: Vec<Assign>,
}

/// A transition, owned by the composite that is its scope. Its destination is exactly one
/// of `target`, `selector` or `choice`.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub source: NodeId,
    pub target: Option<NodeId>,
    /// None: an automatic transition.
    pub event_filter: Option<EventFilter>,
    pub selector: Option<Selector>,
    pub choice: Option<Choice>,
    pub assignments: Vec<Assign>,
    /// (line, column) in the `.stm` source, when it came from one.
    pub pos: Option<(usize, usize)>,
}

impl Transition {
    pub fn is_automatic(&self) -> bool {
        self.event_filter.is_none()
    }
}

/// A state's timeout: literal seconds, or the context key to read the delay from when armed.
#[derive(Clone, Debug, PartialEq)]
pub enum Timeout {
    Seconds(f64),
    Context(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    /// A [`SmolStr`]: an Execution stores it (active path, history, region roots, timer
    /// paths), and cloning it out of the Definition must not allocate.
    pub full_path: SmolStr,
    pub kind: NodeKind,
    pub parent: Option<NodeId>,
    pub children: Vec<NodeId>,
    pub on_enter: Option<ActionRef>,
    pub on_activity: Option<ActionRef>,
    pub on_exit: Option<ActionRef>,
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
    pub allow_history: bool,
    pub cancel_on_failure: bool,
    /// Transitions whose scope is this node.
    pub transitions: Vec<Transition>,
    pub pos: Option<(usize, usize)>,
}

impl Node {
    pub fn is_composite(&self) -> bool {
        self.kind != NodeKind::Leaf
    }
}

/// The whole program: the node arena, the root, and a path index.
#[derive(Clone, Debug)]
pub struct Definition {
    pub id: String,
    pub nodes: Vec<Node>,
    pub root: NodeId,
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
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

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
