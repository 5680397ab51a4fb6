//! What harel publishes: the namespace, the dimensions, and each metric with its unit.

use crate::emf::Unit;

/// The namespace harel's metrics are published under unless `POWERTOOLS_METRICS_NAMESPACE`
/// says otherwise.
pub const NAMESPACE: &str = "harel";
/// Powertools' variable for the metrics' namespace (the template's `MetricsNamespace`).
pub const POWERTOOLS_METRICS_NAMESPACE: &str = "POWERTOOLS_METRICS_NAMESPACE";

/// The dimension every document carries first: the service (`POWERTOOLS_SERVICE_NAME`, the
/// stack's name in the template), spelled as Powertools spells it, so two stacks publishing
/// into one namespace keep their datapoints apart.
pub const SERVICE_DIMENSION: &str = "service";
/// The dimension every document carries: which function measured.
pub const FUNCTION_DIMENSION: &str = "Function";
/// The dimension of the per-machine documents: the execution's `definition_id`.
pub(crate) const MACHINE_DIMENSION: &str = "Machine";
/// The dimension of the per-version documents: the machine version an execution is pinned
/// to (a 16-hex content hash).
pub(crate) const VERSION_DIMENSION: &str = "Version";
/// The dimension of the per-action documents: a remote action's name (`billing.charge`).
pub(crate) const ACTION_DIMENSION: &str = "Action";
/// The dimension of the api function's webhook documents: the hook (the hooks file's entry).
pub(crate) const HOOK_DIMENSION: &str = "Hook";

/// A metric harel publishes: its name and unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Metric {
    /// The metric's name in CloudWatch (`EventsProcessed`, ...).
    pub name: &'static str,
    pub(crate) unit: Unit,
}

const fn count(name: &'static str) -> Metric {
    Metric {
        name,
        unit: Unit::Count,
    }
}

const fn millis(name: &'static str) -> Metric {
    Metric {
        name,
        unit: Unit::Milliseconds,
    }
}

/// Records whose event ran the engine, was broadcast to regions, or created an execution.
pub const EVENTS_PROCESSED: Metric = count("EventsProcessed");
/// Records with nothing to do (duplicate, unknown execution, cancelled, not started).
pub(crate) const EVENTS_SKIPPED: Metric = count("EventsSkipped");
/// Records reported failed (SQS delivers them again).
pub(crate) const RECORDS_FAILED: Metric = count("RecordsFailed");
/// Transactions committed (steps, broadcasts, children created inline).
pub const COMMITS: Metric = count("Commits");
/// Steps refused because the execution changed meanwhile (the record is retried).
pub const CONFLICTS: Metric = count("Conflicts");
/// Steps whose commit found the event's dedupe mark written by another writer since the
/// read (the conditional mark refused a second application; the record is acknowledged).
pub(crate) const DUPLICATES: Metric = count("Duplicates");
/// Records SQS delivered more than once (`ApproximateReceiveCount` > 1).
pub(crate) const REDELIVERIES: Metric = count("Redeliveries");
/// Executions a step left FAILED (an action error with no `on error`).
pub const FAILED_EXECUTIONS: Metric = count("FailedExecutions");
/// Messages moved to the dead-letter queue.
pub(crate) const DLQ_MOVES: Metric = count("DlqMoves");
/// Per record: from SQS's `SentTimestamp` to the worker picking it up.
pub(crate) const MESSAGE_AGE: Metric = millis("MessageAge");
/// Per fired timer: sweeper, publication time less due time; worker, processing time less
/// due time (the `Timeout`'s `fire_at`).
pub(crate) const TIMER_LAG: Metric = millis("TimerLag");
/// Per step that enqueued outbox entries: from its commit to their publication (worker).
pub(crate) const OUTBOX_AGE: Metric = millis("OutboxAge");
/// Outbox entries published / children created by the relay (work a crash left behind, or
/// a concurrent worker's).
pub(crate) const OUTBOX_RELAYED: Metric = count("OutboxRelayed");
pub(crate) const CHILDREN_RELAYED: Metric = count("ChildrenRelayed");
/// Relay or sweeper invocations that stopped with work left because time ran low.
pub const OUT_OF_TIME: Metric = count("OutOfTime");
pub(crate) const TIMERS_FIRED: Metric = count("TimersFired");
/// 1 in the first invocation of a function instance (Powertools' `ColdStart`), absent after.
pub(crate) const COLD_START: Metric = count("ColdStart");
pub(crate) const SWEEP_POLLS: Metric = count("SweepPolls");
/// Per remote action (dimension `Action`): calls made (a call with its retries is one).
pub const REMOTE_CALLS: Metric = count("RemoteCalls");
/// Calls that ended in an action error (a function error, a non-2xx answer, out of time...).
pub const REMOTE_ERRORS: Metric = count("RemoteErrors");
/// Attempts beyond a call's first (timeouts and transient failures retried).
pub const REMOTE_RETRIES: Metric = count("RemoteRetries");
/// Per call: from the request built to the answer applied, retries and backoff included.
pub const REMOTE_LATENCY: Metric = millis("RemoteLatency");

/// Per hook (dimension `Hook`, the api function): deliveries verified and enqueued.
pub const WEBHOOKS_DELIVERED: Metric = count("WebhooksDelivered");
/// Deliveries verified and acknowledged without enqueueing anything: an event type the hooks
/// file does not route, an execution already closed.
pub const WEBHOOKS_IGNORED: Metric = count("WebhooksIgnored");
/// Deliveries refused: a missing, wrong or stale signature, a body the hook cannot map, an
/// unknown execution.
pub const WEBHOOKS_REFUSED: Metric = count("WebhooksRefused");

/// What a per-version document carries: enough to compare a deploy's old and new version
/// (each machine and version is a dimension combination of its own, billed per metric, so
/// they are few).
pub(super) const VERSION_METRICS: [Metric; 4] = [
    EVENTS_PROCESSED,
    FAILED_EXECUTIONS,
    RECORDS_FAILED,
    DLQ_MOVES,
];
