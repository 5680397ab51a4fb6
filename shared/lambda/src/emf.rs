//! CloudWatch's embedded metric format (EMF): JSON documents printed to stdout, which
//! CloudWatch Logs turns into metrics without any API call (so no IAM permission).
//!
//! A document is checked against the specification when it is rendered: at most
//! [`MAX_METRICS`] metric definitions per directive, at most [`MAX_DIMENSIONS`] keys per
//! dimension set and [`MAX_VALUES`] values per metric, names and dimension values 1 to 1024
//! (dimension names 1 to 255) characters, a namespace of 1 to 255 characters, units from
//! CloudWatch's list, numbers only (finite). CloudWatch drops a document that breaks a rule
//! without saying so; refusing it here lets the caller report it.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

pub(crate) const MAX_METRICS: usize = 100;
pub(crate) const MAX_DIMENSIONS: usize = 30;
pub(crate) const MAX_VALUES: usize = 100;
const MAX_NAME: usize = 1024;
const MAX_DIMENSION_NAME: usize = 255;
const MAX_NAMESPACE: usize = 255;

/// A rule of the embedded metric format a document or setting breaks: CloudWatch would drop the
/// document silently.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum EmfError {
    /// More metric definitions in one directive than EMF allows (the count).
    #[error("{0} metric definitions in one directive (EMF allows {MAX_METRICS})")]
    TooManyMetrics(usize),
    /// More keys in one dimension set than EMF allows (the count).
    #[error("{0} dimensions in one dimension set (EMF allows {MAX_DIMENSIONS})")]
    TooManyDimensions(usize),
    /// A name, namespace or dimension value that is empty, too long or otherwise refused.
    #[error("invalid {what} {name:?}: {reason}")]
    InvalidName {
        /// What the text names: `"metric name"`, `"dimension name"`, `"dimension value"` or
        /// `"namespace"`.
        what: &'static str,
        /// The refused text.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A metric (its name) with more values in one document than EMF allows (the count).
    #[error("metric {0}: {1} values in one document (EMF allows {MAX_VALUES})")]
    TooManyValues(String, usize),
    /// A metric (its name) with a NaN or infinite value.
    #[error("metric {0}: a value that is not a finite number")]
    NotFinite(String),
    /// A metric (its name) defined twice in one document.
    #[error("metric {0} is defined twice in one document")]
    Duplicate(String),
    /// A dimension (its name) of a dimension set without a value in the document.
    #[error("dimension {0} has no value in the document")]
    MissingDimension(String),
}

/// CloudWatch's units (the ones in use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Unit {
    Count,
    Milliseconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
        }
    }
}

/// One metric of a document: its values print as a number when there is one, else as an
/// array.
pub(crate) type Values = (String, Unit, Vec<f64>);

/// One EMF document: a namespace, its dimension sets, the dimensions' values and the
/// metrics' values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Document {
    pub(crate) namespace: String,
    pub(crate) timestamp_ms: u64,
    pub(crate) dimension_sets: Vec<Vec<String>>,
    pub(crate) dimensions: BTreeMap<String, String>,
    pub(crate) metrics: Vec<Values>,
}

impl Document {
    /// The documents of one dimension set (`dimensions`, in order, with their values): the
    /// `single` values in the first, and each metric's `samples` in slices of
    /// [`MAX_VALUES`], one slice per document, so that no sample is lost to the limit. No
    /// document when there is nothing to publish.
    pub(crate) fn spilled(
        namespace: &str,
        timestamp_ms: u64,
        dimensions: &[(&str, &str)],
        single: &[(&str, Unit, f64)],
        samples: &[(&str, Unit, &[f64])],
    ) -> Vec<Document> {
        let slices = samples
            .iter()
            .map(|(_, _, v)| v.len().div_ceil(MAX_VALUES))
            .max()
            .unwrap_or(0)
            .max(1);
        let mut out = Vec::new();
        for slice in 0..slices {
            let mut metrics: Vec<Values> = Vec::new();
            if slice == 0 {
                for (name, unit, value) in single {
                    metrics.push((name.to_string(), *unit, vec![*value]));
                }
            }
            for (name, unit, values) in samples {
                if let Some(part) = values.chunks(MAX_VALUES).nth(slice) {
                    metrics.push((name.to_string(), *unit, part.to_vec()));
                }
            }
            if metrics.is_empty() {
                continue;
            }
            out.push(Document {
                namespace: namespace.to_string(),
                timestamp_ms,
                dimension_sets: vec![dimensions.iter().map(|(k, _)| k.to_string()).collect()],
                dimensions: dimensions
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                metrics,
            });
        }
        out
    }

