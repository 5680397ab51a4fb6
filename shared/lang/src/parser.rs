//! Parse `.stm` text into a `Program` (harel's `dsl/parser.py`, `_ToProgram`).
//!
//! Pure syntax -> structure: each machine is the same config dict (`serde_json::Value`) harel's
//! parser produces, desugarings included, so the builder consumes exactly what harel's does.
//! Two things are marked rather than resolved, as in harel, and left to the loader: an
//! action (`{"__action__": "handler"|"literal", "ref", "inputs"}`, harel's `ActionSpec`) and
//! a named guard used in a predicate (`{"__guard__": name}`). Positions are `"__pos__":
//! [line, column]` (harel's `(line, column)` tuples).

use indexmap::IndexMap;
use pest::iterators::Pair;
use pest::Parser as _;
use serde_json::{json, Map, Value};

use harel_model::pyrepr::{py_repr, py_str};

use crate::error::{ErrorKind, LangError, Pos};
use crate::position::Lines;
use crate::syntax;
use crate::unquote::unquote;

/// The generated parser, in a module of its own: pest_derive declares its `Rule` enum `pub`
/// (undocumented), and the crate's modules are its only users.
mod grammar {
    /// The pest parser of `stm.pest`; its `Rule` enum names the grammar's rules.
    #[derive(pest_derive::Parser)]
    #[grammar = "stm.pest"]
    pub(crate) struct StmParser;
}

pub(crate) use grammar::{Rule, StmParser};

/// A config dict, as harel's parser builds it.
pub type Object = Map<String, Value>;

/// What a declaration is, for `Program::positions` (harel's `("event", name)` keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeclKind {
    /// `event NAME { ... }`.
    Event,
    /// `guard NAME = ...`.
    Guard,
    /// `fragment NAME { ... }`, spliced into a machine by `use`.
    Fragment,
    /// `machine NAME { ... }`.
    Machine,
}

/// An `import "PATH" (as NS)?` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    /// The path as written, relative to the importing file's directory.
    pub path: String,
    /// The namespace the imported fragments and machines go under (`NS.Name`); None: their
    /// bare names.
    pub alias: Option<String>,
    /// Where the statement is, for an import that is not found or loops.
    pub pos: Pos,
}

/// harel's `Program`. Maps keep declaration order and, like Python dicts, a later
/// declaration of the same name replaces the value but keeps the first one's place.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// The `import` statements, in order.
    pub imports: Vec<Import>,
    /// handler name -> literal implementation path (`bind {}`).
    pub bindings: IndexMap<String, String>,
    /// guard name -> its on_event predicate dict.
    pub guards: IndexMap<String, Object>,
    /// event name -> `{field: {"type", "required"}}`.
    pub events: IndexMap<String, Object>,
    /// machine name -> its config dict (what harel's builder takes, actions and named guards
    /// still marked, not resolved).
    pub machines: IndexMap<String, Object>,
    /// fragment name -> its dict: the states and transitions `use` splices, and its
    /// `__params__` when it declares parameters.
    pub fragments: IndexMap<String, Object>,
    /// Where each declaration starts (its keyword), by kind and name.
    pub positions: IndexMap<(DeclKind, String), Pos>,
}

/// Parse `text`; `origin` names the file in errors.
pub fn parse(text: &str, origin: &str) -> Result<Program, LangError> {
    crate::nesting::check(text, origin)?;
    let mut pairs =
        StmParser::parse(Rule::start, text).map_err(|e| syntax::error(text, origin, e))?;
    let start = pairs.next().expect("a successful parse yields `start`");
    let mut cx = Cx {
        text,
        origin,
        lines: Lines::new(text),
    };
    cx.start(start)
}

type R<T> = Result<T, LangError>;

/// The transformer's state: the text (for carets) and its name.
struct Cx<'t> {
    text: &'t str,
    origin: &'t str,
    lines: Lines<'t>,
}

/// A predicate tree before it becomes an on_event dict (harel's tagged tuples).
#[derive(Clone, Debug)]
enum Pred {
    Leaf {
        field: String,
        op: &'static str,
        value: Value,
    },
    NsLeaf {
        source: String,
        field: String,
        op: &'static str,
        value: Value,
    },
    RefLeaf {
        source: String,
        field: String,
        op: &'static str,
        rsource: String,
        rfield: String,
    },
    All(Vec<Pred>),
    Any(Vec<Pred>),
    Not(Box<Pred>),
    GuardRef(String),
}

/// A state-body item, tagged as `_assemble` sorts them.
enum Item {
    State(String, Object, Pos),
    Transition(Object),
    Use(Object),
    Invoke {
        fqn: Option<String>,
        each: Option<(String, String)>,
        inline: Option<Object>,
    },
    Key(&'static str, Value),
}

fn pos_value(pos: Pos) -> Value {
    json!([pos.0, pos.1])
}

fn op_name(symbol: &str) -> &'static str {
    match symbol {
        "==" => "eq",
        "!=" => "ne",
        "<" => "lt",
        "<=" => "le",
        ">" => "gt",
        ">=" => "ge",
        _ => "in",
    }
}

