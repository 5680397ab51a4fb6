//! Metrics in CloudWatch's embedded metric format (EMF): JSON documents printed to stdout,
//! which CloudWatch Logs turns into metrics without any API call (so no IAM permission).
//! One invocation aggregates what it measured and prints one document for the function and
//! one per machine it touched: EMF takes a dimension's value from the document's root, so
//! two machines cannot share a document. Timings are sent as value arrays (CloudWatch
//! computes the percentiles); a timing with more than [`MAX_VALUES`] samples spills into
//! further documents instead of losing samples.
//!
//! The rules checked here are the specification's: at most [`MAX_METRICS`] metric
//! definitions per directive, at most [`MAX_DIMENSIONS`] keys per dimension set, names and
//! dimension values 1 to 1024 (dimension names 1 to 255) characters, a namespace of 1 to 255
//! characters, units from CloudWatch's list, numbers only (finite).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lambda_events::sqs::SqsMessage;
use serde_json::{json, Map, Value};

use crate::relay::RelayReport;
use crate::sweeper::SweepReport;
use crate::worker::{BatchOutcome, Handled, RecordError};

/// The namespace harel's metrics are published under unless `POWERTOOLS_METRICS_NAMESPACE`
/// says otherwise.
pub const NAMESPACE: &str = "harel";
/// Powertools' variable for the metrics' namespace (the template's `MetricsNamespace`).
pub const POWERTOOLS_METRICS_NAMESPACE: &str = "POWERTOOLS_METRICS_NAMESPACE";
pub const MAX_METRICS: usize = 100;
pub const MAX_DIMENSIONS: usize = 30;
pub const MAX_VALUES: usize = 100;
const MAX_NAME: usize = 1024;
const MAX_DIMENSION_NAME: usize = 255;
const MAX_NAMESPACE: usize = 255;

/// The dimension every document carries first: the service (`POWERTOOLS_SERVICE_NAME`, the
/// stack's name in the template), spelled as Powertools spells it, so two stacks publishing
/// into one namespace keep their datapoints apart.
pub const SERVICE_DIMENSION: &str = "service";
/// The dimension every document carries: which function measured.
pub const FUNCTION_DIMENSION: &str = "Function";
/// The dimension of the per-machine documents: the execution's `definition_id`.
pub const MACHINE_DIMENSION: &str = "Machine";
/// The dimension of the per-action documents: a remote action's name (`billing.charge`).
pub const ACTION_DIMENSION: &str = "Action";

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum MetricsError {
    #[error("{0} metric definitions in one directive (EMF allows {MAX_METRICS})")]
    TooManyMetrics(usize),
    #[error("{0} dimensions in one dimension set (EMF allows {MAX_DIMENSIONS})")]
    TooManyDimensions(usize),
    #[error("invalid {what} {name:?}: {reason}")]
    InvalidName {
        what: &'static str,
        name: String,
        reason: &'static str,
    },
    #[error("metric {0}: {1} values in one document (EMF allows {MAX_VALUES})")]
    TooManyValues(String, usize),
    #[error("metric {0}: a value that is not a finite number")]
    NotFinite(String),
    #[error("metric {0} is defined twice in one document")]
    Duplicate(String),
    #[error("dimension {0} has no value in the document")]
    MissingDimension(String),
}

/// CloudWatch's units (the ones harel's metrics use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unit {
    Count,
    Milliseconds,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
        }
    }
}

