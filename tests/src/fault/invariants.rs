//! What must hold once the storm is quiet, whatever was injected: each returns the
//! violations it found, in words.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use harel_model::Execution;
use harel_store::prelude::*;

use super::scenario::{Reference, Script};
use super::source;
use super::world::World;
use super::FaultError;

type Item = HashMap<String, AttributeValue>;

async fn scan(world: &World, table: &str) -> Result<Vec<Item>, FaultError> {
    world
        .ddb
        .scan()
        .table_name(table)
        .consistent_read(true)
        .into_paginator()
        .items()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .map_err(|e| {
            FaultError::Aws(format!(
                "scan {table}: {}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            ))
        })
}

fn s<'a>(item: &'a Item, name: &str) -> &'a str {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .unwrap_or_default()
}

fn store_err(e: impl std::fmt::Display) -> FaultError {
    FaultError::Aws(format!("store: {e}"))
}

/// Every invariant, after the storm has quieted: the executions on AWS against the
/// `reference` run of the same `scripts`, the processed marks, the delivery of every event,
/// the idempotency records, the queues and the event bus. Returns the violations found
/// (empty: all hold); an error only when the harness could not read what it checks.
pub(crate) async fn check(
    world: &World,
    reference: &Reference,
    scripts: &[Script],
) -> Result<Vec<String>, FaultError> {
    let mut v = Vec::new();
    executions(world, reference, &mut v).await?;
    marks(world, reference, scripts, &mut v).await?;
    delivery(world, reference, &mut v).await?;
    idempotency(world, &mut v).await?;
    queues(world, &mut v).await?;
    events(world, &mut v).await?;
    Ok(v)
}

/// Every execution (roots and children, no orphan, no duplicate) equals the reference's, JSON
/// for JSON. The one allowed difference is harel's own: the worker commits a root's processed
/// mark when it broadcasts a domain event to its regions, a version the durable runner does
/// not write.
async fn executions(
    world: &World,
    reference: &Reference,
    v: &mut Vec<String>,
) -> Result<(), FaultError> {
    let rows = scan(world, &world.store.tables().executions()).await?;
    let on_aws: BTreeSet<String> = rows.iter().map(|r| s(r, "id").to_string()).collect();
    let expected: Vec<Execution> = reference.executions().await;
    let expected_ids: BTreeSet<String> = expected.iter().map(|e| e.id.to_string()).collect();
    for extra in on_aws.difference(&expected_ids) {
        v.push(format!(
            "execution {extra} exists on AWS, not in the reference (orphan or duplicate child)"
        ));
    }
    for missing in expected_ids.difference(&on_aws) {
        v.push(format!(
            "execution {missing} is missing on AWS (a lost create or child)"
        ));
    }
    if rows.len() != on_aws.len() {
        v.push(format!(
            "{} execution rows for {} ids",
            rows.len(),
            on_aws.len()
        ));
    }
    for mut want in expected {
        let Some(got) = world.store.load(&want.id).await.map_err(store_err)? else {
            continue;
        };
        want.version += reference
            .broadcasts
            .get(want.id.as_str())
            .map_or(0, |b| b.len() as u64);
        if got.to_json() != want.to_json() {
            v.push(format!(
                "execution {} differs from the reference:\n  aws:       {}\n  reference: {}",
                want.id,
                got.to_json(),
                want.to_json()
            ));
        }
        if let Some(parent) = &got.parent_id {
            match world.store.load(parent).await.map_err(store_err)? {
                Some(p) if p.children.contains_key(&got.id) => {}
                _ => v.push(format!(
                    "child {} is not in its parent {parent}'s children",
                    got.id
                )),
            }
        }
    }
    Ok(())
}

