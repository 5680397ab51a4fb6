//! The action map: which remote function runs each action a machine names.
//!
//! A file (JSON, TOML or YAML, told by its extension) whose top level maps action names, as
//! `bind` resolves them (`billing.charge` for `bind { charge = billing.charge }`), to a
//! target, or to a table of settings:
//!
//! ```toml
//! "billing.charge" = "lambda:charge-fn"              # a Lambda's name or ARN
//! "billing.route"  = "https://api.example.com/route"  # any HTTP function endpoint
//!
//! ["billing.refund"]
//! target = "https://api.example.com/refund"
//! timeout = 5          # seconds per attempt (default 30, harel's http_action's)
//! attempts = 2         # tries of a call that times out or fails transiently (default 3)
//! headers = { Authorization = "env:REFUND_TOKEN" }   # from the environment, never logged
//!
//! ["billing.route"]
//! target = "https://api.example.com/route"
//! headers = { "X-Api-Key" = "ssm:/billing/route-key",            # SSM Parameter Store
//! (SecureString decrypted)
//!             Authorization = "secretsmanager:billing/route" }   # Secrets Manager (SecretString)
//! ```
//!
//! `env:`, `ssm:` and `secretsmanager:` values are read once, when the map is bound (a
//! function's cold start); only their references are ever shown, never the values.
//!
//! A table without `target` is a namespace: `[billing] charge = "lambda:charge-fn"` (what
//! TOML's dotted keys and nested YAML make) binds `billing.charge`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

/// Per attempt, as harel's `http_action(timeout=30.0)`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Tries of a call when the map gives no `attempts` (at most 10 may be given).
pub const DEFAULT_ATTEMPTS: u32 = 3;
/// Refused above this: a longer attempt outlives any Lambda invocation (15 minutes).
const MAX_TIMEOUT_SECONDS: f64 = 900.0;
const MAX_ATTEMPTS: u32 = 10;

/// Where a remote action runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A Lambda function's name, partial or full ARN (`Invoke`, `RequestResponse`).
    Lambda(String),
    /// An HTTP(S) endpoint: the payload is POSTed as JSON.
    Http(String),
}

impl Target {
    /// Reads a target: `lambda:` then a function name or ARN, or an `http://`/`https://` URL with a
    /// host; the error says which form was expected.
    pub fn parse(text: &str) -> Result<Target, String> {
        let text = text.trim();
        if let Some(name) = text.strip_prefix("lambda:") {
            if name.is_empty() || name.chars().any(char::is_whitespace) {
                return Err(format!(
                    "{text:?}: lambda: must be followed by a function name or ARN"
                ));
            }
            return Ok(Target::Lambda(name.to_string()));
        }
        if text.starts_with("http://") || text.starts_with("https://") {
            return match reqwest::Url::parse(text) {
                Ok(url) if url.host().is_some() => Ok(Target::Http(text.to_string())),
                Ok(_) => Err(format!("{text:?}: the URL has no host")),
                Err(e) => Err(format!("{text:?}: not a URL: {e}")),
            };
        }
        Err(format!(
            "{text:?}: expected lambda:NAME-or-ARN or an http(s):// URL"
        ))
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Lambda(name) => write!(f, "lambda:{name}"),
            // a query may carry a key (Azure Functions' `?code=`): never shown
            Target::Http(url) => match url.split_once('?') {
                Some((base, _)) => write!(f, "{base}?…"),
                None => f.write_str(url),
            },
        }
    }
}

/// Where a header's value comes from. Only its source is ever shown, never the value.
#[derive(Clone, PartialEq, Eq)]
pub enum HeaderSource {
    /// `env:NAME`: read from the environment when the map is loaded (cold start).
    Env(String),
    /// `ssm:NAME`: an SSM Parameter Store parameter's name (`/path/name`) or ARN, read with
    /// decryption (a SecureString's plain value) when the map is bound.
    Ssm(String),
    /// `secretsmanager:ID`: a Secrets Manager secret's name or ARN, its `SecretString` read
    /// when the map is bound.
    Secret(String),
    /// Any other text: the value itself (for what is no secret, e.g. `Content-Language`).
    Literal(String),
}

impl std::fmt::Debug for HeaderSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderSource::Literal(_) => f.write_str("<literal>"),
            other => write!(f, "{}", other.reference().unwrap_or_default()),
        }
    }
}