    /// The EMF JSON: `_aws` metadata, then the dimension values and the metric values at
    /// the root.
    pub(crate) fn to_json(&self) -> Result<Value, EmfError> {
        check_namespace(&self.namespace)?;
        if self.metrics.len() > MAX_METRICS {
            return Err(EmfError::TooManyMetrics(self.metrics.len()));
        }
        for set in &self.dimension_sets {
            if set.len() > MAX_DIMENSIONS {
                return Err(EmfError::TooManyDimensions(set.len()));
            }
            for key in set {
                if !self.dimensions.contains_key(key) {
                    return Err(EmfError::MissingDimension(key.clone()));
                }
            }
        }
        let mut root = Map::new();
        let mut definitions = Vec::with_capacity(self.metrics.len());
        for (name, unit, values) in &self.metrics {
            check_name("metric name", name, MAX_NAME)?;
            if values.len() > MAX_VALUES {
                return Err(EmfError::TooManyValues(name.clone(), values.len()));
            }
            if values.iter().any(|v| !v.is_finite()) {
                return Err(EmfError::NotFinite(name.clone()));
            }
            if root.contains_key(name) || self.dimensions.contains_key(name) {
                return Err(EmfError::Duplicate(name.clone()));
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
                return Err(EmfError::InvalidName {
                    what: "dimension name",
                    name: key.clone(),
                    reason: "must be ASCII and not start with ':'",
                });
            }
            check_dimension_value(value)?;
            document.insert(key.clone(), json!(value));
        }
        document.extend(root);
        Ok(Value::Object(document))
    }
}

pub(crate) fn check_namespace(namespace: &str) -> Result<(), EmfError> {
    check_name("namespace", namespace, MAX_NAMESPACE)
}

pub(crate) fn check_dimension_value(value: &str) -> Result<(), EmfError> {
    check_name("dimension value", value, MAX_NAME)
}

fn check_name(what: &'static str, name: &str, max: usize) -> Result<(), EmfError> {
    let reason = if name.trim().is_empty() {
        "empty or only whitespace"
    } else if name.chars().count() > max {
        "too long"
    } else {
        return Ok(());
    };
    Err(EmfError::InvalidName {
        what,
        // the error is logged: a name past the limit would flood the line
        name: name.chars().take(64).collect(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(metrics: Vec<Values>) -> Document {
        Document {
            namespace: "ns".into(),
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
        assert_eq!(doc(too_many).to_json(), Err(EmfError::TooManyMetrics(101)));

        let mut wide = doc(vec![("A".into(), Unit::Count, vec![1.0])]);
        let keys: Vec<String> = (0..31).map(|i| format!("D{i}")).collect();
        for k in &keys {
            wide.dimensions.insert(k.clone(), "v".into());
        }
        wide.dimension_sets = vec![keys[..30].to_vec()];
        assert!(wide.to_json().is_ok());
        wide.dimension_sets = vec![keys.clone()];
        assert_eq!(wide.to_json(), Err(EmfError::TooManyDimensions(31)));

        let values = doc(vec![("A".into(), Unit::Count, vec![1.0; 101])]);
        assert!(matches!(values.to_json(), Err(EmfError::TooManyValues(..))));
        let nan = doc(vec![("A".into(), Unit::Count, vec![f64::NAN])]);
        assert!(matches!(nan.to_json(), Err(EmfError::NotFinite(_))));
        let blank = doc(vec![(" ".into(), Unit::Count, vec![1.0])]);
        assert!(matches!(blank.to_json(), Err(EmfError::InvalidName { .. })));
        let long = doc(vec![("x".repeat(1025), Unit::Count, vec![1.0])]);
        assert!(matches!(long.to_json(), Err(EmfError::InvalidName { .. })));
        let twice = doc(vec![
            ("A".into(), Unit::Count, vec![1.0]),
            ("A".into(), Unit::Count, vec![2.0]),
        ]);
        assert_eq!(twice.to_json(), Err(EmfError::Duplicate("A".into())));
        let mut missing = doc(vec![("A".into(), Unit::Count, vec![1.0])]);
        missing.dimension_sets = vec![vec!["Machine".into()]];
        assert_eq!(
            missing.to_json(),
            Err(EmfError::MissingDimension("Machine".into()))
        );
    }

    #[test]
    fn samples_past_the_limit_spill_into_further_documents() {
        let samples: Vec<f64> = (0..250).map(f64::from).collect();
        let few = [1.0, 2.0];
        let docs = Document::spilled(
            "ns",
            7,
            &[("Function", "sweeper")],
            &[("Fired", Unit::Count, 3.0)],
            &[
                ("Lag", Unit::Milliseconds, &samples),
                ("Age", Unit::Milliseconds, &few),
            ],
        );
        let shapes: Vec<Vec<(&str, usize)>> = docs
            .iter()
            .map(|d| {
                d.metrics
                    .iter()
                    .map(|(n, _, v)| (n.as_str(), v.len()))
                    .collect()
            })
            .collect();
        assert_eq!(
            shapes,
            vec![
                vec![("Fired", 1), ("Lag", 100), ("Age", 2)],
                vec![("Lag", 100)],
                vec![("Lag", 50)],
            ]
        );
        assert!(docs.iter().all(|d| d.to_json().is_ok()));
        assert!(Document::spilled("ns", 7, &[("Function", "relay")], &[], &[]).is_empty());
    }
}