fn pystr(s: &str) -> String {
    py_repr(&Value::String(s.to_string()))
}

/// `_pred_to_dict`: a pure AND of distinct event-field leaves flattens to
/// `{field__op: value}`; anything else becomes an `all`/`any`/`not` combinator.
fn pred_to_dict(node: &Pred) -> Object {
    let mut out = Object::new();
    match node {
        Pred::Leaf { field, op, value } => {
            out.insert(format!("{field}__{op}"), value.clone());
        }
        Pred::All(children) => {
            let dicts: Vec<Object> = children.iter().map(pred_to_dict).collect();
            for (child, d) in children.iter().zip(&dicts) {
                if matches!(child, Pred::Leaf { .. }) && d.keys().all(|k| !out.contains_key(k)) {
                    out.extend(d.clone());
                } else {
                    let mut all = Object::new();
                    all.insert(
                        "all".into(),
                        Value::Array(dicts.into_iter().map(Value::Object).collect()),
                    );
                    return all;
                }
            }
        }
        Pred::Any(children) => {
            let dicts = children
                .iter()
                .map(|c| Value::Object(pred_to_dict(c)))
                .collect();
            out.insert("any".into(), Value::Array(dicts));
        }
        Pred::NsLeaf {
            source,
            field,
            op,
            value,
        } => {
            out.insert(
                "__ref__".into(),
                json!({"source": source, "field": field, "op": op, "value": value}),
            );
        }
        Pred::RefLeaf {
            source,
            field,
            op,
            rsource,
            rfield,
        } => {
            out.insert(
                "__ref__".into(),
                json!({
                    "source": source, "field": field, "op": op, "value": null,
                    "value_ref": {"source": rsource, "field": rfield},
                }),
            );
        }
        Pred::GuardRef(name) => {
            out.insert("__guard__".into(), Value::String(name.clone()));
        }
        Pred::Not(child) => {
            out.insert("not".into(), Value::Object(pred_to_dict(child)));
        }
    }
    out
}

/// The keys only a root execution has: config key -> keyword (`_MACHINE_ONLY`).
const MACHINE_ONLY: [(&str, &str); 2] = [("ttl", "ttl"), ("context_schema", "context")];

impl<'t> Cx<'t> {
    /// Where `pair` starts.
    fn pos(&self, pair: &Pair<'_, Rule>) -> Pos {
        self.lines.pos(pair.as_span().start())
    }

    fn err(&self, pos: Pos, message: impl Into<String>) -> LangError {
        LangError::at(ErrorKind::Semantic, self.origin, self.text, pos, message)
    }

    fn refuse_machine_only(&self, cfg: &Object, where_: &str, pos: Pos) -> R<()> {
        for (key, keyword) in MACHINE_ONLY {
            if cfg.contains_key(key) {
                return Err(self.err(
                    pos,
                    format!("`{keyword}` is only allowed at the machine level, not on {where_}"),
                ));
            }
        }
        Ok(())
    }

    // --- leaves ---

    fn string(&self, pair: &Pair<'_, Rule>) -> R<String> {
        unquote(pair.as_str()).map_err(|e| self.err(self.pos(pair), e.to_string()))
    }

    /// `?ref: NAME | STRING`
    fn ref_(&self, pair: Pair<'_, Rule>) -> R<String> {
        match pair.as_rule() {
            Rule::STRING => self.string(&pair),
            _ => Ok(pair.as_str().to_string()),
        }
    }

    /// `_lit` / `_coerce`: a value leaf as the JSON value Python would hold.
    fn value(&self, pair: Pair<'_, Rule>) -> R<Value> {
        match pair.as_rule() {
            Rule::STRING => Ok(Value::String(self.string(&pair)?)),
            Rule::BOOL => Ok(Value::Bool(pair.as_str() == "true")),
            Rule::SIGNED_NUMBER => self.number(&pair),
            Rule::list => pair
                .into_inner()
                .map(|v| self.value(v))
                .collect::<R<Vec<_>>>()
                .map(Value::Array),
            other => unreachable!("value rule {other:?}"),
        }
    }

    fn number(&self, pair: &Pair<'_, Rule>) -> R<Value> {
        let s = pair.as_str();
        if s.contains(['.', 'e', 'E']) {
            let x: f64 = s
                .parse()
                .map_err(|_| self.err(self.pos(pair), format!("invalid number {s}")))?;
            return serde_json::Number::from_f64(x)
                .map(Value::Number)
                .ok_or_else(|| self.err(self.pos(pair), format!("number {s} is out of range")));
        }
        self.int(pair)
    }

