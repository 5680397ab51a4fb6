//! Idempotency keys and payload validation hashes, computed as Powertools Python does.
//!
//! Key = `<prefix>#<hexdigest(json.dumps(selection, sort_keys=True))>`, where the selection is
//! the whole payload or what `event_key_jmespath` picks from it (a selected string is hashed
//! with its JSON quotes, as Python hashes `json.dumps("abc")`).

use harel_model::pyjson::json_dumps;
use serde_json::Value;

use crate::config::IdempotencyConfig;
use crate::hashing::HashFunction;
use crate::jmes::{JmesError, JmesPath};

/// Powertools reads the function name from the Lambda environment for the key prefix.
pub const FUNCTION_NAME_ENV: &str = "AWS_LAMBDA_FUNCTION_NAME";

/// Why a payload has no key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The selection is empty (null, `""`, or an object or array of nulls only) and
    /// `raise_on_no_idempotency_key` is set.
    #[error("No data found to create a hashed idempotency_key")]
    Missing,
    /// The expression failed on the payload.
    #[error(transparent)]
    Jmes(#[from] JmesError),
}

/// Powertools' default prefix is `<function name>.<module>.<qualname>` of the decorated
/// function; the Rust counterpart of module + qualname is the handler name the caller gives.
/// Outside Lambda the function name is `test-func`, as in Powertools.
pub fn default_key_prefix(handler_name: &str) -> String {
    let function = std::env::var(FUNCTION_NAME_ENV).unwrap_or_else(|_| "test-func".to_owned());
    format!("{function}.{handler_name}")
}

/// Turns payloads into keys and validation hashes.
#[derive(Debug, Clone)]
pub struct KeyMaker {
    prefix: String,
    event_key: Option<JmesPath>,
    validation: Option<JmesPath>,
    hash: HashFunction,
    raise_on_no_idempotency_key: bool,
}

impl KeyMaker {
    /// Compiles the configuration's expressions; keys will read `<prefix>#<hash>`. Fails when an
    /// expression does not parse.
    pub fn new(config: &IdempotencyConfig, prefix: impl Into<String>) -> Result<Self, JmesError> {
        let compile = |e: &str| (!e.is_empty()).then(|| JmesPath::compile(e)).transpose();
        Ok(Self {
            prefix: prefix.into(),
            event_key: compile(&config.event_key_jmespath)?,
            validation: compile(&config.payload_validation_jmespath)?,
            hash: config.hash_function,
            raise_on_no_idempotency_key: config.raise_on_no_idempotency_key,
        })
    }

    /// The part of every key before `#`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key expression's text, empty when the whole payload is hashed (it appears in
    /// `AlreadyInProgress` messages).
    pub fn event_key_jmespath(&self) -> &str {
        self.event_key.as_ref().map_or("", JmesPath::as_str)
    }

    /// Whether `payload_validation_jmespath` is set, so records carry a validation hash.
    pub fn validation_enabled(&self) -> bool {
        self.validation.is_some()
    }

    /// The key, or `None` when the payload has no key and that is allowed: the caller then
    /// runs the handler without any persistence, as Powertools does.
    pub fn idempotency_key(&self, payload: &Value) -> Result<Option<String>, KeyError> {
        let selected = match &self.event_key {
            Some(path) => path.search(payload)?,
            None => payload.clone(),
        };
        if is_missing_idempotency_key(&selected) {
            if self.raise_on_no_idempotency_key {
                return Err(KeyError::Missing);
            }
            tracing::warn!(
                jmespath = self.event_key_jmespath(),
                "No idempotency key value found. Skipping persistence layer and validation operations."
            );
            return Ok(None);
        }
        Ok(Some(format!("{}#{}", self.prefix, self.hash_of(&selected))))
    }

    /// The validation hash of a payload, or "" when validation is off.
    pub fn payload_hash(&self, payload: &Value) -> Result<String, KeyError> {
        match &self.validation {
            Some(path) => Ok(self.hash_of(&path.search(payload)?)),
            None => Ok(String::new()),
        }
    }

    fn hash_of(&self, data: &Value) -> String {
        self.hash.hexdigest(json_dumps(data, true).as_bytes())
    }
}

/// Powertools' `is_missing_idempotency_key`: a multi-select keeps its keys even when every
/// selected value is missing, so a collection counts as missing when all its values are null;
/// numbers and booleans (even 0 and false) are present; anything else is missing when falsy.
pub fn is_missing_idempotency_key(data: &Value) -> bool {
    match data {
        Value::Object(map) => map.values().all(Value::is_null),
        Value::Array(items) => items.iter().all(Value::is_null),
        Value::Number(_) | Value::Bool(_) => false,
        Value::String(s) => s.is_empty(),
        Value::Null => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selected_string_is_hashed_with_quotes() {
        let config = IdempotencyConfig::default().event_key_jmespath("id");
        let keys = KeyMaker::new(&config, "p").expect("compiles");
        let key = keys.idempotency_key(&json!({"id": "abc"})).expect("key");
        let expected = format!("p#{}", HashFunction::Md5.hexdigest(b"\"abc\""));
        assert_eq!(key.as_deref(), Some(expected.as_str()));
    }

    #[test]
    fn missing_keys() {
        assert!(is_missing_idempotency_key(&json!({"a": null, "b": null})));
        assert!(is_missing_idempotency_key(&json!([])));
        assert!(is_missing_idempotency_key(&json!("")));
        assert!(!is_missing_idempotency_key(&json!(0)));
        assert!(!is_missing_idempotency_key(&json!(false)));
        let config = IdempotencyConfig::default().event_key_jmespath("nope");
        let keys = KeyMaker::new(&config, "p").expect("compiles");
        assert!(keys.idempotency_key(&json!({})).expect("ok").is_none());
        let strict = KeyMaker::new(&config.raise_on_no_idempotency_key(true), "p").expect("c");
        assert!(matches!(
            strict.idempotency_key(&json!({})),
            Err(KeyError::Missing)
        ));
    }
}
