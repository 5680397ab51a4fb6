//! The functions' logs: one JSON object per line, flat, as Lambda's advanced logging
//! controls read them, with Powertools for AWS Lambda's keys: `timestamp`, `level` (which
//! `ApplicationLogLevel` filters on), `message`, `service` (`POWERTOOLS_SERVICE_NAME`),
//! `location` (`module:line`), then the fields of every span the line was logged in (the
//! invocation's `cold_start`, `function_name`, `function_request_id`, `xray_trace_id` and
//! harel's `function` role; a record's `message_id`, `execution_id`, `event_kind`, `machine`)
//! and the line's own fields. tracing-subscriber's JSON formatter nests span fields under
//! `span`/`spans`; CloudWatch Logs Insights, Lambda's console and Powertools' queries want
//! them at the top.
//!
//! Payloads (event data, contexts) are never logged at `info` or above: the handlers log
//! where an execution went, not what it holds.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// Set by Lambda from the function's `LoggingConfig.ApplicationLogLevel`.
pub const LAMBDA_LOG_LEVEL: &str = "AWS_LAMBDA_LOG_LEVEL";
/// Set by Lambda from the function's `LoggingConfig.LogFormat` (`JSON` or `Text`).
pub const LAMBDA_LOG_FORMAT: &str = "AWS_LAMBDA_LOG_FORMAT";
/// harel's own level variable (`debug`, `info`, ...), for a function quieter or louder than
/// Lambda's `ApplicationLogLevel`.
pub const HAREL_LOG_LEVEL: &str = "HAREL_LOG_LEVEL";
/// Powertools' own level variable: read when `HAREL_LOG_LEVEL` is not set.
pub const POWERTOOLS_LOG_LEVEL: &str = "POWERTOOLS_LOG_LEVEL";
/// Powertools' service name: every log line's `service` (and the metrics' `service`
/// dimension). The template sets it to the stack's name.
pub const POWERTOOLS_SERVICE_NAME: &str = "POWERTOOLS_SERVICE_NAME";
/// The service when `POWERTOOLS_SERVICE_NAME` is not set.
pub const DEFAULT_SERVICE: &str = "harel";
/// Set by Lambda: the function's name, and `provisioned-concurrency` when an environment was
/// initialised ahead of its first invocation (whose start is then not a cold one).
pub const LAMBDA_FUNCTION_NAME: &str = "AWS_LAMBDA_FUNCTION_NAME";
/// Set by Lambda: `provisioned-concurrency` when the environment was initialised ahead of its first
/// invocation (then not a cold start).
pub const LAMBDA_INITIALIZATION_TYPE: &str = "AWS_LAMBDA_INITIALIZATION_TYPE";
/// tracing's filter directives, read when neither Lambda's nor harel's level is set.
pub const RUST_LOG: &str = "RUST_LOG";

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One flat JSON object per line (the default: what CloudWatch reads as structured).
    Json,
    /// tracing's human-readable lines (`LogFormat: Text` asked for it).
    Text,
}

/// Which lines are written, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSettings {
    /// An `EnvFilter` directive (`info`, `debug`, `harel_lambda=debug,info`, ...).
    pub filter: String,
    /// JSON (the default) or text, from `AWS_LAMBDA_LOG_FORMAT`.
    pub format: Format,
    /// Every JSON line's `service`.
    pub service: String,
}