    fn int(&self, pair: &Pair<'_, Rule>) -> R<Value> {
        let s = pair.as_str().trim_start_matches('+');
        if let Ok(n) = s.parse::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = s.parse::<u64>() {
            return Ok(Value::from(n));
        }
        // Python ints are unbounded; JSON documents here hold 64 bits
        Err(self.err(
            self.pos(pair),
            format!("integer {s} does not fit in 64 bits"),
        ))
    }

    /// `_namespaced`: `event.x` / `context.x`, one field below the namespace.
    fn namespaced(&self, reference: &str, pos: Pos) -> R<(String, String)> {
        let (source, field) = reference.split_once('.').unwrap_or((reference, ""));
        if source != "event" && source != "context" {
            return Err(self.err(
                pos,
                format!(
                    "unknown namespace {} in {}: use `event.<field>` or `context.<field>`",
                    pystr(source),
                    pystr(reference)
                ),
            ));
        }
        if field.contains('.') {
            return Err(self.err(
                pos,
                format!(
                    "{}: a reference names one field of `{source}`, not a nested path",
                    pystr(reference)
                ),
            ));
        }
        Ok((source.to_string(), field.to_string()))
    }

    // --- actions ---

    /// `action`: an `ActionSpec` marker (a bare NAME is a handler, a DOTTED path a literal).
    fn action(&self, pair: Pair<'_, Rule>) -> R<Value> {
        let pos = self.pos(&pair);
        let written = pair.as_str().to_string();
        let mut inner = pair.into_inner();
        let head = inner.next().expect("action has an action_ref");
        let kind = if head.as_rule() == Rule::DOTTED {
            "literal"
        } else {
            "handler"
        };
        let mut inputs = Object::new();
        for input in inner {
            let mut parts = input.into_inner();
            let key = self.ref_(parts.next().expect("input key"))?;
            parts.next(); // `:`
            let val = parts.next().expect("input value");
            let v = match val.as_rule() {
                Rule::in_literal => self.value(val.into_inner().next().expect("literal"))?,
                _ => json!({"__param__": val.as_str()}),
            };
            inputs.insert(key, v);
        }
        if inputs.is_empty() && written.contains('(') {
            // harel's transformer crashes on `()` (a TypeError, not a DslError), so such a
            // file loads nowhere: refuse it with a reason instead
            return Err(self.err(
                pos,
                format!(
                    "`{}()`: an action without inputs is written without parentheses (harel 0.9.0 cannot load `()`)",
                    head.as_str()
                ),
            ));
        }
        Ok(json!({"__action__": kind, "ref": head.as_str(), "inputs": inputs}))
    }

    // --- predicates ---

    fn predicate(&self, pair: Pair<'_, Rule>) -> R<Pred> {
        match pair.as_rule() {
            Rule::or_expr | Rule::and_expr => {
                let is_or = pair.as_rule() == Rule::or_expr;
                let children = pair
                    .into_inner()
                    .filter(|p| !matches!(p.as_rule(), Rule::kw_or | Rule::kw_and))
                    .map(|p| self.predicate(p))
                    .collect::<R<Vec<_>>>()?;
                Ok(match children.len() {
                    1 => children.into_iter().next().expect("one child"),
                    _ if is_or => Pred::Any(children),
                    _ => Pred::All(children),
                })
            }
            Rule::not_expr => {
                let mut inner = pair.into_inner().peekable();
                if inner.peek().map(|p| p.as_rule()) == Some(Rule::kw_not) {
                    inner.next();
                    let child = self.predicate(inner.next().expect("not operand"))?;
                    Ok(Pred::Not(Box::new(child)))
                } else {
                    self.predicate(inner.next().expect("atom"))
                }
            }
            Rule::guard_atom => Ok(Pred::GuardRef(pair.as_str().to_string())),
            Rule::comparison => self.comparison(pair),
            other => unreachable!("predicate rule {other:?}"),
        }
    }

    fn comparison(&self, pair: Pair<'_, Rule>) -> R<Pred> {
        let pos = self.pos(&pair);
        let mut inner = pair.into_inner();
        let left = inner.next().expect("comparison left");
        let op = op_name(inner.next().expect("comparison op").as_str());
        let right = inner.next().expect("comparison right");
        let (source, field) = if left.as_rule() == Rule::DOTTED {
            // `event.x` is a synonym of the bare `x`
            self.namespaced(left.as_str(), pos)?
        } else {
            ("event".to_string(), self.ref_(left)?)
        };
        if right.as_rule() == Rule::DOTTED {
            let (rsource, rfield) = self.namespaced(right.as_str(), pos)?;
            return Ok(Pred::RefLeaf {
                source,
                field,
                op,
                rsource,
                rfield,
            });
        }
        let value = self.value(right)?;
        if source == "context" {
            return Ok(Pred::NsLeaf {
                source,
                field,
                op,
                value,
            });
        }
        Ok(Pred::Leaf { field, op, value })
    }

