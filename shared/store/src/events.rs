//! Events for the bus (EventBridge), committed with the step that causes them: the outbox
//! pattern applied to the outside world. A commit that changes an execution's status writes
//! one `Execution Status Change`, and a step that ran `harel.lib.publish` writes the domain
//! events it asked for, in the same atomic write as the execution. A rolled-back step
//! therefore publishes nothing, and a publisher that crashes after putting an event and before
//! acknowledging its row puts it again with the same `event_id` (EventBridge does not dedupe:
//! consumers do, by that id).
//!
//! The store decides the status change itself, from [`Execution::previous_status`]: every
//! writer (the driver, the control plane, a migration) goes through `commit`, so none can
//! forget to announce one. Which events are written is the deployment's choice
//! ([`EventsConfig`], given to the store): none when the bus is off.

use harel_model::{Execution, Object, Status};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The `detail-type` of a status change.
pub const STATUS_CHANGE: &str = "Execution Status Change";
/// The default `source` of every event.
pub const DEFAULT_SOURCE: &str = "harel";

/// A domain event a step asks for (`harel.lib.publish`): its `detail-type` and `detail`.
#[derive(Clone, Debug, PartialEq)]
pub struct DomainEvent {
    /// The event's `detail-type`, as the step named it (the consumer's rules match on it).
    pub detail_type: String,
    /// The event's `detail`, the JSON object the step gave.
    pub detail: Object,
}

/// One event for the bus as committed: everything is fixed at the commit, so a republished
/// copy is the same event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BusEvent {
    /// Unique per event; also in `detail.event_id`, for consumers to dedupe.
    pub event_id: String,
    /// The `source` ([`EventsConfig::source`] at the commit).
    pub source: String,
    /// The `detail-type`: [`STATUS_CHANGE`], or a domain event's own.
    pub detail_type: String,
    /// The `detail` as it will be put (a domain event's with `execution_id`, `event_id` and
    /// `sequence` added).
    pub detail: Object,
    /// Epoch seconds of the commit.
    pub time: f64,
    /// The execution whose commit wrote it.
    pub execution_id: String,
    /// The execution's version its commit wrote, and the event's place in that commit: the
    /// order of one execution's events.
    #[serde(default)]
    pub sequence: u64,
    /// Its place in its commit: 0 is the status change (when one is written), the domain events
    /// follow from 1.
    #[serde(default)]
    pub index: usize,
    /// Failed attempts to put it so far (the publisher dead-letters it past its limit).
    #[serde(default)]
    pub attempts: u32,
}

/// What a store writes for the bus. Absent (the store's default): nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct EventsConfig {
    /// The events' `source`.
    pub source: String,
    /// Only status changes to these statuses (None: every one).
    pub statuses: Option<Vec<Status>>,
    /// Only status changes of these machines (None: every one).
    pub machines: Option<Vec<String>>,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            source: DEFAULT_SOURCE.to_string(),
            statuses: None,
            machines: None,
        }
    }
}

/// A status as harel writes it (`RUNNING`, `DONE`...).
fn status_name(status: Status) -> Value {
    serde_json::to_value(status).unwrap_or(Value::Null)
}

/// A deterministic id: the same commit laid out again (a retried transaction) writes the
/// same rows, and two commits never share one (the execution's creation time tells an id
/// reused after a purge from the first).
pub fn event_id(exe: &Execution, version: u64, index: usize) -> String {
    let mut digest = Sha256::new();
    for part in [
        exe.id.as_bytes(),
        &exe.created_at.unwrap_or(0.0).to_bits().to_be_bytes(),
        &version.to_be_bytes(),
        &(index as u64).to_be_bytes(),
    ] {
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part);
    }
    let hex: String = digest
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

impl EventsConfig {
    fn announces(&self, exe: &Execution) -> bool {
        self.statuses
            .as_ref()
            .is_none_or(|s| s.contains(&exe.status))
            && self
                .machines
                .as_ref()
                .is_none_or(|m| m.iter().any(|m| m == exe.definition_id.as_str()))
    }