impl LogSettings {
    /// Reads the process environment (see [`from_lookup`](Self::from_lookup) for which variable
    /// wins).
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The level: the more verbose of Lambda's `AWS_LAMBDA_LOG_LEVEL` (the operator's
    /// `ApplicationLogLevel`) and `HAREL_LOG_LEVEL` (else Powertools' `POWERTOOLS_LOG_LEVEL`),
    /// either alone when only one is set, else
    /// `RUST_LOG` (which may hold per-crate directives), else `info`. The more verbose,
    /// because Lambda drops the lines below its own level anyway, and the template keeps
    /// `ApplicationLogLevel` at `INFO` or below so the EMF documents (level-less lines, INFO to
    /// Lambda) are never dropped: a quieter function is asked for with `HAREL_LOG_LEVEL`.
    /// Lambda's `FATAL` is tracing's `error`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let lambda =
            get(LAMBDA_LOG_LEVEL).map(|level| match level.trim().to_ascii_lowercase().as_str() {
                "fatal" => "error".to_string(),
                other => other.to_string(),
            });
        let own = get(HAREL_LOG_LEVEL).or_else(|| {
            // Powertools spells the levels in capitals (INFO, DEBUG, ..., CRITICAL)
            get(POWERTOOLS_LOG_LEVEL).map(|l| match l.trim().to_ascii_lowercase().as_str() {
                "critical" | "fatal" => "error".to_string(),
                "warning" => "warn".to_string(),
                other => other.to_string(),
            })
        });
        let filter = match (lambda, own) {
            (Some(lambda), Some(harel)) => match (
                lambda.parse::<LevelFilter>(),
                harel.trim().parse::<LevelFilter>(),
            ) {
                (Ok(a), Ok(b)) => a.max(b).to_string(),
                // a directive (`harel_lambda=debug,info`) says more than a level
                _ => harel,
            },
            (Some(level), None) | (None, Some(level)) => level,
            (None, None) => get(RUST_LOG).unwrap_or_else(|| "info".to_string()),
        };
        let format = match get(LAMBDA_LOG_FORMAT) {
            Some(f) if f.trim().eq_ignore_ascii_case("text") => Format::Text,
            _ => Format::Json,
        };
        let service = get(POWERTOOLS_SERVICE_NAME).unwrap_or_else(|| DEFAULT_SERVICE.to_string());
        LogSettings {
            filter,
            format,
            service,
        }
    }

    fn env_filter(&self) -> EnvFilter {
        EnvFilter::try_new(&self.filter).unwrap_or_else(|e| {
            // a bad level must not stop the function: say so on the first line instead
            eprintln!(
                "log level {:?} not understood ({e}): using info",
                self.filter
            );
            EnvFilter::new("info")
        })
    }
}

/// The subscriber the functions log through, writing to `writer` (stdout in Lambda; a
/// buffer in tests).
pub fn subscriber<W>(settings: &LogSettings, writer: W) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(settings.env_filter())
        .with_writer(writer);
    match settings.format {
        Format::Json => Box::new(
            builder
                .fmt_fields(JsonFields::new())
                .event_format(FlatJson {
                    service: settings.service.clone(),
                })
                .finish(),
        ),
        Format::Text => Box::new(builder.without_time().with_target(false).finish()),
    }
}

/// Install [`subscriber`] on stdout for the process (a second call changes nothing).
pub fn init(settings: &LogSettings) {
    let _ = tracing::subscriber::set_global_default(subscriber(settings, std::io::stdout));
}

static COLD: AtomicBool = AtomicBool::new(true);

/// True for the first invocation of this process (once: later calls are false), as
/// Powertools counts it: an environment Lambda initialised ahead of demand
/// (`AWS_LAMBDA_INITIALIZATION_TYPE=provisioned-concurrency`) has no cold start.
pub fn take_cold_start() -> bool {
    let first = COLD.swap(false, Ordering::Relaxed);
    first && std::env::var(LAMBDA_INITIALIZATION_TYPE).as_deref() != Ok("provisioned-concurrency")
}

/// What the Lambda runtime says of one invocation (its `Context`), for its logs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invocation {
    /// harel's function: `worker`, `relay` or `sweeper`.
    pub function: String,
    /// Lambda's function name (`AWS_LAMBDA_FUNCTION_NAME`; the stack's generated name).
    pub function_name: String,
    /// Lambda's request id of the invocation (`awsRequestId`).
    pub request_id: String,
    /// The X-Ray trace header, when tracing is on.
    pub xray_trace_id: Option<String>,
    /// Whether this is the first invocation of a new (non-provisioned) environment.
    pub cold_start: bool,
}

impl Invocation {
    /// An invocation of `function` (`worker`, ...) with Lambda's request id and trace header;
    /// the function name from `AWS_LAMBDA_FUNCTION_NAME`, the cold start from
    /// [`take_cold_start`] (so build one per invocation, in order).
    pub fn new(function: &str, request_id: &str, xray_trace_id: Option<&str>) -> Self {
        Invocation {
            function: function.to_string(),
            function_name: std::env::var(LAMBDA_FUNCTION_NAME)
                .unwrap_or_else(|_| function.to_string()),
            request_id: request_id.to_string(),
            xray_trace_id: xray_trace_id.filter(|t| !t.is_empty()).map(str::to_string),
            cold_start: take_cold_start(),
        }
    }