impl HeaderSource {
    /// The reference as written in the map (`env:X`, `ssm:/p`, `secretsmanager:s`); None
    /// for a literal (whose text is the value).
    pub fn reference(&self) -> Option<String> {
        match self {
            HeaderSource::Env(name) => Some(format!("env:{name}")),
            HeaderSource::Ssm(name) => Some(format!("ssm:{name}")),
            HeaderSource::Secret(id) => Some(format!("secretsmanager:{id}")),
            HeaderSource::Literal(_) => None,
        }
    }

    /// A value as written: `env:NAME`, `ssm:NAME`, `secretsmanager:ID`, or the text itself.
    /// Also what webhook secrets are written as (`harel-hooks`).
    pub fn parse(source: &str) -> Result<HeaderSource, String> {
        if let Some(var) = source.strip_prefix("env:") {
            if var.is_empty() {
                return Err("env: must name a variable".into());
            }
            return Ok(HeaderSource::Env(var.to_string()));
        }
        if let Some(parameter) = source.strip_prefix("ssm:") {
            if parameter.trim().is_empty() || parameter.chars().any(char::is_whitespace) {
                return Err("ssm: must name a parameter (`ssm:/path/name` or its ARN)".into());
            }
            return Ok(HeaderSource::Ssm(parameter.to_string()));
        }
        if let Some(secret) = source.strip_prefix("secretsmanager:") {
            if secret.trim().is_empty() || secret.chars().any(char::is_whitespace) {
                return Err("secretsmanager: must name a secret (its name or ARN)".into());
            }
            return Ok(HeaderSource::Secret(secret.to_string()));
        }
        Ok(HeaderSource::Literal(source.to_string()))
    }

    /// Read from AWS (SSM Parameter Store or Secrets Manager) rather than the environment.
    pub fn is_aws(&self) -> bool {
        matches!(self, HeaderSource::Ssm(_) | HeaderSource::Secret(_))
    }
}

/// One action's binding.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// The action's name, dotted when it came from a namespace (`billing.charge`).
    pub action: String,
    /// Where the action runs.
    pub target: Target,
    /// Per attempt.
    pub timeout: Duration,
    /// Tries of a call that timed out or failed transiently, within the invocation's time.
    pub attempts: u32,
    /// HTTP targets only: (name, source of the value).
    pub headers: Vec<(String, HeaderSource)>,
}

/// The whole map, in the file's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActionMap {
    /// Where it was read from (for errors).
    pub origin: String,
    /// One binding per action, in the file's order.
    pub bindings: Vec<Binding>,
}

/// An action map that cannot be read or parsed, or an entry that is invalid.
#[derive(Debug, thiserror::Error)]
#[error("action map {origin}: {message}")]
pub struct MapError {
    /// The file (or the origin given to [`ActionMap::parse`]).
    pub origin: String,
    /// What is wrong, naming the entry when one is at fault.
    pub message: String,
}

impl ActionMap {
    /// Read the file at `path`, its format told by the extension (`.json`, `.toml`,
    /// `.yaml`/`.yml`).
    pub fn load(path: &Path) -> Result<ActionMap, MapError> {
        let origin = path.display().to_string();
        let err = |message: String| MapError {
            origin: origin.clone(),
            message,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| err(format!("cannot read the file: {e}")))?;
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("json") => Format::Json,
            Some("toml") => Format::Toml,
            Some("yaml" | "yml") => Format::Yaml,
            _ => {
                return Err(err(
                    "the extension must tell the format: .json, .toml, .yaml or .yml".into(),
                ))
            }
        };
        ActionMap::parse(&text, format, &origin)
    }

    /// Parse `text`; `origin` names it in errors.
    pub fn parse(text: &str, format: Format, origin: &str) -> Result<ActionMap, MapError> {
        let err = |message: String| MapError {
            origin: origin.to_string(),
            message,
        };
        crate::depth::check(text).map_err(err)?;
        let value: Value = match format {
            Format::Json => serde_json::from_str(text).map_err(|e| err(e.to_string()))?,
            Format::Toml => {
                let table: toml::Table = toml::from_str(text).map_err(|e| err(e.to_string()))?;
                serde_json::to_value(table).map_err(|e| err(e.to_string()))?
            }
            Format::Yaml => serde_yaml_ng::from_str(text).map_err(|e| err(e.to_string()))?,
        };
        let Value::Object(top) = value else {
            return Err(err("the top level must map action names to targets".into()));
        };
        let mut bindings = Vec::new();
        collect(&top, "", &mut bindings).map_err(err)?;
        Ok(ActionMap {
            origin: origin.to_string(),
            bindings,
        })
    }

    /// The binding of `action`, if the map has one.
    pub fn get(&self, action: &str) -> Option<&Binding> {
        self.bindings.iter().find(|b| b.action == action)
    }

    /// The Lambda functions the map names (for least-privilege grants).
    pub fn lambda_targets(&self) -> impl Iterator<Item = &str> {
        self.bindings.iter().filter_map(|b| match &b.target {
            Target::Lambda(name) => Some(name.as_str()),
            Target::Http(_) => None,
        })
    }
}

