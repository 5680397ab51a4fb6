//! Random machines inside the documented `.stm` language, and random walks over them. One
//! seed gives one case, always the same one.
//!
//! Shapes harel 0.9.0 crashes or hangs on are never generated (tests/differential/README.md,
//! "Generated cases"): every transition targets a sibling (never across a region's border),
//! automatic transitions only go forward (no cycles), a state inside a region or an inline
//! submachine that has a `timeout` handles its own `Timeout`, `Returned` never routes back into
//! the invoking state, and every `select` has an `else`.

use fastrand::Rng;

use super::ast::{
    Assign, Body, Kind, Machine, Pred, Program, Route, State, Timeout, Transition, Trigger,
};
use crate::differential::Step;

/// The domain events a generated machine declares; `Zz` is declared and never handled.
pub const EVENTS: [&str; 4] = ["Go", "Hop", "Ping", "Zz"];
/// Selector handlers (answered with `--selector NAME=VALUE`).
pub const SELECTORS: [&str; 2] = ["pick", "route"];
/// What a selector may answer.
const ANSWERS: [&str; 3] = ["a", "b", "c"];
const VERDICTS: [&str; 5] = ["success", "success", "failed", "cancelled", "rejected"];
/// The context keys (see `ast::CONTEXT`).
const KEYS: [&str; 4] = ["x", "y", "wait", "tag"];

/// A generated case before it becomes a corpus entry.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The seed it came from: [`generate`] of it gives this case again.
    pub seed: u64,
    /// The `.stm` file's content.
    pub program: Program,
    /// The random walk: events (some with data `n`) and clock advances, one `-e` each.
    pub steps: Vec<Step>,
    /// `NAME=VALUE`, in call order.
    pub selectors: Vec<String>,
}

/// Where a body sits: what its states may do.
#[derive(Clone, Copy)]
struct Scope {
    depth: usize,
    /// Inside a region (at any depth): a `Timeout` must be handled where it is armed.
    in_region: bool,
    /// Inside an inline submachine: the context holds only what `with` passed.
    in_invoke: bool,
    /// The context keys known to exist here.
    keys: u8,
}

struct Gen {
    rng: Rng,
    next_name: usize,
    states_left: usize,
    used_selectors: Vec<String>,
}

/// The case of one seed.
pub fn generate(seed: u64) -> Generated {
    let mut g = Gen {
        rng: Rng::with_seed(seed),
        next_name: 0,
        states_left: 4 + (seed % 10) as usize,
        used_selectors: Vec::new(),
    };
    let scope = Scope {
        depth: 0,
        in_region: false,
        in_invoke: false,
        keys: 0b1111,
    };
    let mut body = g.body(scope, false);
    let ttl = g.rng.u8(..100) < 15;
    if ttl {
        // a root that handles `Expired` owns its ending (else it is cancelled as expired)
        if g.rng.bool() {
            let from = body.states[g.rng.usize(..body.states.len())].name.clone();
            if !matches!(
                body.states.iter().find(|s| s.name == from).map(|s| &s.kind),
                Some(Kind::Final(_))
            ) {
                let to = g.fresh("Lapsed");
                body.states
                    .push(State::leaf(&to, Kind::Final("expired_cleanly".into())));
                body.transitions.push(Transition {
                    from,
                    on: Some(Trigger {
                        kinds: vec!["Expired".into()],
                        guard: None,
                    }),
                    set: vec![],
                    route: Route::To(to),
                });
            }
        }
    }
    let program = Program {
        events: EVENTS.iter().map(|e| e.to_string()).collect(),
        selectors: g.used_selectors.clone(),
        machine: Machine {
            name: "Gen".into(),
            ttl: ttl.then(|| [30, 60][g.rng.usize(..2)]),
            body,
        },
    };
    let steps = g.walk();
    let mut selectors = Vec::new();
    for name in &program.selectors {
        for _ in 0..g.rng.usize(0..4) {
            selectors.push(format!("{name}={}", ANSWERS[g.rng.usize(..ANSWERS.len())]));
        }
    }
    Generated {
        seed,
        program,
        steps,
        selectors,
    }
}

impl State {
    /// A state of `kind` named `name`, without timeout, hooks or defers (the generator adds
    /// them after).
    pub(crate) fn leaf(name: &str, kind: Kind) -> State {
        State {
            name: name.into(),
            kind,
            timeout: None,
            on_enter: false,
            on_exit: false,
            defer: vec![],
        }
    }
}

impl Gen {
    fn fresh(&mut self, stem: &str) -> String {
        self.next_name += 1;
        format!("{stem}{}", self.next_name)
    }

    fn chance(&mut self, percent: u8) -> bool {
        self.rng.u8(..100) < percent
    }