    /// The rows a commit of `exe` (changed, not yet at its new version) writes: its status
    /// change when the status differs from the stored one and passes the filters, then each
    /// domain event it carries, in order.
    pub fn rows(&self, exe: &Execution, domain: &[DomainEvent]) -> Vec<BusEvent> {
        let version = exe.version + 1;
        let time = exe.updated_at.unwrap_or(0.0);
        let mut rows = Vec::new();
        let previous = exe.previous_status();
        if previous != Some(exe.status) && self.announces(exe) {
            let id = event_id(exe, version, 0);
            let detail = serde_json::json!({
                "execution_id": exe.id.as_str(),
                "machine": exe.definition_id.as_str(),
                "version": exe.definition_version.as_deref(),
                "status": status_name(exe.status),
                "previous_status": previous.map(status_name),
                "outcome": exe.outcome.as_deref(),
                "error": exe.error.as_deref(),
                "parent_id": exe.parent_id.as_deref(),
                "sequence": version,
                "time": time,
                "event_id": id,
            });
            rows.push(self.row(exe, id, STATUS_CHANGE, detail, time, 0));
        }
        for (i, event) in domain.iter().enumerate() {
            let id = event_id(exe, version, i + 1);
            let mut detail = event.detail.clone();
            detail.insert("execution_id".into(), exe.id.as_str().into());
            detail.insert("event_id".into(), id.clone().into());
            detail.insert("sequence".into(), version.into());
            rows.push(self.row(
                exe,
                id,
                &event.detail_type,
                Value::Object(detail),
                time,
                i + 1,
            ));
        }
        rows
    }

    fn row(
        &self,
        exe: &Execution,
        event_id: String,
        detail_type: &str,
        detail: Value,
        time: f64,
        index: usize,
    ) -> BusEvent {
        let Value::Object(detail) = detail else {
            unreachable!("details are built as objects")
        };
        BusEvent {
            event_id,
            source: self.source.clone(),
            detail_type: detail_type.to_string(),
            detail,
            time,
            execution_id: exe.id.to_string(),
            sequence: exe.version + 1,
            index,
            attempts: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harel_model::StoredStatus;

    fn exe(status: Status, stored: Option<Status>, version: u64) -> Execution {
        let mut e = Execution::new("Order").with_id("o-1");
        e.status = status;
        e.version = version;
        e.stored_status = StoredStatus(stored);
        e.created_at = Some(1.0);
        e.updated_at = Some(2.0);
        e
    }

    #[test]
    fn a_status_change_is_one_row_and_an_unchanged_status_none() {
        let config = EventsConfig::default();
        let created = config.rows(&exe(Status::Running, None, 0), &[]);
        assert_eq!(created.len(), 1);
        assert_eq!(created[0].detail["previous_status"], Value::Null);
        assert_eq!(created[0].detail["status"], "RUNNING");
        assert_eq!(created[0].detail["event_id"], created[0].event_id.as_str());
        assert!(config
            .rows(&exe(Status::Running, Some(Status::Running), 3), &[])
            .is_empty());
        let done = config.rows(&exe(Status::Done, Some(Status::Running), 3), &[]);
        assert_eq!(done[0].detail["previous_status"], "RUNNING");
        assert_eq!(done[0].detail["sequence"], 4);
        assert_ne!(done[0].event_id, created[0].event_id);
    }

    #[test]
    fn filters_keep_only_the_statuses_and_machines_asked_for() {
        let config = EventsConfig {
            statuses: Some(vec![Status::Failed]),
            ..EventsConfig::default()
        };
        assert!(config
            .rows(&exe(Status::Done, Some(Status::Running), 1), &[])
            .is_empty());
        assert_eq!(
            config
                .rows(&exe(Status::Failed, Some(Status::Running), 1), &[])
                .len(),
            1
        );
        let other = EventsConfig {
            machines: Some(vec!["Invoice".into()]),
            ..EventsConfig::default()
        };
        assert!(other
            .rows(&exe(Status::Failed, Some(Status::Running), 1), &[])
            .is_empty());
    }

    #[test]
    fn domain_events_follow_with_ids_of_their_own() {
        let mut detail = Object::new();
        detail.insert("order_id".into(), "o-1".into());
        let domain = [DomainEvent {
            detail_type: "OrderShipped".into(),
            detail,
        }];
        let rows =
            EventsConfig::default().rows(&exe(Status::Running, Some(Status::Running), 2), &domain);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].detail_type, "OrderShipped");
        assert_eq!(rows[0].detail["order_id"], "o-1");
        assert_eq!(rows[0].detail["event_id"], rows[0].event_id.as_str());
        assert_eq!(
            rows[0].event_id,
            event_id(&exe(Status::Running, None, 2), 3, 1)
        );
    }
}
