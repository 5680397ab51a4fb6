//! harel's metrics, published in CloudWatch's embedded metric format (EMF: [`EmfError`]). One
//! invocation aggregates what it measured and prints one document for the function and one
//! per machine (and per remote action, and per pinned machine version) it touched: EMF takes a
//! dimension's value from the document's root, so two machines cannot share a document. Timings
//! are sent as value arrays (CloudWatch computes the percentiles); a timing with more samples
//! than a document holds spills into further documents instead of losing samples.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lambda_events::sqs::SqsMessage;
use serde_json::Value;

use crate::config::Vars;
pub use crate::emf::EmfError;
use crate::emf::{check_dimension_value, check_namespace, Document, Unit};
use crate::logging::{DEFAULT_SERVICE, POWERTOOLS_SERVICE_NAME};
use crate::relay::RelayReport;
use crate::sweeper::SweepReport;
use crate::worker::{BatchOutcome, RecordError, RecordOutcome};

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
const VERSION_METRICS: [Metric; 4] = [
    EVENTS_PROCESSED,
    FAILED_EXECUTIONS,
    RECORDS_FAILED,
    DLQ_MOVES,
];

/// What one scope (the function, or one machine) measured in one invocation.
#[derive(Clone, Debug, Default, PartialEq)]
struct Measured {
    counts: BTreeMap<Metric, u64>,
    timings: BTreeMap<Metric, Vec<f64>>,
}

/// Where the documents go: the namespace and the service dimension's value, read once at
/// cold start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsSettings {
    /// The CloudWatch namespace (`POWERTOOLS_METRICS_NAMESPACE`, default `harel`).
    pub namespace: String,
    /// The `service` dimension's value (`POWERTOOLS_SERVICE_NAME`, default `harel`).
    pub service: String,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            namespace: NAMESPACE.to_string(),
            service: DEFAULT_SERVICE.to_string(),
        }
    }
}

impl MetricsSettings {
    /// Reads the process environment; a namespace or service EMF would refuse is the error, at cold
    /// start.
    pub fn from_env() -> Result<Self, EmfError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// `POWERTOOLS_METRICS_NAMESPACE` (default `harel`) and `POWERTOOLS_SERVICE_NAME`
    /// (default `harel`), checked as EMF checks them (a bad one stops the function at cold
    /// start rather than losing every document).
    pub(crate) fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EmfError> {
        let vars = Vars(lookup);
        let defaults = MetricsSettings::default();
        let settings = MetricsSettings {
            namespace: vars
                .string(POWERTOOLS_METRICS_NAMESPACE)
                .unwrap_or(defaults.namespace),
            service: vars
                .string(POWERTOOLS_SERVICE_NAME)
                .unwrap_or(defaults.service),
        };
        check_namespace(&settings.namespace)?;
        check_dimension_value(&settings.service)?;
        Ok(settings)
    }
}

/// What one invocation measured, aggregated for the function and for each machine.
#[derive(Clone, Debug, PartialEq)]
pub struct InvocationMetrics {
    function: String,
    settings: MetricsSettings,
    timestamp_ms: u64,
    total: Measured,
    machines: BTreeMap<String, Measured>,
    /// By (machine, version): only executions pinned to a version have one.
    versions: BTreeMap<(String, String), Measured>,
    actions: BTreeMap<String, Measured>,
    hooks: BTreeMap<String, Measured>,
}

impl InvocationMetrics {
    /// Empty measurements of one invocation of `function` (`worker`, ...), stamped `timestamp_ms`
    /// (epoch milliseconds), with the default settings.
    pub fn new(function: impl Into<String>, timestamp_ms: u64) -> Self {
        InvocationMetrics {
            function: function.into(),
            settings: MetricsSettings::default(),
            timestamp_ms,
            total: Measured::default(),
            machines: BTreeMap::new(),
            versions: BTreeMap::new(),
            actions: BTreeMap::new(),
            hooks: BTreeMap::new(),
        }
    }

    /// Publish under `settings`' namespace and service.
    pub fn with_settings(mut self, settings: &MetricsSettings) -> Self {
        self.settings = settings.clone();
        self
    }

    /// Count the invocation's cold start (`ColdStart` 1 in the function's document) when it
    /// was one.
    pub fn with_cold_start(mut self, cold_start: bool) -> Self {
        if cold_start {
            self.count(None, COLD_START, 1);
        }
        self
    }