/// An action map's file format ([`ActionMap::load`] tells it by the extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON (`.json`).
    Json,
    /// TOML (`.toml`).
    Toml,
    /// YAML (`.yaml`, `.yml`).
    Yaml,
}

fn collect(table: &Map<String, Value>, prefix: &str, out: &mut Vec<Binding>) -> Result<(), String> {
    for (key, value) in table {
        let action = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if key.trim().is_empty() {
            return Err(format!("an empty action name under {prefix:?}"));
        }
        match value {
            Value::String(target) => {
                let target = Target::parse(target).map_err(|e| format!("action {action:?}: {e}"))?;
                push(out, plain(action, target))?;
            }
            Value::Object(settings) if settings.contains_key("target") => {
                let binding =
                    settings_of(&action, settings).map_err(|e| format!("action {action:?}: {e}"))?;
                push(out, binding)?;
            }
            Value::Object(namespace) => collect(namespace, &action, out)?,
            other => {
                return Err(format!(
                    "action {action:?}: expected a target string or a table with `target`, found {other}"
                ))
            }
        }
    }
    Ok(())
}

fn push(out: &mut Vec<Binding>, binding: Binding) -> Result<(), String> {
    if out.iter().any(|b| b.action == binding.action) {
        return Err(format!("action {:?} is bound twice", binding.action));
    }
    out.push(binding);
    Ok(())
}

fn plain(action: String, target: Target) -> Binding {
    Binding {
        action,
        target,
        timeout: DEFAULT_TIMEOUT,
        attempts: DEFAULT_ATTEMPTS,
        headers: Vec::new(),
    }
}

fn settings_of(action: &str, settings: &Map<String, Value>) -> Result<Binding, String> {
    let mut binding = match settings.get("target") {
        Some(Value::String(t)) => plain(action.to_string(), Target::parse(t)?),
        _ => return Err("`target` must be a string".into()),
    };
    for (key, value) in settings {
        match key.as_str() {
            "target" => {}
            "timeout" => {
                let seconds = value
                    .as_f64()
                    .filter(|s| s.is_finite() && *s > 0.0 && *s <= MAX_TIMEOUT_SECONDS)
                    .ok_or_else(|| {
                        format!("`timeout` must be seconds above 0 and at most {MAX_TIMEOUT_SECONDS}, found {value}")
                    })?;
                binding.timeout = Duration::from_secs_f64(seconds);
            }
            "attempts" => {
                binding.attempts = value
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| (1..=MAX_ATTEMPTS).contains(n))
                    .ok_or_else(|| {
                        format!("`attempts` must be a whole number from 1 to {MAX_ATTEMPTS}, found {value}")
                    })?;
            }
            "headers" => {
                let Value::Object(headers) = value else {
                    return Err("`headers` must be a table of name = value".into());
                };
                for (name, source) in headers {
                    reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("header {name:?} is not a valid header name"))?;
                    let Value::String(source) = source else {
                        return Err(format!(
                            "header {name:?}: the value must be a string (`env:NAME` or text)"
                        ));
                    };
                    binding
                        .headers
                        .push((name.clone(), header_source(name, source)?));
                }
            }
            other => {
                return Err(format!(
                    "unknown setting `{other}` (known: target, timeout, attempts, headers)"
                ))
            }
        }
    }
    if !binding.headers.is_empty() && matches!(binding.target, Target::Lambda(_)) {
        return Err("`headers` apply to HTTP targets only".into());
    }
    Ok(binding)
}