/// A metric harel publishes: its name and unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Metric {
    pub name: &'static str,
    pub unit: Unit,
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
pub const EVENTS_SKIPPED: Metric = count("EventsSkipped");
/// Records reported failed (SQS delivers them again).
pub const RECORDS_FAILED: Metric = count("RecordsFailed");
/// Transactions committed (steps, broadcasts, children created inline).
pub const COMMITS: Metric = count("Commits");
/// Steps refused because the execution changed meanwhile (the record is retried).
pub const CONFLICTS: Metric = count("Conflicts");
/// Steps whose commit found the event's dedupe mark written by another writer since the
/// read (the conditional mark refused a second application; the record is acknowledged).
pub const DUPLICATES: Metric = count("Duplicates");
/// Records SQS delivered more than once (`ApproximateReceiveCount` > 1).
pub const REDELIVERIES: Metric = count("Redeliveries");
/// Executions a step left FAILED (an action error with no `on error`).
pub const FAILED_EXECUTIONS: Metric = count("FailedExecutions");
/// Messages moved to the dead-letter queue.
pub const DLQ_MOVES: Metric = count("DlqMoves");
/// Per record: from SQS's `SentTimestamp` to the worker picking it up.
pub const MESSAGE_AGE: Metric = millis("MessageAge");
/// Per fired timer: sweeper, publication time less due time; worker, processing time less
/// due time (the `Timeout`'s `fire_at`).
pub const TIMER_LAG: Metric = millis("TimerLag");
/// Per step that enqueued outbox entries: from its commit to their publication (worker).
pub const OUTBOX_AGE: Metric = millis("OutboxAge");
/// Outbox entries published / children created by the relay (work a crash left behind, or
/// a concurrent worker's).
pub const OUTBOX_RELAYED: Metric = count("OutboxRelayed");
pub const CHILDREN_RELAYED: Metric = count("ChildrenRelayed");
/// Relay or sweeper invocations that stopped with work left because time ran low.
pub const OUT_OF_TIME: Metric = count("OutOfTime");
pub const TIMERS_FIRED: Metric = count("TimersFired");
/// 1 in the first invocation of a function instance (Powertools' `ColdStart`), absent after.
pub const COLD_START: Metric = count("ColdStart");
pub const SWEEP_POLLS: Metric = count("SweepPolls");
/// Per remote action (dimension `Action`): calls made (a call with its retries is one).
pub const REMOTE_CALLS: Metric = count("RemoteCalls");
/// Calls that ended in an action error (a function error, a non-2xx answer, out of time...).
pub const REMOTE_ERRORS: Metric = count("RemoteErrors");
/// Attempts beyond a call's first (timeouts and transient failures retried).
pub const REMOTE_RETRIES: Metric = count("RemoteRetries");
/// Per call: from the request built to the answer applied, retries and backoff included.
pub const REMOTE_LATENCY: Metric = millis("RemoteLatency");

/// One EMF document: a namespace, its dimension sets, the dimensions' values and the
/// metrics' values, checked against the specification when rendered.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub namespace: String,
    pub timestamp_ms: u64,
    pub dimension_sets: Vec<Vec<String>>,
    pub dimensions: BTreeMap<String, String>,
    pub metrics: Vec<(String, Unit, Vec<f64>)>,
}

impl Document {
    /// The EMF JSON: `_aws` metadata, then the dimension values and the metric values at
    /// the root (a single value as a number, several as an array).
    pub fn to_json(&self) -> Result<Value, MetricsError> {
        check_name("namespace", &self.namespace, MAX_NAMESPACE)?;
        if self.metrics.len() > MAX_METRICS {
            return Err(MetricsError::TooManyMetrics(self.metrics.len()));
        }
        for set in &self.dimension_sets {
            if set.len() > MAX_DIMENSIONS {
                return Err(MetricsError::TooManyDimensions(set.len()));
            }
            for key in set {
                if !self.dimensions.contains_key(key) {
                    return Err(MetricsError::MissingDimension(key.clone()));
                }
            }
        }
        let mut root = Map::new();
        let mut definitions = Vec::with_capacity(self.metrics.len());
        for (name, unit, values) in &self.metrics {
            check_name("metric name", name, MAX_NAME)?;
            if values.len() > MAX_VALUES {
                return Err(MetricsError::TooManyValues(name.clone(), values.len()));
            }
            if values.iter().any(|v| !v.is_finite()) {
                return Err(MetricsError::NotFinite(name.clone()));
            }
            if root.contains_key(name) || self.dimensions.contains_key(name) {
                return Err(MetricsError::Duplicate(name.clone()));
            }
            let value = match values.as_slice() {
                [one] => json!(one),
                many => json!(many),
            };
            root.insert(name.clone(), value);
            definitions.push(json!({"Name": name, "Unit": unit.as_str()}));
        }
        let mut document = Map::new();
        document.insert(
            "_aws".into(),
            json!({
                "Timestamp": self.timestamp_ms,
                "CloudWatchMetrics": [{
                    "Namespace": self.namespace,
                    "Dimensions": self.dimension_sets,
                    "Metrics": definitions,
                }],
            }),
        );
        for (key, value) in &self.dimensions {
            check_name("dimension name", key, MAX_DIMENSION_NAME)?;
            if !key.is_ascii() || key.starts_with(':') {
                return Err(MetricsError::InvalidName {
                    what: "dimension name",
                    name: key.clone(),
                    reason: "must be ASCII and not start with ':'",
                });
            }
            check_name("dimension value", value, MAX_NAME)?;
            document.insert(key.clone(), json!(value));
        }
        document.extend(root);
        Ok(Value::Object(document))
    }
}