    /// Add `n` to a count, for the function and, when known, for the machine. A count of
    /// zero is still published: an alarm on a missing datapoint is ambiguous.
    pub(crate) fn count(&mut self, machine: Option<&str>, metric: Metric, n: u64) {
        *self.total.counts.entry(metric).or_default() += n;
        if let Some(m) = machine {
            let scope = self.machines.entry(m.to_string()).or_default();
            *scope.counts.entry(metric).or_default() += n;
        }
    }

    /// [`Self::count`], and when the execution is pinned to a version and `metric` is one
    /// of [`VERSION_METRICS`], for the machine's version too.
    pub(crate) fn count_pinned(
        &mut self,
        machine: Option<&str>,
        version: Option<&str>,
        metric: Metric,
        n: u64,
    ) {
        self.count(machine, metric, n);
        if let (Some(m), Some(v)) = (machine, version) {
            if VERSION_METRICS.contains(&metric) {
                let scope = self.version_scope(m, v);
                *scope.counts.entry(metric).or_default() += n;
            }
        }
    }

    /// A version's scope, its counts zero until counted: comparing two versions' rates
    /// needs a datapoint from each, even where nothing failed.
    fn version_scope(&mut self, machine: &str, version: &str) -> &mut Measured {
        let key = (machine.to_string(), version.to_string());
        self.versions.entry(key).or_insert_with(|| Measured {
            counts: VERSION_METRICS.iter().map(|m| (*m, 0)).collect(),
            timings: BTreeMap::new(),
        })
    }

    /// One timing sample (milliseconds), for the function and, when known, the machine.
    pub(crate) fn time(&mut self, machine: Option<&str>, metric: Metric, ms: f64) {
        self.total.timings.entry(metric).or_default().push(ms);
        if let Some(m) = machine {
            let scope = self.machines.entry(m.to_string()).or_default();
            scope.timings.entry(metric).or_default().push(ms);
        }
    }

    /// Add `n` to a count of the remote action `action` (its own documents, dimensions
    /// `Function, Action`; the function's document is not touched).
    pub fn action_count(&mut self, action: &str, metric: Metric, n: u64) {
        let scope = self.actions.entry(action.to_string()).or_default();
        *scope.counts.entry(metric).or_default() += n;
    }

    /// One timing sample (milliseconds) of the remote action `action`.
    pub fn action_time(&mut self, action: &str, metric: Metric, ms: f64) {
        let scope = self.actions.entry(action.to_string()).or_default();
        scope.timings.entry(metric).or_default().push(ms);
    }

    /// Add `n` to a count of the webhook `hook` (its own document, dimensions `Function,
    /// Hook`) and to the function's (all hooks together, for one alarm over them).
    pub fn hook_count(&mut self, hook: &str, metric: Metric, n: u64) {
        *self.total.counts.entry(metric).or_default() += n;
        let scope = self.hooks.entry(hook.to_string()).or_default();
        *scope.counts.entry(metric).or_default() += n;
    }

    /// The count of `metric` for the function (for tests and reports).
    pub fn total(&self, metric: Metric) -> u64 {
        self.total.counts.get(&metric).copied().unwrap_or(0)
    }

    /// The EMF documents: the function's first, then one per machine, then one per remote
    /// action, then one per webhook (each by name). The per-version documents are apart
    /// ([`Self::version_documents`]).
    pub fn documents(&self) -> Result<Vec<Value>, EmfError> {
        let mut out = Vec::new();
        self.scope_documents(&self.total, &[], &mut out)?;
        for (machine, measured) in &self.machines {
            self.scope_documents(measured, &[(MACHINE_DIMENSION, machine)], &mut out)?;
        }
        for (action, measured) in &self.actions {
            self.scope_documents(measured, &[(ACTION_DIMENSION, action)], &mut out)?;
        }
        for (hook, measured) in &self.hooks {
            self.scope_documents(measured, &[(HOOK_DIMENSION, hook)], &mut out)?;
        }
        Ok(out)
    }