/// No event applied twice, none lost: the processed marks on AWS are the reference's (plus
/// the broadcast marks above), for every scripted event and every mark found.
async fn marks(
    world: &World,
    reference: &Reference,
    scripts: &[Script],
    v: &mut Vec<String>,
) -> Result<(), FaultError> {
    let rows = scan(world, &format!("{}_processed", world.prefix)).await?;
    if world.commit_mode == harel_dynamodb::CommitMode::Lean {
        // the marks are in the execution items' windows, which keep the last steps only: an
        // event applied twice (or lost) shows in the executions' versions and documents,
        // which `executions` compares with the reference's
        if !rows.is_empty() {
            v.push(format!(
                "{} processed items written in the lean commit mode, which writes none",
                rows.len()
            ));
        }
        return Ok(());
    }
    let mut on_aws: BTreeSet<(String, String)> = BTreeSet::new();
    for r in &rows {
        let key = (
            s(r, "execution_id").to_string(),
            s(r, "event_id").to_string(),
        );
        if !on_aws.insert(key.clone()) {
            v.push(format!("processed mark {key:?} stored twice"));
        }
    }
    let broadcast = |exe: &str, ev: &str| {
        reference
            .broadcasts
            .get(exe)
            .is_some_and(|b| b.contains(ev))
    };
    let store = reference.store();
    let scripted: BTreeSet<(&str, &str)> = scripts
        .iter()
        .flat_map(|s| {
            s.phases
                .iter()
                .flatten()
                .map(|e| (s.execution_id.as_str(), e.id.as_str()))
        })
        .collect();
    // the engine's own events (Finished, Cancel) get random ids, different in the reference:
    // they are counted instead; each mark is one committed step of its execution
    let mut per_execution: HashMap<&str, u64> = HashMap::new();
    for (exe, ev) in &on_aws {
        *per_execution.entry(exe.as_str()).or_default() += 1;
        let timer = ev.starts_with("timeout:");
        if (scripted.contains(&(exe.as_str(), ev.as_str())) || timer)
            && !store.is_processed(exe, ev).await.map_err(store_err)?
            && !broadcast(exe, ev)
        {
            v.push(format!(
                "event {ev} marked processed on {exe}, not in the reference"
            ));
        }
    }
    let reference_marks = reference.marks();
    for want in reference.executions().await {
        let broadcasts = reference
            .broadcasts
            .get(want.id.as_str())
            .map_or(0, |b| b.len() as u64);
        let marks = reference_marks.get(want.id.as_str()).copied().unwrap_or(0);
        let got = per_execution.get(want.id.as_str()).copied().unwrap_or(0);
        if got != marks + broadcasts {
            v.push(format!(
                "{}: {got} processed marks on AWS, {marks} in the reference (+{broadcasts} broadcasts)",
                want.id
            ));
        }
    }
    for s in scripts {
        for event in s.phases.iter().flatten() {
            let want = store
                .is_processed(&s.execution_id, &event.id)
                .await
                .map_err(store_err)?
                || broadcast(&s.execution_id, &event.id);
            let got = on_aws.contains(&(s.execution_id.clone(), event.id.to_string()));
            if want != got {
                v.push(format!(
                    "event {} on {}: processed on AWS {got}, in the reference {want}",
                    event.id, s.execution_id
                ));
            }
        }
    }
    Ok(())
}

/// No outbox entry or spawn left undelivered; the armed timers are the reference's (none lost,
/// none fired and left behind).
async fn delivery(
    world: &World,
    reference: &Reference,
    v: &mut Vec<String>,
) -> Result<(), FaultError> {
    let store = &world.store;
    for e in store.pending_outbox().await.map_err(store_err)? {
        v.push(format!(
            "outbox entry {} ({} to {:?}) never delivered",
            e.seq, e.event.kind, e.target_id
        ));
    }
    for e in store.pending_spawns().await.map_err(store_err)? {
        v.push(format!("spawn {} ({}) never acked", e.seq, e.child_id));
    }
    let key =
        |t: &harel_store::DueTimer| (t.execution_id.clone(), t.path.clone(), t.fire_at.to_bits());
    let on_aws: BTreeSet<_> = store
        .due_timers(f64::MAX)
        .await
        .map_err(store_err)?
        .iter()
        .map(key)
        .collect();
    let want: BTreeSet<_> = reference.store().timers().iter().map(key).collect();
    for t in on_aws.difference(&want) {
        v.push(format!(
            "timer {:?} armed on AWS, not in the reference",
            (&t.0, &t.1, f64::from_bits(t.2))
        ));
    }
    for t in want.difference(&on_aws) {
        v.push(format!(
            "timer {:?} lost on AWS",
            (&t.0, &t.1, f64::from_bits(t.2))
        ));
    }
    Ok(())
}