fn header_source(name: &str, source: &str) -> Result<HeaderSource, String> {
    HeaderSource::parse(source).map_err(|e| format!("header {name:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_formats_read_the_same_map() {
        let json = r#"{
            "billing.charge": "lambda:charge-fn",
            "billing": {"refund": {"target": "https://x.example/refund", "timeout": 2.5, "attempts": 2,
                                   "headers": {"Authorization": "env:TOKEN"}}}
        }"#;
        let toml = r#"
            "billing.charge" = "lambda:charge-fn"
            [billing.refund]
            target = "https://x.example/refund"
            timeout = 2.5
            attempts = 2
            headers = { Authorization = "env:TOKEN" }
        "#;
        let yaml = "billing.charge: lambda:charge-fn\nbilling:\n  refund:\n    target: https://x.example/refund\n    timeout: 2.5\n    attempts: 2\n    headers: {Authorization: 'env:TOKEN'}\n";
        let maps: Vec<ActionMap> = [
            (json, Format::Json),
            (toml, Format::Toml),
            (yaml, Format::Yaml),
        ]
        .into_iter()
        .map(|(t, f)| ActionMap::parse(t, f, "m").expect("parses"))
        .collect();
        for map in &maps {
            assert_eq!(map.bindings.len(), 2);
            let charge = map.get("billing.charge").expect("charge");
            assert_eq!(charge.target, Target::Lambda("charge-fn".into()));
            assert_eq!(charge.timeout, DEFAULT_TIMEOUT);
            let refund = map.get("billing.refund").expect("refund");
            assert_eq!(
                refund.target,
                Target::Http("https://x.example/refund".into())
            );
            assert_eq!(refund.timeout, Duration::from_millis(2500));
            assert_eq!(refund.attempts, 2);
            assert_eq!(
                refund.headers,
                vec![("Authorization".into(), HeaderSource::Env("TOKEN".into()))]
            );
        }
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            (
                r#"{"a.b": "ftp://x"}"#,
                "action \"a.b\": \"ftp://x\": expected lambda:NAME-or-ARN",
            ),
            (r#"{"a.b": "lambda:"}"#, "lambda: must be followed"),
            (
                r#"{"a.b": {"target": "lambda:f", "headers": {"X": "env:Y"}}}"#,
                "HTTP targets only",
            ),
            (
                r#"{"a.b": {"target": "http://h/x", "timout": 3}}"#,
                "unknown setting `timout`",
            ),
            (
                r#"{"a.b": {"target": "http://h/x", "timeout": 0}}"#,
                "`timeout` must be seconds",
            ),
            (
                r#"{"a.b": {"target": "http://h/x", "headers": {"A": "ssm:"}}}"#,
                "ssm: must name a parameter",
            ),
            (
                r#"{"a.b": {"target": "http://h/x", "headers": {"A": "secretsmanager: x"}}}"#,
                "secretsmanager: must name a secret",
            ),
            (r#"{"a.b": 3}"#, "expected a target string"),
            (r#"["x"]"#, "the top level must map"),
            (
                r#"{"a.b": "lambda:f", "a": {"b": "lambda:g"}}"#,
                "bound twice",
            ),
        ];
        for (text, expected) in cases {
            let e = ActionMap::parse(text, Format::Json, "m.json").expect_err(text);
            let shown = e.to_string();
            assert!(shown.starts_with("action map m.json: "), "{shown}");
            assert!(shown.contains(expected), "{text}: {shown}");
        }
    }

    #[test]
    fn aws_references_are_read_and_shown_as_references_only() {
        let map = ActionMap::parse(
            r#"{"a.b": {"target": "http://h/x", "headers": {"K": "ssm:/team/key", "A": "secretsmanager:team/token", "L": "plain"}}}"#,
            Format::Json,
            "m.json",
        )
        .expect("parses");
        let headers = &map.get("a.b").expect("a.b").headers;
        assert_eq!(headers[0].1, HeaderSource::Ssm("/team/key".into()));
        assert_eq!(headers[1].1, HeaderSource::Secret("team/token".into()));
        let shown = format!("{map:?}");
        assert!(shown.contains("ssm:/team/key"), "{shown}");
        assert!(shown.contains("secretsmanager:team/token"), "{shown}");
        assert!(!shown.contains("plain"), "{shown}");
    }

    #[test]
    fn a_targets_query_is_never_shown() {
        let t = Target::parse("https://fn.example/api/charge?code=s3cret").expect("url");
        assert_eq!(t.to_string(), "https://fn.example/api/charge?…");
        assert_eq!(
            Target::parse("lambda:f").expect("f").to_string(),
            "lambda:f"
        );
    }

    #[test]
    fn the_extension_tells_the_format() {
        let dir = std::env::temp_dir().join(format!("harel-remote-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let yml = dir.join("actions.yml");
        std::fs::write(&yml, "x.y: http://127.0.0.1:1/y\n").expect("write");
        let map = ActionMap::load(&yml).expect("yaml");
        assert_eq!(
            map.get("x.y").map(|b| &b.target),
            Some(&Target::Http("http://127.0.0.1:1/y".into()))
        );
        let txt = dir.join("actions.txt");
        std::fs::write(&txt, "{}").expect("write");
        let e = ActionMap::load(&txt).expect_err("no format");
        assert!(
            e.to_string().contains("the extension must tell the format"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
