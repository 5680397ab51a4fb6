//! Shrinking a diverging case: every edit that makes the case smaller (a step, a selector
//! answer, a transition, a state, a subtree, a guard, a `set`, a hook, a timeout, ...) is
//! tried in turn; one that keeps the divergence is kept, and the search starts again from
//! the smaller case, until no edit keeps it.

use super::ast::{Body, Kind, Route, State};
use super::gen::Generated;

/// The `k`-th smaller variant of `case`, or `None` when there are fewer than `k + 1`.
/// Edits are numbered steps first (the cheapest to read), then answers, then the machine.
pub fn variant(case: &Generated, k: usize) -> Option<Generated> {
    let mut k = k;
    let mut next = case.clone();
    if k < case.steps.len() {
        // from the end: a later step is the likelier to be noise after the divergence
        next.steps.remove(case.steps.len() - 1 - k);
        return Some(next);
    }
    k -= case.steps.len();
    if k < case.selectors.len() {
        next.selectors.remove(k);
        return Some(next);
    }
    k -= case.selectors.len();
    if k == 0 {
        if next.program.machine.ttl.take().is_some() {
            return Some(next);
        }
    } else {
        k -= 1;
    }
    edit_body(&mut next.program.machine.body, &mut k).then_some(next)
}

/// Counts `k` down over the edit sites of `body`; applies the one it reaches.
fn edit_body(body: &mut Body, k: &mut usize) -> bool {
    // drop a whole state (not the initial) and every transition that names it
    for i in 0..body.states.len() {
        if body.states[i].name == body.initial {
            continue;
        }
        if take(k) {
            let name = body.states.remove(i).name;
            body.transitions
                .retain(|t| t.from != name && !Body::targets(t).contains(&name.as_str()));
            return true;
        }
    }
    for i in 0..body.transitions.len() {
        if take(k) {
            body.transitions.remove(i);
            return true;
        }
        let t = &mut body.transitions[i];
        if t.on.as_ref().is_some_and(|on| on.guard.is_some()) && take(k) {
            t.on.as_mut().expect("checked").guard = None;
            return true;
        }
        if t.on.as_ref().is_some_and(|on| on.kinds.len() > 1) && take(k) {
            t.on.as_mut().expect("checked").kinds.truncate(1);
            return true;
        }
        if !t.set.is_empty() && take(k) {
            t.set.clear();
            return true;
        }
        let simpler = match &t.route {
            Route::Choose { otherwise, .. } | Route::Select { otherwise, .. } => {
                Some(otherwise.clone())
            }
            _ => None,
        };
        if let Some(to) = simpler {
            if take(k) {
                t.route = Route::To(to);
                return true;
            }
        }
    }
    if !body.carry.is_empty() && take(k) {
        body.carry.pop();
        return true;
    }
    for i in 0..body.states.len() {
        if edit_state(&mut body.states[i], k) {
            if matches!(body.states[i].kind, Kind::Leaf) {
                // a leaf has no regions to join
                let name = body.states[i].name.clone();
                body.transitions
                    .retain(|t| !(t.from == name && matches!(t.route, Route::Join { .. })));
            }
            return true;
        }
    }
    false
}

fn edit_state(state: &mut State, k: &mut usize) -> bool {
    let compound = matches!(
        state.kind,
        Kind::Composite { .. } | Kind::Orthogonal { .. } | Kind::Invoke { .. }
    );
    if compound && take(k) {
        state.kind = Kind::Leaf;
        return true;
    }
    if state.timeout.is_some() && take(k) {
        state.timeout = None;
        return true;
    }
    if state.on_enter && take(k) {
        state.on_enter = false;
        return true;
    }
    if state.on_exit && take(k) {
        state.on_exit = false;
        return true;
    }
    if !state.defer.is_empty() && take(k) {
        state.defer.clear();
        return true;
    }
    match &mut state.kind {
        Kind::Composite { body, no_history } => {
            if *no_history && take(k) {
                *no_history = false;
                return true;
            }
            edit_body(body, k)
        }
        Kind::Orthogonal {
            regions,
            cancel_on_failure,
        } => {
            if *cancel_on_failure && take(k) {
                *cancel_on_failure = false;
                return true;
            }
            if regions.len() > 1 {
                for i in 0..regions.len() {
                    if take(k) {
                        regions.remove(i);
                        return true;
                    }
                }
            }
            regions.iter_mut().any(|region| match &mut region.kind {
                Kind::Composite { body, .. } => edit_body(body, k),
                _ => false,
            })
        }
        Kind::Invoke { body, with } => {
            if !with.is_empty() && take(k) {
                with.pop();
                return true;
            }
            edit_body(body, k)
        }
        Kind::Leaf | Kind::Final(_) => false,
    }
}

/// True when the countdown reaches this site.
fn take(k: &mut usize) -> bool {
    if *k == 0 {
        true
    } else {
        *k -= 1;
        false
    }
}

/// Shrinks `case` while `still_differs` holds; returns the smallest case found and how many
/// variants were tried.
pub fn shrink(
    case: &Generated,
    mut still_differs: impl FnMut(&Generated) -> bool,
) -> (Generated, usize) {
    let mut best = case.clone();
    let mut tried = 0;
    let mut k = 0;
    while let Some(candidate) = variant(&best, k) {
        tried += 1;
        if still_differs(&candidate) {
            best = candidate;
            // the next edit at the same index is a new site of the smaller case
        } else {
            k += 1;
        }
    }
    (best, tried)
}
