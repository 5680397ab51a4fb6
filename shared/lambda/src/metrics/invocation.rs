//! One invocation's measurements, aggregated for the function and for each machine, version,
//! remote action and webhook it touched, and printed as EMF documents.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::catalog::*;
use crate::config::Vars;
use crate::emf::{check_dimension_value, check_namespace, Document, EmfError};
use crate::logging::{DEFAULT_SERVICE, POWERTOOLS_SERVICE_NAME};

/// What one scope (the function, or one machine) measured in one invocation.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Measured {
    pub(super) counts: BTreeMap<Metric, u64>,
    pub(super) timings: BTreeMap<Metric, Vec<f64>>,
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
    pub(super) function: String,
    pub(super) settings: MetricsSettings,
    pub(super) timestamp_ms: u64,
    pub(super) total: Measured,
    pub(super) machines: BTreeMap<String, Measured>,
    /// By (machine, version): only executions pinned to a version have one.
    pub(super) versions: BTreeMap<(String, String), Measured>,
    pub(super) actions: BTreeMap<String, Measured>,
    pub(super) hooks: BTreeMap<String, Measured>,
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
    pub(super) fn version_scope(&mut self, machine: &str, version: &str) -> &mut Measured {
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