    fn trigger(&self, pair: Pair<'_, Rule>) -> R<Object> {
        let mut inner = pair
            .into_inner()
            .filter(|p| !matches!(p.as_rule(), Rule::kw_on | Rule::kw_where));
        let kinds = inner.next().expect("trigger kinds");
        let names = kinds
            .into_inner()
            .map(|k| self.ref_(k))
            .collect::<R<Vec<_>>>()?;
        let mut d = Object::new();
        d.insert("type".into(), Value::String(names.join("|")));
        if let Some(pred) = inner.next() {
            d.extend(pred_to_dict(&self.predicate(pred)?));
        }
        Ok(d)
    }

    // --- assignments ---

    fn assign_clause(&self, pair: Pair<'_, Rule>) -> R<Value> {
        pair.into_inner()
            .filter(|p| p.as_rule() == Rule::assignment)
            .map(|a| self.assignment(a))
            .collect::<R<Vec<_>>>()
            .map(Value::Array)
    }

    fn assignment(&self, pair: Pair<'_, Rule>) -> R<Value> {
        let pos = self.pos(&pair);
        let mut inner = pair.into_inner();
        let target = inner.next().expect("assignment target");
        inner.next(); // `=`
                      // harel transforms the right-hand side before checking the target
        let expr = self.expr(inner.next().expect("assignment expr"))?;
        let (source, field) = self.namespaced(target.as_str(), pos)?;
        if source != "context" {
            return Err(self.err(
                pos,
                format!(
                    "`set` writes the execution context: {} must be `context.<field>`",
                    pystr(target.as_str())
                ),
            ));
        }
        Ok(json!({"field": field, "expr": expr}))
    }

    fn expr(&self, pair: Pair<'_, Rule>) -> R<Value> {
        let mut inner = pair.into_inner();
        let left = self.operand(inner.next().expect("operand"))?;
        match (inner.next(), inner.next()) {
            (Some(op), Some(right)) => {
                let right = self.operand(right)?;
                Ok(json!({"arith": {"op": op.as_str(), "left": left, "right": right}}))
            }
            _ => Ok(left),
        }
    }

    fn operand(&self, pair: Pair<'_, Rule>) -> R<Value> {
        let pos = self.pos(&pair);
        match pair.as_rule() {
            Rule::op_ref => {
                let (source, field) = self.namespaced(pair.as_str(), pos)?;
                Ok(json!({"ref": {"source": source, "field": field}}))
            }
            _ => Ok(json!({"lit": self.value(pair.into_inner().next().expect("literal"))?})),
        }
    }

    // --- transitions ---