    fn key(&mut self, keys: u8, numeric: bool) -> Option<&'static str> {
        let avail: Vec<usize> = (0..KEYS.len())
            .filter(|i| keys & (1 << i) != 0 && (!numeric || KEYS[*i] != "tag"))
            .collect();
        (!avail.is_empty()).then(|| KEYS[avail[self.rng.usize(..avail.len())]])
    }

    /// A body of 2..=4 states; `needs_final`: a region's or a submachine's, which must be
    /// able to finish.
    fn body(&mut self, scope: Scope, needs_final: bool) -> Body {
        let count = 2 + self.rng.usize(..=2usize.saturating_sub(scope.depth / 2));
        let mut states = Vec::new();
        for i in 0..count {
            let is_last = i + 1 == count;
            let final_here = i > 0
                && ((is_last && needs_final && !states.iter().any(is_final)) || self.chance(20));
            let state = if final_here {
                let name = self.fresh("F");
                State::leaf(
                    &name,
                    Kind::Final(VERDICTS[self.rng.usize(..VERDICTS.len())].into()),
                )
            } else {
                self.state(scope)
            };
            states.push(state);
        }
        let mut body = Body {
            initial: states[0].name.clone(),
            states,
            transitions: vec![],
            carry: vec![],
        };
        self.transitions(&mut body, scope);
        body
    }

    fn state(&mut self, scope: Scope) -> State {
        let deep_ok = scope.depth < 3 && self.states_left > 0;
        let roll = self.rng.u8(..100);
        let kind = if deep_ok && roll < 18 {
            self.states_left = self.states_left.saturating_sub(2);
            let inner = Scope {
                depth: scope.depth + 1,
                ..scope
            };
            Kind::Composite {
                body: self.body(inner, false),
                no_history: self.chance(30),
            }
        } else if deep_ok && !scope.in_invoke && roll < 30 {
            // harel 0.9.0 looks an inline machine's regions up in its parent (KeyError)
            self.states_left = self.states_left.saturating_sub(3);
            let inner = Scope {
                depth: scope.depth + 1,
                in_region: true,
                ..scope
            };
            let mut regions = Vec::new();
            for _ in 0..2 {
                let name = self.fresh("R");
                let mut body = self.body(inner, true);
                body.carry = self.carry(scope.keys);
                let mut region = State::leaf(
                    &name,
                    Kind::Composite {
                        body,
                        no_history: false,
                    },
                );
                region.on_enter = self.chance(15);
                region.on_exit = self.chance(15);
                regions.push(region);
            }
            Kind::Orthogonal {
                regions,
                cancel_on_failure: self.chance(25),
            }
        } else if deep_ok && roll < 40 {
            self.states_left = self.states_left.saturating_sub(2);
            let with: Vec<String> = KEYS
                .iter()
                .enumerate()
                .filter(|(i, _)| scope.keys & (1 << i) != 0 && self.rng.bool())
                .map(|(_, k)| k.to_string())
                .collect();
            let keys = KEYS
                .iter()
                .enumerate()
                .filter(|(_, k)| with.iter().any(|w| w == *k))
                .fold(0u8, |acc, (i, _)| acc | (1 << i));
            let inner = Scope {
                depth: scope.depth + 1,
                in_region: false,
                in_invoke: true,
                keys,
            };
            let mut body = self.body(inner, true);
            body.carry = self.carry(keys);
            Kind::Invoke { body, with }
        } else {
            Kind::Leaf
        };
        let prefix = match kind {
            Kind::Orthogonal { .. } => "O",
            Kind::Invoke { .. } => "I",
            Kind::Composite { .. } => "C",
            _ => "S",
        };
        let name = self.fresh(prefix);
        let mut state = State::leaf(&name, kind);
        if self.chance(25) {
            state.timeout = Some(if scope.keys & 0b0100 != 0 && self.chance(30) {
                Timeout::Context("wait".into())
            } else {
                Timeout::Seconds([5, 10, 20, 30][self.rng.usize(..4)])
            });
        }
        state.on_enter = self.chance(20);
        state.on_exit = self.chance(15);
        if matches!(state.kind, Kind::Leaf) && self.chance(10) {
            state.defer = vec![EVENTS[self.rng.usize(..3)].into()];
        }
        state
    }

    fn carry(&mut self, keys: u8) -> Vec<String> {
        KEYS.iter()
            .enumerate()
            .filter(|(i, _)| keys & (1 << i) != 0 && self.chance(40))
            .map(|(_, k)| k.to_string())
            .collect()
    }

    /// The transitions among one body's states (siblings only).
    fn transitions(&mut self, body: &mut Body, scope: Scope) {
        let names: Vec<String> = body.states.iter().map(|s| s.name.clone()).collect();

        let mut out = Vec::new();
        for (i, state) in body.states.iter().enumerate() {
            if is_final(state) {
                continue;
            }
            let plain: Vec<String> = body.states[i + 1..]
                .iter()
                .filter(|s| matches!(s.kind, Kind::Leaf | Kind::Final(_)))
                .map(|s| s.name.clone())
                .collect();
            match &state.kind {
                // a join goes forward, like an automatic transition: regions that finish at
                // once would otherwise close a cycle of automatic moves
                Kind::Orthogonal { .. } if i + 1 < names.len() => {
                    let to = names[self.rng.usize(i + 1..names.len())].clone();
                    let otherwise = names[self.rng.usize(i + 1..names.len())].clone();
                    out.push(Transition {
                        from: state.name.clone(),
                        on: None,
                        set: vec![],
                        route: Route::Join {
                            any: self.rng.bool(),
                            to,
                            otherwise,
                        },
                    });
                }
                // `Returned` routes forward to a leaf or a final only: leaving an invoking
                // state cancels its child, whose `Returned` still arrives, so two invoking
                // states routing `Returned` to each other ping-pong for ever (on harel and
                // ours), and a child that finishes at once is an automatic move
                Kind::Invoke { body: inner, .. } if !plain.is_empty() => {
                    let ok = plain[self.rng.usize(..plain.len())].clone();
                    let mut set = vec![];
                    if let Some(key) = inner.carry.first() {
                        if scope.keys & key_bit(key) != 0 && self.chance(50) {
                            set.push(Assign {
                                key: key.clone(),
                                expr: format!("event.{key}"),
                            });
                        }
                    }
                    out.push(Transition {
                        from: state.name.clone(),
                        on: Some(Trigger {
                            kinds: vec!["Returned".into()],
                            guard: Some(Pred::Cmp("outcome == \"success\"".into())),
                        }),
                        set,
                        route: Route::To(ok),
                    });
                    let other = plain[self.rng.usize(..plain.len())].clone();
                    out.push(Transition {
                        from: state.name.clone(),
                        on: Some(Trigger {
                            kinds: vec!["Returned".into()],
                            guard: None,
                        }),
                        set: vec![],
                        route: Route::To(other),
                    });
                }
                _ => {}
            }
            if state.timeout.is_some() && (scope.in_region || scope.in_invoke || self.chance(70)) {
                let to = names[self.rng.usize(..names.len())].clone();
                let set = self.assigns(scope, false);
                out.push(Transition {
                    from: state.name.clone(),
                    on: Some(Trigger {
                        kinds: vec!["Timeout".into()],
                        guard: None,
                    }),
                    set,
                    route: Route::To(to),
                });
            }
            for _ in 0..self.rng.usize(0..=2) {
                out.push(self.event_transition(&state.name, &names, scope));
            }
            // an automatic transition goes forward only: no cycle of them can form
            if matches!(state.kind, Kind::Leaf) && i + 1 < names.len() && self.chance(12) {
                let to = names[self.rng.usize(i + 1..names.len())].clone();
                // the grammar gives an automatic transition no guard
                out.push(Transition {
                    from: state.name.clone(),
                    on: None,
                    set: self.assigns(scope, false),
                    route: Route::To(to),
                });
            }
        }
        body.transitions = out;
    }

    fn event_transition(&mut self, from: &str, names: &[String], scope: Scope) -> Transition {
        let mut kinds = vec![EVENTS[self.rng.usize(..3)].to_string()];
        if self.chance(10) {
            let other = EVENTS[self.rng.usize(..3)].to_string();
            if !kinds.contains(&other) {
                kinds.push(other);
            }
        }
        let guard = if self.chance(35) {
            Some(self.pred(scope, 2))
        } else {
            None
        };
        let set = self.assigns(scope, true);
        let target = |rng: &mut Rng| names[rng.usize(..names.len())].clone();
        let roll = self.rng.u8(..100);
        let route = if roll < 12 {
            let mut when = Vec::new();
            for _ in 0..self.rng.usize(1..=2) {
                let pred = self.pred(scope, 1);
                let to = target(&mut self.rng);
                let set = self.assigns(scope, true);
                when.push((pred, to, set));
            }
            Route::Choose {
                when,
                otherwise: target(&mut self.rng),
            }
        } else if roll < 20 {
            let handler = SELECTORS[self.rng.usize(..SELECTORS.len())].to_string();
            if !self.used_selectors.contains(&handler) {
                self.used_selectors.push(handler.clone());
            }
            let mut branches = Vec::new();
            for answer in &ANSWERS[..self.rng.usize(1..=2)] {
                branches.push((format!("\"{answer}\""), target(&mut self.rng)));
            }
            Route::Select {
                handler,
                branches,
                otherwise: target(&mut self.rng),
            }
        } else {
            Route::To(target(&mut self.rng))
        };
        Transition {
            from: from.into(),
            on: Some(Trigger { kinds, guard }),
            set,
            route,
        }
    }

    fn context_cmp(&mut self, scope: Scope) -> Option<Pred> {
        let key = self.key(scope.keys, true)?;
        let op = [">", ">=", "==", "!=", "<"][self.rng.usize(..5)];
        Some(Pred::Cmp(format!(
            "context.{key} {op} {}",
            self.rng.u8(..4)
        )))
    }

    fn atom(&mut self, scope: Scope) -> Pred {
        match self.rng.u8(..6) {
            0 | 1 => {
                let op = [">", ">=", "==", "!=", "<", "<="][self.rng.usize(..6)];
                Pred::Cmp(format!("n {op} {}", self.rng.u8(..5)))
            }
            2 => Pred::Cmp(format!("n in [{}, {}]", self.rng.u8(..5), self.rng.u8(..5))),
            3 => match self.key(scope.keys, true) {
                Some(key) => Pred::Cmp(format!("event.n >= context.{key}")),
                None => Pred::Cmp("n > 1".into()),
            },
            4 if scope.keys & key_bit("tag") != 0 => Pred::Cmp(format!(
                "context.tag == \"{}\"",
                ["a", "b"][self.rng.usize(..2)]
            )),
            _ => self
                .context_cmp(scope)
                .unwrap_or(Pred::Cmp("n != 3".into())),
        }
    }

    fn pred(&mut self, scope: Scope, depth: usize) -> Pred {
        if depth == 0 || self.chance(60) {
            return self.atom(scope);
        }
        match self.rng.u8(..3) {
            0 => Pred::Not(Box::new(self.pred(scope, depth - 1))),
            1 => Pred::And(vec![
                self.pred(scope, depth - 1),
                self.pred(scope, depth - 1),
            ]),
            _ => Pred::Or(vec![
                self.pred(scope, depth - 1),
                self.pred(scope, depth - 1),
            ]),
        }
    }

    /// A few `set context.K = ...`; `from_event`: the event's `n` may be read.
    fn assigns(&mut self, scope: Scope, from_event: bool) -> Vec<Assign> {
        let mut out = Vec::new();
        if !self.chance(30) {
            return out;
        }
        for _ in 0..self.rng.usize(1..=2) {
            let Some(key) = self.key(scope.keys, false) else {
                break;
            };
            let expr = if key == "tag" {
                format!("\"{}\"", ["a", "b", "c"][self.rng.usize(..3)])
            } else if key == "wait" {
                // `timeout context wait` stays positive: a timeout of 0 s re-armed by its own
                // `Timeout` is due again in the same sweep, for ever
                match self.rng.bool() {
                    true => format!("context.wait + {}", self.rng.u8(1..10)),
                    false => format!("{}", self.rng.u8(5..40)),
                }
            } else {
                match self.rng.u8(..5) {
                    0 => format!("context.{key} + {}", self.rng.u8(1..4)),
                    1 => format!("context.{key} * 2"),
                    2 if from_event => "event.n".into(),
                    3 => format!("context.{key} - 1"),
                    _ => format!("{}", self.rng.u8(..40)),
                }
            };
            out.push(Assign {
                key: key.into(),
                expr,
            });
        }
        out
    }

    fn walk(&mut self) -> Vec<Step> {
        let len = self.rng.usize(1..=12);
        (0..len)
            .map(|_| {
                let roll = self.rng.u8(..100);
                if roll < 62 {
                    let kind = EVENTS[self.rng.usize(..3)].to_string();
                    if self.chance(60) {
                        let mut data = serde_json::Map::new();
                        data.insert("n".into(), self.rng.u8(..5).into());
                        Step::WithData(kind, data)
                    } else {
                        Step::Plain(kind)
                    }
                } else if roll < 90 {
                    Step::Plain(format!(
                        "+{}s",
                        [5, 10, 15, 20, 30, 61][self.rng.usize(..6)]
                    ))
                } else if roll < 95 {
                    Step::Plain("Zz".into())
                } else if roll < 98 {
                    Step::Plain("Reset".into())
                } else {
                    Step::Plain("Cancel".into())
                }
            })
            .collect()
    }
}

fn is_final(state: &State) -> bool {
    matches!(state.kind, Kind::Final(_))
}

fn key_bit(key: &str) -> u8 {
    KEYS.iter().position(|k| *k == key).map_or(0, |i| 1 << i)
}