    /// The span every line logged while handling the invocation is in (Powertools' keys).
    pub fn span(&self) -> tracing::Span {
        tracing::info_span!(
            "invocation",
            cold_start = self.cold_start,
            function_name = self.function_name.as_str(),
            function_request_id = self.request_id.as_str(),
            xray_trace_id = self.xray_trace_id.as_deref(),
            function = self.function.as_str(),
        )
    }
}

/// The span of one invocation (tests): a warm invocation of `function` without a trace.
pub fn invocation_span(function: &str, request_id: &str) -> tracing::Span {
    Invocation {
        function: function.to_string(),
        function_name: function.to_string(),
        request_id: request_id.to_string(),
        xray_trace_id: None,
        cold_start: false,
    }
    .span()
}

/// The flat JSON line (see the module's documentation).
pub struct FlatJson {
    /// Every line's `service`.
    pub service: String,
}

impl<S, N> FormatEvent<S, N> for FlatJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = Map::new();
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        line.insert("timestamp".into(), Value::String(timestamp));
        line.insert(
            "level".into(),
            Value::String(event.metadata().level().as_str().to_string()),
        );
        let mut fields = Fields::default();
        event.record(&mut fields);
        line.insert(
            "message".into(),
            fields
                .0
                .remove("message")
                .unwrap_or(Value::String(String::new())),
        );
        line.insert("service".into(), Value::String(self.service.clone()));
        let meta = event.metadata();
        line.insert(
            "location".into(),
            Value::String(format!(
                "{}:{}",
                meta.module_path().unwrap_or_else(|| meta.target()),
                meta.line().unwrap_or(0)
            )),
        );
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                // JsonFields keeps a span's fields as the text of one JSON object
                if let Some(recorded) = extensions.get::<FormattedFields<N>>() {
                    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(recorded) {
                        line.extend(map);
                    }
                }
            }
        }
        line.extend(fields.0);
        line.insert(
            "target".into(),
            Value::String(event.metadata().target().to_string()),
        );
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// An event's fields as JSON values (numbers and booleans kept, the rest as text).
#[derive(Default)]
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .insert(field.name().into(), Value::from(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::from(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'w self) -> Self::Writer {
            self.clone()
        }
    }

    fn settings(pairs: &[(&str, &str)]) -> LogSettings {
        LogSettings::from_lookup(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn the_more_verbose_of_lambdas_and_harels_level_then_rust_log() {
        assert_eq!(settings(&[]).filter, "info");
        assert_eq!(settings(&[(RUST_LOG, "warn")]).filter, "warn");
        assert_eq!(
            settings(&[(RUST_LOG, "warn"), (HAREL_LOG_LEVEL, "debug")]).filter,
            "debug"
        );
        assert_eq!(
            settings(&[(HAREL_LOG_LEVEL, "debug"), (LAMBDA_LOG_LEVEL, "ERROR")]).filter,
            "debug"
        );
        assert_eq!(
            settings(&[(HAREL_LOG_LEVEL, "error"), (LAMBDA_LOG_LEVEL, "INFO")]).filter,
            "info"
        );
        assert_eq!(
            settings(&[(HAREL_LOG_LEVEL, "warn"), (LAMBDA_LOG_LEVEL, "TRACE")]).filter,
            "trace"
        );
        assert_eq!(
            settings(&[
                (HAREL_LOG_LEVEL, "harel_lambda=debug"),
                (LAMBDA_LOG_LEVEL, "INFO")
            ])
            .filter,
            "harel_lambda=debug"
        );
        assert_eq!(settings(&[(LAMBDA_LOG_LEVEL, "FATAL")]).filter, "error");
        assert_eq!(settings(&[]).format, Format::Json);
        assert_eq!(
            settings(&[(LAMBDA_LOG_FORMAT, "Text")]).format,
            Format::Text
        );
        assert_eq!(
            settings(&[(LAMBDA_LOG_FORMAT, "JSON")]).format,
            Format::Json
        );
    }

    #[test]
    fn powertools_level_and_service_are_read() {
        assert_eq!(settings(&[(POWERTOOLS_LOG_LEVEL, "DEBUG")]).filter, "debug");
        assert_eq!(
            settings(&[(POWERTOOLS_LOG_LEVEL, "WARNING")]).filter,
            "warn"
        );
        assert_eq!(
            settings(&[(POWERTOOLS_LOG_LEVEL, "CRITICAL")]).filter,
            "error"
        );
        // harel's own variable wins over Powertools'
        assert_eq!(
            settings(&[(POWERTOOLS_LOG_LEVEL, "DEBUG"), (HAREL_LOG_LEVEL, "warn")]).filter,
            "warn"
        );
        // and Lambda's, when more verbose, over both
        assert_eq!(
            settings(&[(POWERTOOLS_LOG_LEVEL, "ERROR"), (LAMBDA_LOG_LEVEL, "INFO")]).filter,
            "info"
        );
        assert_eq!(settings(&[]).service, "harel");
        assert_eq!(
            settings(&[(POWERTOOLS_SERVICE_NAME, "harel-dev")]).service,
            "harel-dev"
        );
    }

    #[test]
    fn a_cold_traced_invocation_carries_powertools_keys() {
        let buffer = Buffer::default();
        let sub = subscriber(
            &settings(&[(POWERTOOLS_SERVICE_NAME, "harel-dev")]),
            buffer.clone(),
        );
        let invocation = Invocation {
            function: "sweeper".into(),
            function_name: "harel-dev-Sweeper-AbC123".into(),
            request_id: "req-9".into(),
            xray_trace_id: Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1".into()),
            cold_start: true,
        };
        tracing::subscriber::with_default(sub, || {
            let span = invocation.span();
            let _s = span.enter();
            tracing::warn!("late");
        });
        let text = String::from_utf8(buffer.0.lock().expect("lock").clone()).expect("utf-8");
        let line: Value = serde_json::from_str(text.trim()).expect("one JSON line");
        for (key, want) in [
            ("service", json!("harel-dev")),
            ("cold_start", json!(true)),
            ("function_name", json!("harel-dev-Sweeper-AbC123")),
            ("function_request_id", json!("req-9")),
            (
                "xray_trace_id",
                json!("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"),
            ),
            ("level", json!("WARN")),
            ("message", json!("late")),
            ("function", json!("sweeper")),
        ] {
            assert_eq!(line[key], want, "{key} in {line}");
        }
        assert!(line["location"].as_str().is_some_and(|l| l.contains(':')));
        assert!(line["timestamp"].as_str().is_some());
    }

    #[test]
    fn only_the_first_invocation_is_a_cold_start() {
        // the process's first call (no other test in this binary takes it)
        let first = take_cold_start();
        assert_eq!(
            first,
            std::env::var(LAMBDA_INITIALIZATION_TYPE).as_deref() != Ok("provisioned-concurrency")
        );
        assert!(!take_cold_start());
        assert!(!Invocation::new("worker", "r", Some("")).cold_start);
        assert_eq!(Invocation::new("worker", "r", Some("")).xray_trace_id, None);
    }

    #[test]
    fn a_line_is_flat_json_with_the_spans_fields() {
        let buffer = Buffer::default();
        let sub = subscriber(&settings(&[]), buffer.clone());
        tracing::subscriber::with_default(sub, || {
            let invocation = invocation_span("worker", "req-1");
            let _i = invocation.enter();
            let record = tracing::info_span!(
                "record",
                message_id = "m-1",
                event_kind = tracing::field::Empty
            );
            let _r = record.enter();
            record.record("event_kind", "PlaceOrder");
            tracing::info!(commits = 2_u64, ok = true, "step committed");
            tracing::debug!("not at info");
        });
        let text = String::from_utf8(buffer.0.lock().expect("lock").clone()).expect("utf-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line: Value = serde_json::from_str(lines[0]).expect("one JSON object");
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["message"], "step committed");
        assert_eq!(line["function_request_id"], "req-1");
        assert_eq!(line["function"], "worker");
        assert_eq!(line["function_name"], "worker");
        assert_eq!(line["cold_start"], false);
        assert_eq!(line["service"], DEFAULT_SERVICE);
        let location = line["location"].as_str().expect("location");
        assert!(
            location.starts_with("harel_lambda::logging::tests:"),
            "{location}"
        );
        assert!(
            line.get("xray_trace_id").is_none(),
            "no trace, no key: {line}"
        );
        assert_eq!(line["message_id"], "m-1");
        assert_eq!(line["event_kind"], "PlaceOrder");
        assert_eq!(line["commits"], 2);
        assert_eq!(line["ok"], true);
        let ts = line["timestamp"].as_str().expect("timestamp");
        assert!(ts.ends_with('Z') && ts.contains('T'), "{ts}");
        let keys: Vec<&String> = line.as_object().expect("object").keys().collect();
        assert_eq!(keys[..3], ["timestamp", "level", "message"]);
    }
}