    fn transition(&self, pair: Pair<'_, Rule>) -> R<Object> {
        let pos = self.pos(&pair);
        let mut refs = Vec::new();
        let mut trig = None;
        let mut set = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::NAME | Rule::STRING => refs.push(self.ref_(p)?),
                Rule::trigger => trig = Some(self.trigger(p)?),
                Rule::assign_clause => set = Some(self.assign_clause(p)?),
                _ => {}
            }
        }
        let mut t = Object::new();
        t.insert("from".into(), Value::String(refs[0].clone()));
        t.insert("to".into(), Value::String(refs[1].clone()));
        t.insert("__pos__".into(), pos_value(pos));
        with_trigger_and_set(&mut t, trig, set);
        Ok(t)
    }

    fn choice_trans(&self, pair: Pair<'_, Rule>) -> R<Object> {
        let pos = self.pos(&pair);
        let mut src = None;
        let mut trig = None;
        let mut set = None;
        let mut branches = Vec::new();
        let mut default: Option<(String, Option<Value>)> = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::NAME | Rule::STRING => src = Some(self.ref_(p)?),
                Rule::trigger => trig = Some(self.trigger(p)?),
                Rule::assign_clause => set = Some(self.assign_clause(p)?),
                Rule::when_branch => {
                    let mut when = None;
                    let mut to = None;
                    let mut assigns = None;
                    for q in p.into_inner() {
                        match q.as_rule() {
                            Rule::kw_when | Rule::kw_to => {}
                            Rule::NAME | Rule::STRING if when.is_some() => to = Some(self.ref_(q)?),
                            Rule::assign_clause => assigns = Some(self.assign_clause(q)?),
                            _ => when = Some(pred_to_dict(&self.predicate(q)?)),
                        }
                    }
                    let mut b = Object::new();
                    b.insert("when".into(), Value::Object(when.expect("when predicate")));
                    b.insert("to".into(), Value::String(to.expect("when target")));
                    if let Some(a) = assigns {
                        b.insert("set".into(), a);
                    }
                    branches.push(Value::Object(b));
                }
                Rule::choice_else => {
                    let mut to = None;
                    let mut assigns = None;
                    for q in p.into_inner() {
                        match q.as_rule() {
                            Rule::NAME | Rule::STRING => to = Some(self.ref_(q)?),
                            Rule::assign_clause => assigns = Some(self.assign_clause(q)?),
                            _ => {}
                        }
                    }
                    default = Some((to.expect("else target"), assigns));
                }
                _ => {}
            }
        }
        let mut choice = Object::new();
        choice.insert("branches".into(), Value::Array(branches));
        if let Some((to, assigns)) = default {
            choice.insert("default".into(), Value::String(to));
            if let Some(a) = assigns {
                choice.insert("default_set".into(), a);
            }
        }
        let mut t = Object::new();
        t.insert("from".into(), Value::String(src.expect("choose source")));
        t.insert("choice".into(), Value::Object(choice));
        t.insert("__pos__".into(), pos_value(pos));
        with_trigger_and_set(&mut t, trig, set);
        Ok(t)
    }

    fn selector_trans(&self, pair: Pair<'_, Rule>) -> R<Object> {
        let pos = self.pos(&pair);
        let mut src = None;
        let mut action = None;
        let mut enum_ = None;
        let mut trig = None;
        let mut mapper = Object::new();
        let mut default = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::NAME | Rule::STRING => src = Some(self.ref_(p)?),
                Rule::action => action = Some(self.action(p)?),
                Rule::enum_decl => {
                    let values = p
                        .into_inner()
                        .filter(|v| {
                            !matches!(v.as_rule(), Rule::kw_returns | Rule::lbrace | Rule::rbrace)
                        })
                        .map(|v| Ok(Value::String(py_str(&self.value(v)?))))
                        .collect::<R<Vec<_>>>()?;
                    enum_ = Some(Value::Array(values));
                }
                Rule::trigger => trig = Some(self.trigger(p)?),
                Rule::branch => {
                    let mut inner = p.into_inner().filter(|q| q.as_rule() != Rule::kw_to);
                    // the engine looks a result up by str(result): `true` is "True"
                    let key = py_str(&self.value(inner.next().expect("branch value"))?);
                    let to = self.ref_(inner.next().expect("branch target"))?;
                    mapper.insert(key, Value::String(to));
                }
                Rule::else_branch => {
                    let to = p
                        .into_inner()
                        .find(|q| matches!(q.as_rule(), Rule::NAME | Rule::STRING))
                        .expect("else target");
                    default = Some(self.ref_(to)?);
                }
                _ => {}
            }
        }
        let mut sel = Object::new();
        sel.insert("function".into(), action.expect("selector action"));
        sel.insert("mapper".into(), Value::Object(mapper));
        if let Some(d) = default {
            sel.insert("default".into(), Value::String(d));
        }
        if let Some(e) = enum_ {
            sel.insert("enum".into(), e);
        }
        let mut t = Object::new();
        t.insert("from".into(), Value::String(src.expect("select source")));
        t.insert("selector".into(), Value::Object(sel));
        t.insert("__pos__".into(), pos_value(pos));
        if let Some(trig) = trig {
            t.insert("on_event".into(), Value::Object(trig));
        }
        Ok(t)
    }

    /// `join all|any` desugars to a selector over `region_results` using the shipped
    /// aggregator, which returns "pass"/"fail".
    fn join(&self, pair: Pair<'_, Rule>, mode: &str) -> R<Object> {
        let pos = self.pos(&pair);
        let refs = pair
            .into_inner()
            .filter(|p| matches!(p.as_rule(), Rule::NAME | Rule::STRING))
            .map(|p| self.ref_(p))
            .collect::<R<Vec<_>>>()?;
        let action = json!({"__action__": "literal", "ref": "harel.lib.join_success", "inputs": {"mode": mode}});
        let mut sel = Object::new();
        sel.insert("function".into(), action);
        sel.insert("mapper".into(), json!({"pass": refs[1]}));
        sel.insert("default".into(), Value::String(refs[2].clone()));
        let mut t = Object::new();
        t.insert("from".into(), Value::String(refs[0].clone()));
        t.insert("selector".into(), Value::Object(sel));
        t.insert("__pos__".into(), pos_value(pos));
        Ok(t)
    }

    // --- items and containers ---

    fn refs(&self, pair: Pair<'_, Rule>) -> R<Vec<String>> {
        pair.into_inner()
            .filter(|p| matches!(p.as_rule(), Rule::NAME | Rule::STRING))
            .map(|p| self.ref_(p))
            .collect()
    }

    fn first_ref(&self, pair: Pair<'_, Rule>) -> R<String> {
        Ok(self.refs(pair)?.into_iter().next().expect("a ref"))
    }

    fn item(&mut self, pair: Pair<'_, Rule>) -> R<Item> {
        Ok(match pair.as_rule() {
            Rule::initial => Item::Key("start", Value::String(self.first_ref(pair)?)),
            Rule::on_enter | Rule::on_exit | Rule::on_activity => {
                let key = match pair.as_rule() {
                    Rule::on_enter => "on_enter",
                    Rule::on_exit => "on_exit",
                    _ => "on_activity",
                };
                let action = pair
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::action)
                    .expect("hook action");
                Item::Key(key, self.action(action)?)
            }
            Rule::timeout => {
                let spec = pair.into_inner().nth(1).expect("timeout spec");
                let v = match spec.as_rule() {
                    Rule::timeout_literal => self.int(&spec.into_inner().next().expect("INT"))?,
                    Rule::timeout_context => json!({"context": self.first_ref(spec)?}),
                    _ => json!({"__param__": spec.as_str()}),
                };
                Item::Key("timeout", v)
            }
            Rule::ttl => {
                let n = pair.into_inner().nth(1).expect("ttl INT");
                Item::Key("ttl", self.int(&n)?)
            }
            Rule::context_decl => {
                let mut fields = Object::new();
                for f in pair
                    .into_inner()
                    .filter(|p| p.as_rule() == Rule::context_field)
                {
                    let (name, spec) = self.context_field(f)?;
                    fields.insert(name, spec);
                }
                Item::Key("context_schema", Value::Object(fields))
            }
            Rule::outcome => Item::Key("outcome", Value::String(self.first_ref(pair)?)),
            Rule::carry => Item::Key("carry", json!(self.refs(pair)?)),
            Rule::defer => Item::Key("defer", json!(self.refs(pair)?)),
            Rule::nohistory => Item::Key("allow_history", Value::Bool(false)),
            Rule::cancel_on_failure => Item::Key("cancel_on_failure", Value::Bool(true)),
            Rule::invoke => {
                let mut fqn = None;
                let mut each = None;
                let mut inline = None;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::NAME | Rule::DOTTED => fqn = Some(p.as_str().to_string()),
                        Rule::invoke_for => {
                            let r = self.refs(p)?;
                            each = Some((r[0].clone(), r[1].clone()));
                        }
                        Rule::inline_machine => {
                            let pos = self.pos(&p);
                            let cfg = self.assemble(p)?;
                            self.refuse_machine_only(
                                &cfg,
                                "an inline `invoke` target, which always runs as a child",
                                pos,
                            )?;
                            inline = Some(cfg);
                        }
                        _ => {}
                    }
                }
                Item::Invoke { fqn, each, inline }
            }
            Rule::invoke_with => {
                let mut pairs = Object::new();
                for wp in pair.into_inner().filter(|p| p.as_rule() == Rule::with_pair) {
                    let r = self.refs(wp)?;
                    pairs.insert(r[0].clone(), Value::String(r[1].clone()));
                }
                Item::Key("invoke_with", Value::Object(pairs))
            }
            Rule::use_stmt => Item::Use(self.use_stmt(pair)?),
            Rule::state_decl => {
                let (name, cfg, pos) = self.state_decl(pair)?;
                Item::State(name, cfg, pos)
            }
            Rule::final_decl => {
                let pos = self.pos(&pair);
                let mut inner = pair.clone().into_inner();
                inner.next(); // `final`
                let name = self.ref_(inner.next().expect("final name"))?;
                let outcome = self.ref_(inner.next().expect("final outcome"))?;
                let mut cfg = self.assemble(pair)?;
                self.refuse_machine_only(&cfg, &format!("state {name}"), pos)?;
                cfg.insert("outcome".into(), Value::String(outcome));
                cfg.insert("__pos__".into(), pos_value(pos));
                Item::State(name, cfg, pos)
            }
            Rule::selector_trans => Item::Transition(self.selector_trans(pair)?),
            Rule::choice_trans => Item::Transition(self.choice_trans(pair)?),
            Rule::join_all => Item::Transition(self.join(pair, "all")?),
            Rule::join_any => Item::Transition(self.join(pair, "any")?),
            Rule::transition => Item::Transition(self.transition(pair)?),
            other => unreachable!("item rule {other:?}"),
        })
    }

    fn context_field(&self, pair: Pair<'_, Rule>) -> R<(String, Value)> {
        let pos = self.pos(&pair);
        let mut name = None;
        let mut type_ = None;
        let mut optional = false;
        let mut default = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::NAME | Rule::STRING if name.is_none() => name = Some(self.ref_(p)?),
                Rule::TYPE => type_ = Some(p.as_str().to_string()),
                Rule::OPTIONAL => optional = true,
                Rule::colon | Rule::eq_sign => {}
                _ => default = Some(self.value(p)?),
            }
        }
        let name = name.expect("context field name");
        let mut spec = Object::new();
        spec.insert("type".into(), Value::String(type_.expect("field type")));
        spec.insert("required".into(), Value::Bool(!optional));
        if let Some(d) = default {
            if optional {
                return Err(self.err(
                    pos,
                    format!(
                        "context field {} has a default, so it can't also be optional (`?`): \
                         an execution always starts with it",
                        pystr(&name)
                    ),
                ));
            }
            spec.insert("default".into(), d);
        }
        Ok((name, Value::Object(spec)))
    }

    fn use_stmt(&self, pair: Pair<'_, Rule>) -> R<Object> {
        let pos = self.pos(&pair);
        let mut fragment = None;
        let mut alias = Value::Null;
        let mut args = Object::new();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::NAME | Rule::DOTTED if fragment.is_none() => {
                    fragment = Some(p.as_str().to_string())
                }
                Rule::NAME | Rule::STRING => alias = Value::String(self.ref_(p)?),
                Rule::arg_list => {
                    for arg in p.into_inner() {
                        let mut inner = arg.into_inner();
                        let name = inner.next().expect("arg name").as_str().to_string();
                        inner.next(); // `=`
                        let v = inner.next().expect("arg value");
                        let tagged = match v.as_rule() {
                            Rule::a_name => json!(["name", v.as_str()]),
                            Rule::a_dotted => json!(["dotted", v.as_str()]),
                            Rule::a_value => {
                                json!(["lit", self.value(v.into_inner().next().expect("lit"))?])
                            }
                            _ => {
                                let pred = self.predicate(v.into_inner().next().expect("pred"))?;
                                json!(["pred", pred_to_dict(&pred)])
                            }
                        };
                        args.insert(name, tagged);
                    }
                }
                _ => {}
            }
        }
        let mut u = Object::new();
        u.insert(
            "fragment".into(),
            Value::String(fragment.expect("use target")),
        );
        u.insert("alias".into(), alias);
        u.insert("args".into(), Value::Object(args));
        u.insert("__pos__".into(), pos_value(pos));
        Ok(u)
    }

    /// `_assemble`: the items of a body into a config dict. A repeated scalar item keeps
    /// the last value in the first one's place, as a Python dict does.
    fn assemble(&mut self, body: Pair<'_, Rule>) -> R<Object> {
        let mut cfg = Object::new();
        let mut states = Object::new();
        let mut transitions = Vec::new();
        let mut uses = Vec::new();
        for p in body.into_inner() {
            if !is_item(p.as_rule()) {
                continue;
            }
            match self.item(p)? {
                Item::State(name, scfg, pos) => {
                    if states.contains_key(&name) {
                        // harel's dict silently keeps the last duplicate; a typo'd copy would
                        // vanish unseen, so we refuse it (a deliberate deviation)
                        return Err(self.err(
                            pos,
                            format!("duplicate state {}: a state name must be unique among its siblings", pystr(&name)),
                        ));
                    }
                    states.insert(name, Value::Object(scfg));
                }
                Item::Transition(t) => transitions.push(Value::Object(t)),
                Item::Use(u) => uses.push(Value::Object(u)),
                Item::Invoke { fqn, each, inline } => {
                    if let Some(f) = fqn {
                        cfg.insert("invoke".into(), Value::String(f));
                    }
                    if let Some((v, c)) = each {
                        cfg.insert("invoke_each".into(), json!([v, c]));
                    }
                    if let Some(i) = inline {
                        cfg.insert("invoke_inline".into(), Value::Object(i));
                    }
                }
                Item::Key(k, v) => {
                    cfg.insert(k.into(), v);
                }
            }
        }
        if !states.is_empty() {
            cfg.insert("states".into(), Value::Object(states));
        }
        if !transitions.is_empty() {
            cfg.insert("transitions".into(), Value::Array(transitions));
        }
        if !uses.is_empty() {
            cfg.insert("__uses__".into(), Value::Array(uses));
        }
        Ok(cfg)
    }

    fn state_decl(&mut self, pair: Pair<'_, Rule>) -> R<(String, Object, Pos)> {
        let pos = self.pos(&pair);
        let mut inner = pair.clone().into_inner();
        let kind = inner.next().expect("state kind").as_str().to_string();
        let name = self.ref_(inner.next().expect("state name"))?;
        let mut cfg = self.assemble(pair)?;
        self.refuse_machine_only(&cfg, &format!("state {name}"), pos)?;
        cfg.insert("__pos__".into(), pos_value(pos));
        if kind == "orthogonal" {
            cfg.insert("type".into(), Value::String("OrthogonalState".into()));
            // regions of an AND-state are parallel composites; untyped composite children
            // are promoted so the language needs no `parallel` keyword
            if let Some(Value::Object(children)) = cfg.get_mut("states") {
                for child in children.values_mut() {
                    if let Value::Object(c) = child {
                        if c.contains_key("states") && !c.contains_key("type") {
                            c.insert("type".into(), Value::String("ParallelState".into()));
                        }
                    }
                }
            }
        }
        Ok((name, cfg, pos))
    }

    fn event_decl(&self, pair: Pair<'_, Rule>) -> R<(String, Object)> {
        let mut inner = pair.into_inner();
        inner.next(); // `event`
        let name = self.ref_(inner.next().expect("event name"))?;
        let mut fields = Object::new();
        for f in inner.filter(|p| p.as_rule() == Rule::field_decl) {
            let mut parts = f.into_inner();
            let fname = self.ref_(parts.next().expect("field name"))?;
            parts.next(); // `:`
            let type_ = parts.next().expect("field type").as_str();
            let optional = parts.next().is_some();
            fields.insert(fname, json!({"type": type_, "required": !optional}));
        }
        Ok((name, fields))
    }

    fn start(&mut self, pair: Pair<'_, Rule>) -> R<Program> {
        let mut prog = Program::default();
        for stmt in pair.into_inner() {
            let pos = self.pos(&stmt);
            match stmt.as_rule() {
                Rule::import_stmt => {
                    let mut inner = stmt
                        .into_inner()
                        .filter(|p| matches!(p.as_rule(), Rule::STRING | Rule::NAME));
                    let path = self.string(&inner.next().expect("import path"))?;
                    let alias = inner.next().map(|a| a.as_str().to_string());
                    prog.imports.push(Import { path, alias, pos });
                }
                Rule::bind_block => {
                    for b in stmt.into_inner().filter(|p| p.as_rule() == Rule::binding) {
                        let mut inner = b.into_inner();
                        let name = inner.next().expect("binding name").as_str().to_string();
                        inner.next(); // `=`
                        let target = inner.next().expect("binding impl").as_str().to_string();
                        prog.bindings.insert(name, target);
                    }
                }
                Rule::guard_decl => {
                    let mut inner = stmt.into_inner();
                    inner.next(); // `guard`
                    let name = inner.next().expect("guard name").as_str().to_string();
                    inner.next(); // `=`
                    let pred = self.predicate(inner.next().expect("guard predicate"))?;
                    prog.guards.insert(name.clone(), pred_to_dict(&pred));
                    prog.positions.insert((DeclKind::Guard, name), pos);
                }
                Rule::event_decl => {
                    let (name, fields) = self.event_decl(stmt)?;
                    prog.events.insert(name.clone(), fields);
                    prog.positions.insert((DeclKind::Event, name), pos);
                }
                Rule::machine_decl => {
                    let name = self.first_ref(stmt.clone())?;
                    let mut cfg = self.assemble(stmt)?;
                    cfg.insert("__pos__".into(), pos_value(pos));
                    prog.machines.insert(name.clone(), cfg);
                    prog.positions.insert((DeclKind::Machine, name), pos);
                }
                Rule::fragment_decl => {
                    let name = self.first_ref(stmt.clone())?;
                    let mut params = Vec::new();
                    if let Some(pl) = stmt
                        .clone()
                        .into_inner()
                        .find(|p| p.as_rule() == Rule::param_list)
                    {
                        for param in pl.into_inner() {
                            let mut inner = param.into_inner();
                            let pname = inner.next().expect("param name").as_str();
                            inner.next(); // `:`
                            let kind = inner.next().expect("param kind").as_str();
                            params.push(json!([pname, kind]));
                        }
                    }
                    let mut cfg = self.assemble(stmt)?;
                    self.refuse_machine_only(&cfg, &format!("fragment {name}"), pos)?;
                    if !params.is_empty() {
                        cfg.insert("__params__".into(), Value::Array(params));
                    }
                    cfg.insert("__pos__".into(), pos_value(pos));
                    prog.fragments.insert(name.clone(), cfg);
                    prog.positions.insert((DeclKind::Fragment, name), pos);
                }
                Rule::EOI => {}
                other => unreachable!("statement rule {other:?}"),
            }
        }
        Ok(prog)
    }
}

fn is_item(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::initial
            | Rule::on_enter
            | Rule::on_exit
            | Rule::on_activity
            | Rule::timeout
            | Rule::ttl
            | Rule::context_decl
            | Rule::outcome
            | Rule::carry
            | Rule::defer
            | Rule::nohistory
            | Rule::cancel_on_failure
            | Rule::invoke
            | Rule::invoke_with
            | Rule::use_stmt
            | Rule::state_decl
            | Rule::final_decl
            | Rule::selector_trans
            | Rule::choice_trans
            | Rule::join_all
            | Rule::join_any
            | Rule::transition
    )
}

/// `_with_trigger_and_set`: a transition's optional trigger and `set` assignments.
fn with_trigger_and_set(t: &mut Object, trig: Option<Object>, set: Option<Value>) {
    if let Some(trig) = trig {
        t.insert("on_event".into(), Value::Object(trig));
    }
    if let Some(set) = set {
        t.insert("set".into(), set);
    }
}