    /// One document per machine version a record was about (dimensions `Function, Machine,
    /// Version`), by machine then version: none when every execution was unpinned.
    pub fn version_documents(&self) -> Result<Vec<Value>, EmfError> {
        let mut out = Vec::new();
        for ((machine, version), measured) in &self.versions {
            let scope = [
                (MACHINE_DIMENSION, machine.as_str()),
                (VERSION_DIMENSION, version),
            ];
            self.scope_documents(measured, &scope, &mut out)?;
        }
        Ok(out)
    }

    fn scope_documents(
        &self,
        measured: &Measured,
        scope: &[(&str, &str)],
        out: &mut Vec<Value>,
    ) -> Result<(), EmfError> {
        let mut dimensions = vec![
            (SERVICE_DIMENSION, self.settings.service.as_str()),
            (FUNCTION_DIMENSION, self.function.as_str()),
        ];
        dimensions.extend_from_slice(scope);
        let counts: Vec<_> = measured
            .counts
            .iter()
            .map(|(metric, n)| (metric.name, metric.unit, *n as f64))
            .collect();
        let timings: Vec<_> = measured
            .timings
            .iter()
            .map(|(metric, samples)| (metric.name, metric.unit, samples.as_slice()))
            .collect();
        let documents = Document::spilled(
            &self.settings.namespace,
            self.timestamp_ms,
            &dimensions,
            &counts,
            &timings,
        );
        for document in documents {
            out.push(document.to_json()?);
        }
        Ok(())
    }

    /// Print the documents to stdout, one line each (where the Lambda runtime's log capture
    /// and CloudWatch's EMF extraction read them). Metrics must never fail an invocation: a
    /// document the rules refuse is reported in the logs instead.
    pub fn emit(&self) {
        let all = self.documents().and_then(|mut documents| {
            documents.extend(self.version_documents()?);
            Ok(documents)
        });
        match all {
            Ok(documents) => {
                use std::io::Write;
                let mut stdout = std::io::stdout().lock();
                for document in documents {
                    // a closed stdout leaves nowhere to report to
                    let _ = writeln!(stdout, "{document}");
                }
            }
            Err(e) => tracing::error!(error = %e, "metrics not published"),
        }
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The worker's metrics for one batch: what became of each record (and of its execution),
/// with what the SQS event said of each (`messages`, matched by message id; a record
/// without one counts as a first delivery of unknown age).
pub fn worker_metrics(
    outcome: &BatchOutcome,
    messages: &[SqsMessage],
    timestamp_ms: u64,
) -> InvocationMetrics {
    let mut metrics = InvocationMetrics::new("worker", timestamp_ms);
    for metric in [
        EVENTS_PROCESSED,
        EVENTS_SKIPPED,
        RECORDS_FAILED,
        COMMITS,
        CONFLICTS,
        DUPLICATES,
        REDELIVERIES,
        FAILED_EXECUTIONS,
        DLQ_MOVES,
    ] {
        metrics.count(None, metric, 0);
    }
    for (i, (message_id, result)) in outcome.records.iter().enumerate() {
        let observed = outcome.observed.get(i).cloned().unwrap_or_default();
        let machine = observed.machine.as_deref();
        let version = observed.version.as_deref();
        if let (Some(m), Some(v)) = (machine, version) {
            metrics.version_scope(m, v);
        }
        match result {
            Ok(RecordOutcome::DeadLettered { .. }) => {
                metrics.count_pinned(machine, version, DLQ_MOVES, 1)
            }
            Ok(RecordOutcome::Skipped { .. } | RecordOutcome::AlreadyExists { .. }) => {
                metrics.count(machine, EVENTS_SKIPPED, 1)
            }
            Ok(
                RecordOutcome::Processed { .. }
                | RecordOutcome::Broadcast { .. }
                | RecordOutcome::Created { .. },
            ) => metrics.count_pinned(machine, version, EVENTS_PROCESSED, 1),
            Err(e) => {
                metrics.count_pinned(machine, version, RECORDS_FAILED, 1);
                if matches!(e, RecordError::Conflict(_)) {
                    metrics.count(machine, CONFLICTS, 1);
                }
            }
        }
        if observed.commits > 0 {
            metrics.count(machine, COMMITS, observed.commits as u64);
        }
        if observed.failed_execution {
            metrics.count_pinned(machine, version, FAILED_EXECUTIONS, 1);
        }
        if observed.duplicate {
            metrics.count(machine, DUPLICATES, 1);
        }
        if let Some(lag) = observed.timer_lag_ms {
            metrics.time(machine, TIMER_LAG, lag);
        }
        if let Some(age) = observed.outbox_age_ms {
            metrics.time(machine, OUTBOX_AGE, age);
        }
        let message = messages
            .iter()
            .find(|m| m.message_id.as_deref().unwrap_or_default() == message_id);
        if let Some(message) = message {
            // read as the worker's Record reads it
            let receive_count = attribute(message, "ApproximateReceiveCount");
            if harel_queue::message::receive_count(receive_count) > 1 {
                metrics.count(machine, REDELIVERIES, 1);
            }
            if let Ok(sent) = attribute(message, "SentTimestamp").parse::<u64>() {
                metrics.time(
                    machine,
                    MESSAGE_AGE,
                    timestamp_ms.saturating_sub(sent) as f64,
                );
            }
        }
    }
    metrics
}

fn attribute<'m>(message: &'m SqsMessage, name: &str) -> &'m str {
    message.attributes.get(name).map_or("", String::as_str)
}