/// Every idempotency record completed: none left in progress by a crash without the
/// redelivery that takes it over.
async fn idempotency(world: &World, v: &mut Vec<String>) -> Result<(), FaultError> {
    for r in scan(world, &world.idempotency_table).await? {
        let status = s(&r, "status");
        if status != "COMPLETED" {
            v.push(format!("idempotency record {} left {status}", s(&r, "id")));
        }
    }
    Ok(())
}

/// Nothing left on the queue, nothing dead-lettered (every storm message is well formed).
async fn queues(world: &World, v: &mut Vec<String>) -> Result<(), FaultError> {
    let (visible, in_flight, delayed) = source::depth(&world.sqs, &world.queue_url).await?;
    if visible + in_flight + delayed > 0 {
        v.push(format!("{visible} visible, {in_flight} in flight, {delayed} delayed messages left on the queue"));
    }
    let dead = source::receive(
        &world.sqs,
        &world.dlq_url,
        std::time::Duration::from_secs(30),
    )
    .await?;
    for m in dead {
        let reason = m
            .message
            .message_attributes
            .get(harel_sqs::REASON_ATTRIBUTE)
            .and_then(|a| a.string_value.clone())
            .unwrap_or_default();
        v.push(format!(
            "a message was dead-lettered: {:?} (group {}): {reason}",
            m.message.body,
            m.group()
        ));
    }
    Ok(())
}

/// Every committed status change has its event, and no event is without one: an execution's
/// status changes (put on the bus, or still pending) form one chain, from its creation
/// (`previous_status` null) through each change (`previous_status` the one before it, the
/// commit sequence rising) to the status it is stored with. A republished copy (a relay that
/// died between put and ack) is the same event, same `event_id`.
async fn events(world: &World, v: &mut Vec<String>) -> Result<(), FaultError> {
    use std::collections::BTreeMap;
    let mut all: BTreeMap<String, harel_store::BusEvent> = BTreeMap::new();
    let put = world.bus.events();
    let pending = world.store.pending_published().await.map_err(store_err)?;
    for mut event in put.into_iter().chain(pending) {
        event.attempts = 0;
        if let Some(seen) = all.get(&event.event_id) {
            if *seen != event {
                v.push(format!(
                    "event {} was put twice with different contents",
                    event.event_id
                ));
            }
            continue;
        }
        all.insert(event.event_id.clone(), event);
    }
    let mut chains: BTreeMap<String, Vec<harel_store::BusEvent>> = BTreeMap::new();
    for event in all.into_values() {
        if event.detail_type == harel_store::events::STATUS_CHANGE {
            chains
                .entry(event.execution_id.clone())
                .or_default()
                .push(event);
        }
    }
    let rows = scan(world, &world.store.tables().executions()).await?;
    for row in &rows {
        let id = s(row, "id");
        let exe = Execution::from_json(s(row, "data")).map_err(store_err)?;
        let mut chain = chains.remove(id).unwrap_or_default();
        chain.sort_by_key(|e| e.sequence);
        let mut previous = serde_json::Value::Null;
        let mut last_seq = 0;
        for e in &chain {
            if e.detail["previous_status"] != previous || e.sequence <= last_seq {
                v.push(format!(
                    "execution {id}: status change {} ({} -> {}, sequence {}) does not follow {previous} at sequence {last_seq}",
                    e.event_id, e.detail["previous_status"], e.detail["status"], e.sequence
                ));
            }
            previous = e.detail["status"].clone();
            last_seq = e.sequence;
        }
        let stored = serde_json::to_value(exe.status).unwrap_or_default();
        if previous != stored {
            v.push(format!(
                "execution {id} is {stored}, its last status change event says {previous}"
            ));
        }
    }
    for (id, chain) in chains {
        v.push(format!(
            "{} status change events for {id}, which does not exist",
            chain.len()
        ));
    }
    Ok(())
}
