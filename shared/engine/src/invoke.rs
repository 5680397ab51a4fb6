//! Submachines (harel `engine/core.py`'s invoke rules): a single `invoke` state spawns one
//! child execution of another Definition and routes on its `Returned`; a fan-out (`invoke M
//! for item in coll`) spawns one addressed child per collection entry and joins them like an
//! orthogonal node. Kept apart from the step rules so machines without submachines pay one
//! `Option` check per drained state for them.
//!
//! Child ids and the spawn records are harel's, so a harel Python worker can pick up a child
//! this engine spawned and the other way round: a single invoke's child is
//! `{exe}:{state}:{seq}`, a fan-out instance `{exe}:{state}:{seq}:{i}`; the FQN to run rides
//! in the spawn's context as `__invoke_fqn__`.

use harel_model::pyrepr::py_type_name;
use harel_model::{ChildState, Event, Execution, NodeId, Object, SmolStr, Status};
use serde_json::Value;

use super::core::Run;
use super::{step_mode, Host};
use crate::resolve::event_pred;
use crate::{EngineError, Spawn};

/// The context key a spawn carries its submachine's FQN in (popped by the relay).
pub const INVOKE_FQN_KEY: &str = "__invoke_fqn__";

/// `{exe}:{path}:{seq}`: a single invoke's child id for this entry of the state.
pub fn single_child_id(exe_id: &str, path: &str, seq: u64) -> SmolStr {
    // a region's id has the same shape
    crate::core::child_id(exe_id, path, seq)
}

/// `for item in exe.context.get(coll, [])`, as Python iterates the value it finds: a list by
/// its items, a dict by its keys, a string by its characters; anything else is not iterable
/// (harel raises the `TypeError` to its caller).
fn entries(context: &Object, coll: &str) -> Result<Vec<Value>, EngineError> {
    match context.get(coll) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(Value::Object(o)) => Ok(o.keys().map(|k| Value::String(k.clone())).collect()),
        Some(Value::String(s)) => Ok(s.chars().map(|c| Value::String(c.into())).collect()),
        Some(other) => Err(EngineError::Corrupt(format!(
            "TypeError: '{}' object is not iterable (the fan-out collection context.{coll})",
            py_type_name(other)
        ))),
    }
}

#[step_mode]
impl<H: Host> Run<'_, '_, H> {
    /// A single `invoke` state reached: on first reach of this entry, spawn its one child
    /// (the `with` keys the parent has, and the FQN), then park until it returns.
    pub(crate) fn invoke_single(&mut self, exe: &mut Execution, id: NodeId) {
        let node = self.defn.node(id);
        let seq = exe
            .invoke_seq
            .get(node.full_path.as_str())
            .copied()
            .unwrap_or(0);
        let cid = single_child_id(&exe.id, &node.full_path, seq);
        if exe.children.contains_key(cid.as_str()) {
            return;
        }
        let mut context: Object = node
            .invoke_with
            .iter()
            .filter_map(|(ck, pk)| exe.context.get(pk).map(|v| (ck.clone(), v.clone())))
            .collect();
        context.insert(
            INVOKE_FQN_KEY.into(),
            Value::String(node.invoke.clone().unwrap_or_default()),
        );
        exe.children.insert(
            cid.clone(),
            ChildState {
                submachine: true,
                ..ChildState::default()
            },
        );
        self.fx.spawns.push(Spawn {
            child_id: cid,
            root_path: SmolStr::default(),
            context,
        });
    }

