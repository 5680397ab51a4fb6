//! JMESPath with Powertools' extra functions.
//!
//! Powertools registers `powertools_json`, `powertools_base64` and `powertools_base64_gzip`
//! on its JMESPath runtime, so keys such as `powertools_json(body).order_id` reach into the
//! JSON text of an SQS or API Gateway body. The same functions are registered here on the
//! `jmespath` crate's runtime, beside the standard ones.

use std::io::Read;
use std::sync::LazyLock;

use base64::Engine;
use jmespath::functions::{ArgumentType, CustomFunction, Signature};
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, Runtime, Variable};
use serde_json::Value;

/// A JMESPath failure: the expression does not parse, or it fails on a payload.
#[derive(Debug, thiserror::Error)]
pub enum JmesError {
    /// The expression does not parse.
    #[error("invalid JMESPath expression {expression:?}: {source}")]
    Compile {
        /// The expression's text.
        expression: String,
        /// The parser's error.
        source: Box<JmespathError>,
    },
    /// The expression fails on a payload (a Powertools function given text it cannot decode, say).
    #[error("JMESPath expression {expression:?} failed on the payload: {reason}")]
    Search {
        /// The expression's text.
        expression: String,
        /// The runtime's message.
        reason: String,
    },
}

static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    let mut runtime = Runtime::new();
    runtime.register_builtin_functions();
    runtime.register_function("powertools_json", string_function(powertools_json));
    runtime.register_function("powertools_base64", string_function(powertools_base64));
    runtime.register_function(
        "powertools_base64_gzip",
        string_function(powertools_base64_gzip),
    );
    runtime
});

/// A compiled expression on the Powertools runtime.
#[derive(Clone)]
pub struct JmesPath {
    source: String,
    expression: std::sync::Arc<jmespath::Expression<'static>>,
}

impl std::fmt::Debug for JmesPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("JmesPath").field(&self.source).finish()
    }
}

impl JmesPath {
    /// Parses `expression` for the runtime with Powertools' functions; `JmesError::Compile` when it
    /// does not parse.
    pub fn compile(expression: &str) -> Result<Self, JmesError> {
        let compiled = RUNTIME
            .compile(expression)
            .map_err(|source| JmesError::Compile {
                expression: expression.to_owned(),
                source: Box::new(source),
            })?;
        Ok(Self {
            source: expression.to_owned(),
            expression: std::sync::Arc::new(compiled),
        })
    }

    /// The expression's text, as given to [`compile`](Self::compile).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Searches `data` and returns the result as JSON.
    pub fn search(&self, data: &Value) -> Result<Value, JmesError> {
        let search_error = |reason: String| JmesError::Search {
            expression: self.source.clone(),
            reason,
        };
        let input = Variable::from_serializable(data).map_err(|e| search_error(e.to_string()))?;
        let found = self
            .expression
            .search(input)
            .map_err(|e| search_error(e.to_string()))?;
        serde_json::to_value(&*found).map_err(|e| search_error(e.to_string()))
    }
}

type StringFn = fn(&str) -> Result<Variable, String>;

/// Wraps a string -> value function in Powertools' signature (`{"types": ["string"]}`).
fn string_function(f: StringFn) -> Box<CustomFunction> {
    Box::new(CustomFunction::new(
        Signature::new(vec![ArgumentType::String], None),
        Box::new(move |args: &[Rcvar], ctx: &mut Context<'_>| {
            let text = args
                .first()
                .and_then(|a| a.as_string())
                .expect("the signature admits exactly one string");
            f(text)
                .map(Rcvar::new)
                .map_err(|reason| JmespathError::from_ctx(ctx, ErrorReason::Parse(reason)))
        }),
    ))
}

/// `json.loads(value)`
fn powertools_json(text: &str) -> Result<Variable, String> {
    Variable::from_json(text).map_err(|e| format!("powertools_json: {e}"))
}

/// `base64.b64decode(value).decode()`
fn powertools_base64(text: &str) -> Result<Variable, String> {
    let bytes = b64decode(text).map_err(|e| format!("powertools_base64: {e}"))?;
    String::from_utf8(bytes)
        .map(Variable::String)
        .map_err(|e| format!("powertools_base64: {e}"))
}

/// `gzip.decompress(base64.b64decode(value)).decode()`
fn powertools_base64_gzip(text: &str) -> Result<Variable, String> {
    let compressed = b64decode(text).map_err(|e| format!("powertools_base64_gzip: {e}"))?;
    // gzip.decompress reads every member of a multi-member stream
    let mut decoder = flate2::read::MultiGzDecoder::new(compressed.as_slice());
    let mut out = String::new();
    decoder
        .read_to_string(&mut out)
        .map_err(|e| format!("powertools_base64_gzip: {e}"))?;
    Ok(Variable::String(out))
}

/// Python's `b64decode` without `validate=True` drops characters outside the alphabet
/// (newlines in wrapped base64, say) before decoding; so does this.
fn b64decode(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let kept: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
        .collect();
    base64::engine::general_purpose::STANDARD.decode(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    #[test]
    fn powertools_json_reaches_into_a_body() {
        let path = JmesPath::compile("powertools_json(body).order.id").expect("compiles");
        let event = json!({"body": "{\"order\": {\"id\": 7}}"});
        assert_eq!(path.search(&event).expect("searches"), json!(7));
    }

    #[test]
    fn base64_and_gzip() {
        let b64 = base64::engine::general_purpose::STANDARD.encode("{\"a\": 1}");
        let path = JmesPath::compile("powertools_json(powertools_base64(data)).a").expect("c");
        assert_eq!(path.search(&json!({"data": b64})).expect("s"), json!(1));

        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"hello").expect("write");
        let zipped = base64::engine::general_purpose::STANDARD.encode(gz.finish().expect("gz"));
        let path = JmesPath::compile("powertools_base64_gzip(data)").expect("c");
        assert_eq!(
            path.search(&json!({"data": zipped})).expect("s"),
            json!("hello")
        );
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        assert!(JmesPath::compile("a.[").is_err());
        let path = JmesPath::compile("powertools_json(body)").expect("c");
        let err = path
            .search(&json!({"body": "{not json"}))
            .expect_err("bad json");
        assert!(err.to_string().contains("powertools_json"), "{err}");
        assert!(path.search(&json!({"body": 3})).is_err());
    }
}