fn check_name(what: &'static str, name: &str, max: usize) -> Result<(), MetricsError> {
    let reason = if name.trim().is_empty() {
        "empty or only whitespace"
    } else if name.chars().count() > max {
        "too long"
    } else {
        return Ok(());
    };
    Err(MetricsError::InvalidName {
        what,
        name: name.chars().take(64).collect(),
        reason,
    })
}

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
    pub namespace: String,
    pub service: String,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            namespace: NAMESPACE.to_string(),
            service: crate::logging::DEFAULT_SERVICE.to_string(),
        }
    }
}

impl MetricsSettings {
    pub fn from_env() -> Result<Self, MetricsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// `POWERTOOLS_METRICS_NAMESPACE` (default `harel`) and `POWERTOOLS_SERVICE_NAME`
    /// (default `harel`), checked as EMF checks them (a bad one stops the function at cold
    /// start rather than losing every document).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, MetricsError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let defaults = MetricsSettings::default();
        let settings = MetricsSettings {
            namespace: get(POWERTOOLS_METRICS_NAMESPACE).unwrap_or(defaults.namespace),
            service: get(crate::logging::POWERTOOLS_SERVICE_NAME).unwrap_or(defaults.service),
        };
        check_name("namespace", &settings.namespace, MAX_NAMESPACE)?;
        check_name("dimension value", &settings.service, MAX_NAME)?;
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
    actions: BTreeMap<String, Measured>,
}