    /// A fan-out state reached: unless this entry already fanned out, drop the previous
    /// entry's instances and spawn one child per collection entry, each with its `with`
    /// projection (the loop variable is the entry; a missing parent key passes `None`).
    pub(crate) fn fan_out_once(
        &mut self,
        exe: &mut Execution,
        id: NodeId,
    ) -> Result<(), EngineError> {
        let node = self.defn.node(id);
        let Some((loop_var, coll)) = &node.invoke_each else {
            return Ok(());
        };
        let seq = exe
            .invoke_seq
            .get(node.full_path.as_str())
            .copied()
            .unwrap_or(0);
        let owned = format!("{}:{}:", exe.id, node.full_path);
        let this_entry = format!("{owned}{seq}:");
        if exe.children.keys().any(|c| c.starts_with(&this_entry)) {
            return Ok(());
        }
        let items = entries(&exe.context, coll)?;
        // a re-entry: the previous entry's (finished) instances go
        exe.children.retain(|c, _| !c.starts_with(&owned));
        let fqn = Value::String(node.invoke.clone().unwrap_or_default());
        let mut specs = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let cid = SmolStr::from(format!("{this_entry}{i}"));
            let mut context: Object = node
                .invoke_with
                .iter()
                .map(|(ck, src)| {
                    let v = if src == loop_var {
                        item.clone()
                    } else {
                        exe.context.get(src).cloned().unwrap_or(Value::Null)
                    };
                    (ck.clone(), v)
                })
                .collect();
            context.insert(INVOKE_FQN_KEY.into(), fqn.clone());
            exe.children.insert(
                cid.clone(),
                ChildState {
                    submachine: true,
                    key: format!("{}:{i}", node.full_path).into(),
                    ..ChildState::default()
                },
            );
            specs.push(Spawn {
                child_id: cid,
                root_path: SmolStr::default(),
                context,
            });
        }
        self.fx.spawns.extend(specs);
        Ok(())
    }

    /// A `Finished` while a single `invoke` state is active: if it is this entry's child,
    /// deliver its outcome and carried context as a `Returned` event; a transition taking
    /// it leaves the state (its seq bumped, the child dropped, so a re-entry invokes afresh).
    /// A stale child's `Finished`, or a `Returned` nothing handles, changes nothing more.
    pub(crate) async fn returned(
        &mut self,
        exe: &mut Execution,
        active: NodeId,
        cid: Option<&str>,
    ) -> Result<(), EngineError> {
        let path = &self.defn.node(active).full_path;
        let seq = exe.invoke_seq.get(path.as_str()).copied().unwrap_or(0);
        let expected = single_child_id(&exe.id, path, seq);
        if cid != Some(expected.as_str()) {
            return Ok(());
        }
        let Some(cs) = exe.children.get(expected.as_str()) else {
            // harel indexes `exe.children[cid]` here and raises KeyError
            return Err(EngineError::Corrupt(format!(
                "KeyError: {expected:?} (the invoke child is not among the children)"
            )));
        };
        let mut data = Object::with_capacity(1 + cs.result.len());
        data.insert(
            "outcome".into(),
            crate::core::str_or_null(cs.outcome.as_deref()),
        );
        for (k, v) in &cs.result {
            data.insert(k.clone(), v.clone());
        }
        let completion: Event = crate::ids::event_with("Returned", data);
        let found = self.resolve(exe, &event_pred(&completion, &exe.context), true)?;
        let Some(found) = found else {
            return Ok(());
        };
        match exe.invoke_seq.get_mut(path.as_str()) {
            Some(s) => *s = seq + 1,
            None => {
                exe.invoke_seq.insert(path.clone(), seq + 1);
            }
        }
        exe.children.remove(expected.as_str());
        self.fire(exe, found, Some(&completion)).await?;
        self.drain(exe).await
    }
}

/// Whether `exe` is parked on a single `invoke` state (the `Returned` route of a `Finished`).
pub(crate) fn parked_on_single_invoke(
    defn: &harel_model::Definition,
    exe: &Execution,
    active: Option<NodeId>,
) -> bool {
    active.is_some_and(|a| {
        let n = defn.node(a);
        n.invoke.is_some() && n.invoke_each.is_none() && exe.status == Status::Running
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fan_out_entries_iterate_as_python_does() {
        let ctx = json!({"l": [1, {"a": 2}], "d": {"x": 1, "y": 2}, "s": "ab", "n": null, "i": 3});
        let ctx = ctx.as_object().unwrap();
        assert_eq!(entries(ctx, "l").unwrap(), vec![json!(1), json!({"a": 2})]);
        assert_eq!(entries(ctx, "d").unwrap(), vec![json!("x"), json!("y")]);
        assert_eq!(entries(ctx, "s").unwrap(), vec![json!("a"), json!("b")]);
        assert!(entries(ctx, "missing").unwrap().is_empty());
        let err = entries(ctx, "n").unwrap_err().to_string();
        assert!(
            err.starts_with("TypeError: 'NoneType' object is not iterable"),
            "{err}"
        );
        let err = entries(ctx, "i").unwrap_err().to_string();
        assert!(
            err.starts_with("TypeError: 'int' object is not iterable"),
            "{err}"
        );
    }

    #[test]
    fn child_ids_are_harels() {
        assert_eq!(single_child_id("e", "Pay", 0), "e:Pay:0");
        assert_eq!(single_child_id("e", "A.Pay", 3), "e:A.Pay:3");
    }
}