/// The relay's metrics for one invocation.
pub fn relay_metrics(report: &RelayReport, timestamp_ms: u64) -> InvocationMetrics {
    let mut metrics = InvocationMetrics::new("relay", timestamp_ms);
    metrics.count(None, OUTBOX_RELAYED, report.delivered.published as u64);
    metrics.count(
        None,
        CHILDREN_RELAYED,
        report.delivered.children_created as u64,
    );
    metrics.count(None, COMMITS, report.delivered.children_created as u64);
    metrics.count(None, OUT_OF_TIME, u64::from(report.out_of_time));
    metrics
}

/// The sweeper's metrics for one invocation.
pub fn sweeper_metrics(report: &SweepReport, timestamp_ms: u64) -> InvocationMetrics {
    let mut metrics = InvocationMetrics::new("sweeper", timestamp_ms);
    metrics.count(None, TIMERS_FIRED, report.fired as u64);
    metrics.count(None, SWEEP_POLLS, report.polls as u64);
    metrics.count(None, OUT_OF_TIME, u64::from(report.out_of_time));
    for lag in &report.timer_lag_ms {
        metrics.time(None, TIMER_LAG, *lag as f64);
    }
    metrics
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::worker::Observation;

    fn directive(doc: &Value) -> &Value {
        &doc["_aws"]["CloudWatchMetrics"][0]
    }

    #[test]
    fn a_document_has_the_metadata_and_its_values_at_the_root() {
        let mut m = InvocationMetrics::new("worker", 1_700_000_000_123);
        m.count(Some("Order"), COMMITS, 2);
        m.count(Some("Order"), CONFLICTS, 1);
        m.time(Some("Order"), TIMER_LAG, 12.5);
        let docs = m.documents().expect("valid");
        assert_eq!(docs.len(), 2, "{docs:?}");
        let function = &docs[0];
        assert_eq!(function["_aws"]["Timestamp"], json!(1_700_000_000_123u64));
        assert_eq!(directive(function)["Namespace"], json!("harel"));
        assert_eq!(
            directive(function)["Dimensions"],
            json!([["service", "Function"]])
        );
        assert_eq!(function["Function"], json!("worker"));
        assert_eq!(function["service"], json!("harel"));
        assert!(function.get("ColdStart").is_none(), "a warm invocation");
        assert_eq!(function["Commits"], json!(2.0));
        assert_eq!(function["TimerLag"], json!(12.5));
        assert!(function.get("Machine").is_none());
        let order = &docs[1];
        assert_eq!(
            directive(order)["Dimensions"],
            json!([["service", "Function", "Machine"]])
        );
        assert_eq!(order["Machine"], json!("Order"));
        assert_eq!(order["Conflicts"], json!(1.0));
        // every metric defined is at the root, with its unit
        for def in directive(order)["Metrics"].as_array().expect("metrics") {
            let name = def["Name"].as_str().expect("name");
            assert!(order.get(name).is_some(), "{name} has no value");
            assert!(["Count", "Milliseconds"].contains(&def["Unit"].as_str().expect("unit")));
        }
    }

    #[test]
    fn the_namespace_and_the_service_dimension_come_from_powertools_variables() {
        let lookup = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            MetricsSettings::from_lookup(lookup(&[])),
            Ok(MetricsSettings::default())
        );
        let settings = MetricsSettings::from_lookup(lookup(&[
            (POWERTOOLS_METRICS_NAMESPACE, "acme/orders"),
            ("POWERTOOLS_SERVICE_NAME", "harel-dev"),
        ]))
        .expect("valid");
        let docs = InvocationMetrics::new("relay", 5)
            .with_settings(&settings)
            .with_cold_start(true)
            .documents()
            .expect("valid");
        assert_eq!(docs.len(), 1);
        assert_eq!(directive(&docs[0])["Namespace"], json!("acme/orders"));
        assert_eq!(docs[0]["service"], json!("harel-dev"));
        assert_eq!(docs[0]["Function"], json!("relay"));
        assert_eq!(docs[0]["ColdStart"], json!(1.0));
        assert_eq!(
            directive(&docs[0])["Metrics"],
            json!([{"Name": "ColdStart", "Unit": "Count"}])
        );
        let long = "n".repeat(256);
        assert!(matches!(
            MetricsSettings::from_lookup(
                |name| (name == POWERTOOLS_METRICS_NAMESPACE).then(|| long.clone())
            ),
            Err(EmfError::InvalidName { .. })
        ));
    }

    #[test]
    fn many_samples_spill_into_further_documents() {
        let mut m = InvocationMetrics::new("sweeper", 1);
        m.count(None, TIMERS_FIRED, 250);
        for i in 0..250 {
            m.time(None, TIMER_LAG, i as f64);
        }
        let docs = m.documents().expect("valid");
        assert_eq!(docs.len(), 3);
        let lens: Vec<usize> = docs
            .iter()
            .map(|d| d["TimerLag"].as_array().map_or(1, Vec::len))
            .collect();
        assert_eq!(lens, vec![100, 100, 50]);
        assert_eq!(docs[0]["TimersFired"], json!(250.0));
        assert!(docs[1].get("TimersFired").is_none(), "counted once");
    }

    #[test]
    fn remote_actions_have_documents_of_their_own() {
        let mut m = InvocationMetrics::new("worker", 7);
        m.count(None, EVENTS_PROCESSED, 1);
        m.action_count("billing.charge", REMOTE_CALLS, 2);
        m.action_count("billing.charge", REMOTE_ERRORS, 1);
        m.action_count("billing.charge", REMOTE_RETRIES, 1);
        m.action_time("billing.charge", REMOTE_LATENCY, 12.5);
        m.action_time("billing.charge", REMOTE_LATENCY, 30.0);
        let docs = m.documents().expect("valid");
        assert_eq!(docs.len(), 2);
        assert!(
            docs[0].get("RemoteCalls").is_none(),
            "not in the function's document"
        );
        let action = &docs[1];
        assert_eq!(action["Action"], json!("billing.charge"));
        assert_eq!(action["Function"], json!("worker"));
        assert_eq!(
            action["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["service", "Function", "Action"]])
        );
        assert_eq!(action["RemoteCalls"], json!(2.0));
        assert_eq!(action["RemoteErrors"], json!(1.0));
        assert_eq!(action["RemoteRetries"], json!(1.0));
        assert_eq!(action["RemoteLatency"], json!([12.5, 30.0]));
    }

    #[test]
    fn webhooks_are_counted_per_hook_and_for_the_function() {
        let mut m = InvocationMetrics::new("api", 7);
        m.hook_count("stripe", WEBHOOKS_IGNORED, 1);
        m.hook_count("github", WEBHOOKS_DELIVERED, 1);
        let docs = m.documents().expect("valid");
        assert_eq!(docs.len(), 3, "{docs:?}");
        assert_eq!(docs[0]["Function"], json!("api"));
        assert_eq!(docs[0]["WebhooksIgnored"], json!(1.0));
        assert_eq!(docs[0]["WebhooksDelivered"], json!(1.0));
        // by name: github first
        let stripe = &docs[2];
        assert_eq!(stripe["Hook"], json!("stripe"));
        assert_eq!(
            directive(stripe)["Dimensions"],
            json!([["service", "Function", "Hook"]])
        );
        assert_eq!(stripe["WebhooksIgnored"], json!(1.0));
        assert!(stripe.get("WebhooksDelivered").is_none());
    }

    #[test]
    fn the_worker_reads_redeliveries_and_ages_from_the_sqs_attributes() {
        let message = |id: &str, attributes: &[(&str, &str)]| {
            let mut message = SqsMessage::default();
            message.message_id = Some(id.into());
            for (k, v) in attributes {
                message.attributes.insert(k.to_string(), v.to_string());
            }
            message
        };
        let messages = [
            message(
                "m1",
                &[
                    ("ApproximateReceiveCount", "3"),
                    ("SentTimestamp", "1767225600000"),
                ],
            ),
            message("m2", &[]),
        ];
        let mut outcome = BatchOutcome::default();
        for id in ["m1", "m2", "m3"] {
            let handled = RecordOutcome::Created {
                execution_id: id.into(),
            };
            outcome.records.push((id.into(), Ok(handled)));
        }
        let m = worker_metrics(&outcome, &messages, 1_767_225_600_250);
        assert_eq!(m.total(REDELIVERIES), 1);
        assert_eq!(m.total.timings[&MESSAGE_AGE], vec![250.0]);
    }

    fn observed(machine: &str, version: Option<&str>) -> Observation {
        Observation {
            machine: Some(machine.into()),
            version: version.map(Into::into),
            ..Observation::default()
        }
    }

    #[test]
    fn each_machine_version_has_a_document_of_the_deploy_counts() {
        let (old, new) = ("0123456789abcdef", "fedcba9876543210");
        let mut outcome = BatchOutcome::default();
        let processed = |id: &str| {
            Ok(RecordOutcome::Processed {
                execution_id: id.into(),
            })
        };
        let records = [
            (processed("e1"), observed("Order", Some(old))),
            (processed("e2"), observed("Order", Some(new))),
            (
                processed("e3"),
                Observation {
                    failed_execution: true,
                    commits: 1,
                    ..observed("Order", Some(new))
                },
            ),
            (
                Err(RecordError::Blocked("e4".into())),
                observed("Order", Some(old)),
            ),
            (processed("e5"), observed("Order", None)),
        ];
        for (i, (result, seen)) in records.into_iter().enumerate() {
            outcome.records.push((format!("m{i}"), result));
            outcome.observed.push(seen);
        }
        let m = worker_metrics(&outcome, &[], 9);
        let docs = m.documents().expect("valid");
        assert_eq!(docs.len(), 2, "the function's and Order's: {docs:#?}");
        assert_eq!(docs[1]["EventsProcessed"], json!(4.0));
        let versions = m.version_documents().expect("valid");
        assert_eq!(versions.len(), 2, "{versions:#?}");
        for (doc, version) in versions.iter().zip([old, new]) {
            assert_eq!(
                directive(doc)["Dimensions"],
                json!([["service", "Function", "Machine", "Version"]])
            );
            assert_eq!(doc["Function"], json!("worker"));
            assert_eq!(doc["Machine"], json!("Order"));
            assert_eq!(doc["Version"], json!(version));
            let names: Vec<&str> = directive(doc)["Metrics"]
                .as_array()
                .expect("metrics")
                .iter()
                .map(|d| d["Name"].as_str().expect("name"))
                .collect();
            assert_eq!(
                names,
                [
                    "DlqMoves",
                    "EventsProcessed",
                    "FailedExecutions",
                    "RecordsFailed"
                ],
                "the deploy counts only, zeros included"
            );
        }
        let counts = |doc: &Value| {
            [
                "EventsProcessed",
                "FailedExecutions",
                "RecordsFailed",
                "DlqMoves",
            ]
            .map(|name| doc[name].as_f64().expect(name))
        };
        assert_eq!(counts(&versions[0]), [1.0, 0.0, 1.0, 0.0], "old");
        assert_eq!(counts(&versions[1]), [2.0, 1.0, 0.0, 0.0], "new");
    }

    #[test]
    fn unpinned_executions_have_no_version_document() {
        let mut outcome = BatchOutcome::default();
        for (i, machine) in ["Order", "Flow"].into_iter().enumerate() {
            let handled = RecordOutcome::Processed {
                execution_id: format!("e{i}"),
            };
            outcome.records.push((format!("m{i}"), Ok(handled)));
            outcome.observed.push(observed(machine, None));
        }
        let m = worker_metrics(&outcome, &[], 9);
        assert_eq!(m.documents().expect("valid").len(), 3);
        assert_eq!(m.version_documents().expect("valid"), Vec::<Value>::new());
    }
}