impl InvocationMetrics {
    pub fn new(function: impl Into<String>, timestamp_ms: u64) -> Self {
        InvocationMetrics {
            function: function.into(),
            settings: MetricsSettings::default(),
            timestamp_ms,
            total: Measured::default(),
            machines: BTreeMap::new(),
            actions: BTreeMap::new(),
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
    pub fn count(&mut self, machine: Option<&str>, metric: Metric, n: u64) {
        *self.total.counts.entry(metric).or_default() += n;
        if let Some(m) = machine {
            let scope = self.machines.entry(m.to_string()).or_default();
            *scope.counts.entry(metric).or_default() += n;
        }
    }

    /// One timing sample (milliseconds), for the function and, when known, the machine.
    pub fn time(&mut self, machine: Option<&str>, metric: Metric, ms: f64) {
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

    /// The count of `metric` for the function (for tests and reports).
    pub fn total(&self, metric: Metric) -> u64 {
        self.total.counts.get(&metric).copied().unwrap_or(0)
    }

    /// The EMF documents: the function's first, then one per machine (by name).
    pub fn documents(&self) -> Result<Vec<Value>, MetricsError> {
        let mut out = Vec::new();
        self.scope_documents(&self.total, None, &mut out)?;
        for (machine, measured) in &self.machines {
            self.scope_documents(measured, Some((MACHINE_DIMENSION, machine)), &mut out)?;
        }
        for (action, measured) in &self.actions {
            self.scope_documents(measured, Some((ACTION_DIMENSION, action)), &mut out)?;
        }
        Ok(out)
    }

    fn scope_documents(
        &self,
        measured: &Measured,
        scope: Option<(&str, &str)>,
        out: &mut Vec<Value>,
    ) -> Result<(), MetricsError> {
        let mut dimensions = BTreeMap::from([
            (SERVICE_DIMENSION.to_string(), self.settings.service.clone()),
            (FUNCTION_DIMENSION.to_string(), self.function.clone()),
        ]);
        let mut set = vec![
            SERVICE_DIMENSION.to_string(),
            FUNCTION_DIMENSION.to_string(),
        ];
        if let Some((dimension, value)) = scope {
            dimensions.insert(dimension.to_string(), value.to_string());
            set.push(dimension.to_string());
        }
        // the counts go in the first document; each timing's samples in slices of
        // MAX_VALUES, one slice per document
        let slices = measured
            .timings
            .values()
            .map(|v| v.len().div_ceil(MAX_VALUES))
            .max()
            .unwrap_or(0)
            .max(1);
        for slice in 0..slices {
            let mut metrics: Vec<(String, Unit, Vec<f64>)> = Vec::new();
            if slice == 0 {
                for (metric, n) in &measured.counts {
                    metrics.push((metric.name.to_string(), metric.unit, vec![*n as f64]));
                }
            }
            for (metric, samples) in &measured.timings {
                let part: Vec<f64> = samples
                    .iter()
                    .skip(slice * MAX_VALUES)
                    .take(MAX_VALUES)
                    .copied()
                    .collect();
                if !part.is_empty() {
                    metrics.push((metric.name.to_string(), metric.unit, part));
                }
            }
            if metrics.is_empty() {
                continue;
            }
            let document = Document {
                namespace: self.settings.namespace.clone(),
                timestamp_ms: self.timestamp_ms,
                dimension_sets: vec![set.clone()],
                dimensions: dimensions.clone(),
                metrics,
            };
            out.push(document.to_json()?);
        }
        Ok(())
    }

    /// Print the documents to stdout, one line each (where the Lambda runtime's log capture
    /// and CloudWatch's EMF extraction read them). Metrics must never fail an invocation: a
    /// document the rules refuse is reported in the logs instead.
    pub fn emit(&self) {
        match self.documents() {
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

/// What the SQS event says of a record beside its body: how often it was received and when
/// it was sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Receipt {
    pub message_id: String,
    pub receive_count: u32,
    pub sent_timestamp_ms: Option<u64>,
}

impl Receipt {
    pub fn from_sqs(message: &SqsMessage) -> Self {
        let attribute = |name: &str| message.attributes.get(name).and_then(|v| v.parse().ok());
        Receipt {
            message_id: message.message_id.clone().unwrap_or_default(),
            receive_count: attribute("ApproximateReceiveCount").map_or(1, |n: u64| n as u32),
            sent_timestamp_ms: attribute("SentTimestamp"),
        }
    }
}

/// The worker's metrics for one batch: what became of each record (and of its execution),
/// with what SQS said of each (`receipts`, by message id; a record without one counts as a
/// first delivery of unknown age).
pub fn worker_metrics(
    outcome: &BatchOutcome,
    receipts: &[Receipt],
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
        match result {
            Ok(Handled::DeadLettered { .. }) => metrics.count(machine, DLQ_MOVES, 1),
            Ok(Handled::Skipped { .. } | Handled::AlreadyExists { .. }) => {
                metrics.count(machine, EVENTS_SKIPPED, 1)
            }
            Ok(Handled::Processed { .. } | Handled::Broadcast { .. } | Handled::Created { .. }) => {
                metrics.count(machine, EVENTS_PROCESSED, 1)
            }
            Err(e) => {
                metrics.count(machine, RECORDS_FAILED, 1);
                if matches!(e, RecordError::Conflict(_)) {
                    metrics.count(machine, CONFLICTS, 1);
                }
            }
        }
        if observed.commits > 0 {
            metrics.count(machine, COMMITS, observed.commits as u64);
        }
        if observed.failed_execution {
            metrics.count(machine, FAILED_EXECUTIONS, 1);
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
        if let Some(receipt) = receipts.iter().find(|r| &r.message_id == message_id) {
            if receipt.receive_count > 1 {
                metrics.count(machine, REDELIVERIES, 1);
            }
            if let Some(sent) = receipt.sent_timestamp_ms {
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
    use super::*;

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
            Err(MetricsError::InvalidName { .. })
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

    fn doc(metrics: Vec<(String, Unit, Vec<f64>)>) -> Document {
        Document {
            namespace: NAMESPACE.into(),
            timestamp_ms: 1,
            dimension_sets: vec![vec!["Function".into()]],
            dimensions: BTreeMap::from([("Function".into(), "worker".into())]),
            metrics,
        }
    }

    #[test]
    fn the_specifications_limits_are_enforced() {
        let hundred: Vec<_> = (0..100)
            .map(|i| (format!("M{i}"), Unit::Count, vec![1.0]))
            .collect();
        assert!(doc(hundred.clone()).to_json().is_ok());
        let mut too_many = hundred;
        too_many.push(("M100".into(), Unit::Count, vec![1.0]));
        assert_eq!(
            doc(too_many).to_json(),
            Err(MetricsError::TooManyMetrics(101))
        );

        let mut wide = doc(vec![("A".into(), Unit::Count, vec![1.0])]);
        let keys: Vec<String> = (0..31).map(|i| format!("D{i}")).collect();
        for k in &keys {
            wide.dimensions.insert(k.clone(), "v".into());
        }
        wide.dimension_sets = vec![keys[..30].to_vec()];
        assert!(wide.to_json().is_ok());
        wide.dimension_sets = vec![keys.clone()];
        assert_eq!(wide.to_json(), Err(MetricsError::TooManyDimensions(31)));

        let values = doc(vec![("A".into(), Unit::Count, vec![1.0; 101])]);
        assert!(matches!(
            values.to_json(),
            Err(MetricsError::TooManyValues(..))
        ));
        let nan = doc(vec![("A".into(), Unit::Count, vec![f64::NAN])]);
        assert!(matches!(nan.to_json(), Err(MetricsError::NotFinite(_))));
        let blank = doc(vec![(" ".into(), Unit::Count, vec![1.0])]);
        assert!(matches!(
            blank.to_json(),
            Err(MetricsError::InvalidName { .. })
        ));
        let long = doc(vec![("x".repeat(1025), Unit::Count, vec![1.0])]);
        assert!(matches!(
            long.to_json(),
            Err(MetricsError::InvalidName { .. })
        ));
        let twice = doc(vec![
            ("A".into(), Unit::Count, vec![1.0]),
            ("A".into(), Unit::Count, vec![2.0]),
        ]);
        assert_eq!(twice.to_json(), Err(MetricsError::Duplicate("A".into())));
        let mut missing = doc(vec![("A".into(), Unit::Count, vec![1.0])]);
        missing.dimension_sets = vec![vec!["Machine".into()]];
        assert_eq!(
            missing.to_json(),
            Err(MetricsError::MissingDimension("Machine".into()))
        );
    }

    #[test]
    fn a_receipt_reads_the_sqs_attributes() {
        let mut message = SqsMessage::default();
        message.message_id = Some("m1".into());
        message
            .attributes
            .insert("ApproximateReceiveCount".into(), "3".into());
        message
            .attributes
            .insert("SentTimestamp".into(), "1767225600000".into());
        assert_eq!(
            Receipt::from_sqs(&message),
            Receipt {
                message_id: "m1".into(),
                receive_count: 3,
                sent_timestamp_ms: Some(1_767_225_600_000),
            }
        );
        assert_eq!(Receipt::from_sqs(&SqsMessage::default()).receive_count, 1);
    }
}
