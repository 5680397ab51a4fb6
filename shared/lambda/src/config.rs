//! The functions' configuration, read once at cold start from the environment every harel
//! tool shares. A missing or wrong setting is an error naming the variable, before any event.

use std::fs::Metadata;
use std::ops::RangeBounds;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use harel_store::DEFAULT_TRACE_MAX;

// The variables' names and the defaults the CLI applies too are the stack's contract.
use harel_stack::{
    retention_days, CommitMode, InvalidRetention, ACTIONS_FILE, COMMIT_MODE, COMPAT_SWEEP_MINUTES,
    DEFAULT_RETENTION_DAYS, DEFINITIONS_DIR, DLQ_URL, ENDPOINT_URL, EVENTS_DLQ_URL, EVENT_BUS,
    EVENT_MACHINES, EVENT_SOURCE, EVENT_STATUSES, HOOKS_FILE, IDEMPOTENCY_EXPIRY,
    IDEMPOTENCY_TABLE, LOCAL_ENDPOINT_URL, MAX_RETENTION_DAYS, QUEUE_URL, REGION, RETENTION_DAYS,
    SCHEDULES_FILE, SUSPEND_RECHECK, SUSPEND_RECHECK_MAX, SWEEPER_FUNCTION, SWEEP_INTERVAL,
    SWEEP_WINDOW, TABLE_PREFIX, TIMER_SHARDS, TIME_RESERVE, TRACE, TRACE_MAX, WORKER_CONCURRENCY,
};

/// SQS hides a message for at most 12 hours.
const MAX_VISIBILITY: Duration = Duration::from_secs(12 * 3600);

/// What made a value unreadable (a number that does not parse, a path that cannot be read).
type Cause = Box<dyn std::error::Error + Send + Sync>;

/// A setting the function cannot start with; the message names the environment variable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required variable is unset or empty.
    #[error("{0} is not set")]
    Missing(&'static str),
    /// A variable is set to a value that cannot be used.
    #[error("{name}={value:?} is invalid: {reason}")]
    Invalid {
        /// The variable's name (`HAREL_...`).
        name: &'static str,
        /// The value it holds.
        value: String,
        /// What was expected instead.
        reason: String,
        /// The parse or file-system error behind it, if any.
        #[source]
        source: Option<Cause>,
    },
}

/// Which function is reading its configuration: each needs a different part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The SQS consumer: needs the dead-letter queue and the idempotency table.
    Worker,
    /// The outbox relay: needs the events' dead-letter queue when a bus is set.
    Relay,
    /// The timer sweeper (and scheduler), run on the schedule's tick or a worker's wake.
    Sweeper,
    /// The HTTP API: checks and enqueues, reads and controls; runs no machine step.
    Api,
}

/// Every function's settings, from the `HAREL_*` variables of `harel_stack` with their defaults
/// ([`from_env`](Self::from_env)).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The DynamoDB tables' prefix (`HAREL_TABLE_PREFIX`, required).
    pub table_prefix: String,
    /// The FIFO queue every event goes through (`HAREL_QUEUE_URL`, required, a `.fifo` URL).
    pub queue_url: String,
    /// Required by the worker (malformed messages go there).
    pub dlq_url: Option<String>,
    /// Required by the worker.
    pub idempotency_table: Option<String>,
    /// The first park's delay; each later receive of the same message doubles it.
    pub suspend_recheck: Duration,
    /// The cap on a park's delay.
    pub suspend_recheck_max: Duration,
    /// Message groups of one batch the worker handles at the same time (default 8).
    pub worker_concurrency: usize,
    /// The longest a sweeper sleeps between two looks at the next due timer (default 1 s).
    pub sweep_interval: Duration,
    /// How far ahead a sweeper invocation covers timers, and a worker wakes one for a timer due
    /// sooner (default 60 s).
    pub sweep_window: Duration,
    /// The sweeper's compatibility Scan runs every this many minutes (0: never).
    pub compat_sweep_minutes: u64,
    /// Where commits keep an event's dedupe mark (`HAREL_COMMIT_MODE`, default `compat`): the
    /// store's `with_commit_mode`.
    pub commit_mode: CommitMode,
    /// Shards of the timers' index (1 to 100, default 8): the store's `with_due_shards`.
    pub timer_shards: u32,
    /// The worker wakes this function (None: no wakes; timers then fire on the ticks).
    pub sweeper_function: Option<String>,
    /// The part of an invocation's remaining time the relay and sweeper leave unused, to finish
    /// cleanly (default 3000 ms).
    pub time_reserve: Duration,
    /// How long the worker's idempotency records live (Powertools' `expires_after_seconds`, default
    /// one hour).
    pub idempotency_expiry: Duration,
    /// harel's opt-in execution timeline: every committed step writes one trace entry.
    pub trace: bool,
    /// The trace ring: steps kept per execution (harel's `trace_max`, default 200).
    pub trace_max: usize,
    /// How long finished executions, their dedupe marks and trace rows are kept (zero:
    /// forever).
    pub retention: Duration,
    /// Machines loaded at cold start from this directory's `.stm` files.
    pub definitions_dir: Option<PathBuf>,
    /// The action map's file.
    pub actions_file: Option<PathBuf>,
    /// Events for the bus (None: `HAREL_EVENT_BUS` unset or empty, none written).
    pub events: Option<EventsSettings>,
    /// The schedules file (the sweeper's: it starts them).
    pub schedules_file: Option<PathBuf>,
    /// The hooks file (the API's: its webhooks).
    pub hooks_file: Option<PathBuf>,
}

/// Where the events go and which are written (see `harel_store::events`).
#[derive(Clone, Debug, PartialEq)]
pub struct EventsSettings {
    /// The EventBridge bus, a name or an ARN (`HAREL_EVENT_BUS`).
    pub bus: String,
    /// Which events every writer records with its commits: the source, and the statuses and
    /// machines kept (none listed: all).
    pub store: harel_store::EventsConfig,
    /// Required by the relay: events it cannot put go there.
    pub dlq_url: Option<String>,
}

/// The events' settings: every writer writes the same rows, only the relay puts them.
fn events_settings<F: Fn(&str) -> Option<String>>(
    vars: &Vars<F>,
    role: Role,
) -> Result<Option<EventsSettings>, ConfigError> {
    let Some(bus) = vars.string(EVENT_BUS).map(|b| b.trim().to_string()) else {
        return Ok(None);
    };
    let list = |name: &'static str| {
        vars.string(name).map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
        })
    };
    let statuses = match list(EVENT_STATUSES) {
        None => None,
        Some(names) => Some(
            names
                .iter()
                .map(|n| {
                    serde_json::from_value::<harel_model::Status>(serde_json::Value::String(
                        n.to_uppercase(),
                    ))
                    .map_err(|_| {
                        vars.invalid(
                            EVENT_STATUSES,
                            &format!("{n:?} is not a status (RUNNING, SUSPENDED, DONE, FAILED, CANCELLING, CANCELLED)"),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(Some(EventsSettings {
        bus,
        store: harel_store::EventsConfig {
            source: vars.string(EVENT_SOURCE).map_or_else(
                || harel_store::events::DEFAULT_SOURCE.to_string(),
                |s| s.trim().to_string(),
            ),
            statuses,
            machines: list(EVENT_MACHINES),
        },
        dlq_url: vars.needed(EVENTS_DLQ_URL, role == Role::Relay)?,
    }))
}

impl Config {
    /// Reads the process environment for `role`: a variable that is missing for that role, or
    /// malformed for any, is the error.
    pub fn from_env(role: Role) -> Result<Self, ConfigError> {
        Self::from_lookup(role, |name| std::env::var(name).ok())
    }

    /// Read through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(
        role: Role,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let vars = Vars(lookup);
        let worker = role == Role::Worker;
        // the SDK would otherwise fail on the first call, not at cold start
        if vars.string(REGION).is_none() && vars.string("AWS_DEFAULT_REGION").is_none() {
            return Err(ConfigError::Missing(REGION));
        }
        vars.url(ENDPOINT_URL)?;
        vars.url(LOCAL_ENDPOINT_URL)?;
        let table_prefix = table_prefix(vars.required(TABLE_PREFIX)?)?;
        let queue_url = fifo_url(QUEUE_URL, vars.required(QUEUE_URL)?)?;
        // only the worker dead-letters messages and keeps idempotency records
        let dlq_url = vars.needed(DLQ_URL, worker)?;
        let dlq_url = dlq_url.map(|url| fifo_url(DLQ_URL, url)).transpose()?;
        let idempotency_table = vars.needed(IDEMPOTENCY_TABLE, worker)?;
        let worker_concurrency = vars.number(WORKER_CONCURRENCY, 8, 1.., AT_LEAST_ONE)?;
        let trace = vars.bool(TRACE, false)?;
        // harel takes 0 as "no ring" (unbounded): refused, since an unbounded trace outgrows
        // the partition and the bill unnoticed
        let trace_max = vars.number(TRACE_MAX, DEFAULT_TRACE_MAX, 1.., AT_LEAST_ONE)?;
        let spin = "the sweeper would spin: use at least 0.1";
        let sweep_interval =
            vars.duration_secs_in(SWEEP_INTERVAL, 1.0, Duration::from_nanos(1).., spin)?;
        let suspend_recheck =
            vars.duration_secs_in(SUSPEND_RECHECK, 5.0, ..=MAX_VISIBILITY, PAST_VISIBILITY)?;
        // unset, the cap is 900 s, or the first delay when that is longer (a deployment that
        // set only the recheck keeps working)
        let cap = suspend_recheck.as_secs_f64().max(900.0);
        let suspend_recheck_max =
            vars.duration_secs_in(SUSPEND_RECHECK_MAX, cap, ..=MAX_VISIBILITY, PAST_VISIBILITY)?;
        if suspend_recheck_max < suspend_recheck {
            let why = format!("the cap is below {SUSPEND_RECHECK} ({suspend_recheck:?})");
            return Err(vars.invalid(SUSPEND_RECHECK_MAX, &why));
        }
        let retention_expected = retention_expected();
        let events = events_settings(&vars, role)?;
        Ok(Config {
            table_prefix,
            queue_url,
            dlq_url,
            idempotency_table,
            suspend_recheck,
            suspend_recheck_max,
            worker_concurrency,
            sweep_interval,
            sweep_window: vars.duration_secs(SWEEP_WINDOW, 60.0)?,
            compat_sweep_minutes: vars.number(COMPAT_SWEEP_MINUTES, 5, .., COMPAT_EXPECTED)?,
            commit_mode: vars.commit_mode()?,
            timer_shards: vars.number(TIMER_SHARDS, 8, 1..=100, SHARDS_EXPECTED)?,
            sweeper_function: vars.string(SWEEPER_FUNCTION).map(|v| v.trim().to_string()),
            time_reserve: Duration::from_millis(vars.number(TIME_RESERVE, 3000, .., MILLIS)?),
            idempotency_expiry: vars.duration_secs(IDEMPOTENCY_EXPIRY, 3600.0)?,
            trace,
            trace_max,
            retention: retention_days(vars.number(
                RETENTION_DAYS,
                DEFAULT_RETENTION_DAYS,
                ..=MAX_RETENTION_DAYS,
                &retention_expected,
            )?),
            definitions_dir: vars.path(DEFINITIONS_DIR, Metadata::is_dir, "not a directory")?,
            actions_file: vars.path(ACTIONS_FILE, Metadata::is_file, "no such file")?,
            events,
            schedules_file: vars.path(SCHEDULES_FILE, Metadata::is_file, "no such file")?,
            hooks_file: vars.path(HOOKS_FILE, Metadata::is_file, "no such file")?,
        })
    }
}

const AT_LEAST_ONE: &str = "expected a whole number of at least 1";
const SHARDS_EXPECTED: &str = "expected a whole number from 1 to 100";
const COMPAT_EXPECTED: &str = "expected whole minutes (0: no compatibility Scan)";
const MILLIS: &str = "expected whole milliseconds";
const SECONDS: &str = "expected a non-negative number of seconds";
const PAST_VISIBILITY: &str = "SQS hides a message for at most 43200 seconds";

fn retention_expected() -> String {
    InvalidRetention.to_string()
}

impl Config {
    /// How long to hide the message of a SUSPENDED execution: `suspend_recheck` on the first
    /// receive, doubling with each receive up to `suspend_recheck_max`.
    pub fn park_policy(&self) -> harel_runtime::worker::ParkPolicy {
        harel_runtime::worker::ParkPolicy {
            first: self.suspend_recheck,
            max: self.suspend_recheck_max,
        }
    }
}

/// The environment as the configuration reads it: a blank value is an unset one, and every
/// refusal names the variable and quotes its value as set.
pub(crate) struct Vars<F>(pub(crate) F);

impl<F: Fn(&str) -> Option<String>> Vars<F> {
    /// The value, untrimmed, when set and not blank.
    pub(crate) fn string(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.trim().is_empty())
    }

    fn required(&self, name: &'static str) -> Result<String, ConfigError> {
        self.string(name).ok_or(ConfigError::Missing(name))
    }

    /// Unset is an error only when the value is `needed`.
    fn needed(&self, name: &'static str, needed: bool) -> Result<Option<String>, ConfigError> {
        match self.string(name) {
            None if needed => Err(ConfigError::Missing(name)),
            value => Ok(value),
        }
    }

    fn invalid(&self, name: &'static str, reason: &str) -> ConfigError {
        invalid(name, &self.string(name).unwrap_or_default(), reason)
    }

    /// A number in `range`, `default` when unset.
    fn number<T>(
        &self,
        name: &'static str,
        default: T,
        range: impl RangeBounds<T>,
        expected: &str,
    ) -> Result<T, ConfigError>
    where
        T: FromStr + PartialOrd,
        T::Err: std::error::Error + Send + Sync + 'static,
    {
        match self.string(name) {
            None => Ok(default),
            Some(value) => parse_in(name, &value, range, expected),
        }
    }

    /// Seconds, fractions allowed, `default` when unset.
    fn duration_secs(&self, name: &'static str, default: f64) -> Result<Duration, ConfigError> {
        // the full range refuses nothing: no reason is ever shown
        self.duration_secs_in(name, default, .., "")
    }

    /// Seconds in `range`, refused for `out_of_range` outside it.
    fn duration_secs_in(
        &self,
        name: &'static str,
        default: f64,
        range: impl RangeBounds<Duration>,
        out_of_range: &str,
    ) -> Result<Duration, ConfigError> {
        let Some(value) = self.string(name) else {
            return Ok(Duration::from_secs_f64(default));
        };
        let secs: f64 = value
            .trim()
            .parse()
            .map_err(|e| unreadable(name, &value, SECONDS, e))?;
        // negative, NaN, infinite or past Duration's range
        let duration =
            Duration::try_from_secs_f64(secs).map_err(|e| unreadable(name, &value, SECONDS, e))?;
        if !range.contains(&duration) {
            return Err(invalid(name, &value, out_of_range));
        }
        Ok(duration)
    }

    /// harel reads "1"/"true"/"yes"/"on" (any case) as on and anything else as off; a value
    /// that is neither a yes nor a no is refused here rather than read as off.
    /// [`COMMIT_MODE`], `compat` when unset.
    fn commit_mode(&self) -> Result<CommitMode, ConfigError> {
        match self.string(COMMIT_MODE) {
            None => Ok(CommitMode::default()),
            Some(value) => value.parse().map_err(|e: harel_stack::InvalidCommitMode| {
                invalid(COMMIT_MODE, &value, &e.to_string())
            }),
        }
    }

    fn bool(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        let Some(value) = self.string(name) else {
            return Ok(default);
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(invalid(name, &value, "expected true or false")),
        }
    }

    /// An existing path of the kind `is` accepts (a directory, a file), `None` when unset.
    fn path(
        &self,
        name: &'static str,
        is: fn(&Metadata) -> bool,
        otherwise: &str,
    ) -> Result<Option<PathBuf>, ConfigError> {
        let Some(value) = self.string(name) else {
            return Ok(None);
        };
        let path = PathBuf::from(value.trim());
        match std::fs::metadata(&path) {
            Ok(metadata) if is(&metadata) => Ok(Some(path)),
            Ok(_) => Err(invalid(name, &value, otherwise)),
            Err(e) => Err(unreadable(name, &value, otherwise, e)),
        }
    }

    /// An http(s) URL when set.
    fn url(&self, name: &'static str) -> Result<Option<String>, ConfigError> {
        self.string(name)
            .map(|url| check_url(name, url))
            .transpose()
    }
}

/// `value` (trimmed) as a `T` in `range`.
fn parse_in<T>(
    name: &'static str,
    value: &str,
    range: impl RangeBounds<T>,
    expected: &str,
) -> Result<T, ConfigError>
where
    T: FromStr + PartialOrd,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    match value.trim().parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(n),
        Ok(_) => Err(invalid(name, value, expected)),
        Err(e) => Err(unreadable(name, value, expected, e)),
    }
}

fn invalid(name: &'static str, value: &str, reason: &str) -> ConfigError {
    ConfigError::Invalid {
        name,
        value: value.to_string(),
        reason: reason.to_string(),
        source: None,
    }
}

/// [`invalid`], with the error that made the value unreadable as its source.
fn unreadable(
    name: &'static str,
    value: &str,
    reason: &str,
    cause: impl Into<Cause>,
) -> ConfigError {
    ConfigError::Invalid {
        name,
        value: value.to_string(),
        reason: reason.to_string(),
        source: Some(cause.into()),
    }
}

/// harel's table-name rule (`{prefix}_executions`, ...), shared with harel Python.
fn table_prefix(prefix: String) -> Result<String, ConfigError> {
    let mut chars = prefix.chars();
    let identifier = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && prefix.len() <= 30;
    if !identifier {
        return Err(invalid(
            TABLE_PREFIX,
            &prefix,
            "expected an identifier (a letter or _, then letters, digits or _; at most 30 characters)",
        ));
    }
    Ok(prefix)
}

fn check_url(name: &'static str, url: String) -> Result<String, ConfigError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        None => Err(invalid(name, &url, "expected an http:// or https:// URL")),
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            Err(invalid(name, &url, "the URL has no host"))
        }
        Some(_) => Ok(url),
    }
}

fn fifo_url(name: &'static str, url: String) -> Result<String, ConfigError> {
    let url = check_url(name, url)?;
    if !url.ends_with(".fifo") {
        return Err(invalid(
            name,
            &url,
            "harel needs a FIFO queue (its URL ends in .fifo): the group is the one-writer lock",
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const BASE: [(&str, &str); 5] = [
        (REGION, "us-east-1"),
        (TABLE_PREFIX, "harel_"),
        (QUEUE_URL, "http://localhost:5000/123/harel.fifo"),
        (DLQ_URL, "http://localhost:5000/123/harel-dlq.fifo"),
        (IDEMPOTENCY_TABLE, "idem"),
    ];

    #[test]
    fn reads_everything_with_defaults() {
        let c = Config::from_lookup(Role::Worker, env(&BASE)).expect("valid");
        assert_eq!(c.table_prefix, "harel_");
        assert_eq!(c.worker_concurrency, 8);
        assert_eq!(c.suspend_recheck, Duration::from_secs(5));
        assert_eq!(c.sweep_interval, Duration::from_secs(1));
        assert_eq!(c.suspend_recheck_max, Duration::from_secs(900));
        assert_eq!(c.sweep_window, Duration::from_secs(60));
        assert_eq!(c.compat_sweep_minutes, 5);
        assert_eq!(c.timer_shards, 8);
        assert_eq!(c.sweeper_function, None);
        assert_eq!(c.commit_mode, CommitMode::Compat);
    }

    #[test]
    fn reads_the_commit_mode_and_refuses_an_unknown_one() {
        let mut e = BASE.to_vec();
        e.push((COMMIT_MODE, "lean"));
        let c = Config::from_lookup(Role::Worker, env(&e)).expect("valid");
        assert_eq!(c.commit_mode, CommitMode::Lean);
        let mut e = BASE.to_vec();
        e.push((COMMIT_MODE, "fast"));
        let err = Config::from_lookup(Role::Relay, env(&e)).expect_err("refused");
        assert!(
            err.to_string()
                .starts_with("HAREL_COMMIT_MODE=\"fast\" is invalid: expected compat"),
            "{err}"
        );
    }

    #[test]
    fn reads_the_sweepers_settings() {
        let mut e = BASE.to_vec();
        e.push((COMPAT_SWEEP_MINUTES, "0"));
        e.push((SWEEPER_FUNCTION, " harel-Sweeper "));
        let c = Config::from_lookup(Role::Worker, env(&e)).expect("valid");
        assert_eq!(c.compat_sweep_minutes, 0);
        assert_eq!(c.sweeper_function.as_deref(), Some("harel-Sweeper"));
        let mut e = BASE.to_vec();
        e.push((COMPAT_SWEEP_MINUTES, "-1"));
        let err = Config::from_lookup(Role::Sweeper, env(&e)).expect_err("refused");
        assert!(err.to_string().contains(COMPAT_SWEEP_MINUTES), "{err}");
        for (shards, ok) in [("1", true), ("100", true), ("0", false), ("101", false)] {
            let mut e = BASE.to_vec();
            e.push((TIMER_SHARDS, shards));
            assert_eq!(
                Config::from_lookup(Role::Sweeper, env(&e)).is_ok(),
                ok,
                "{shards}"
            );
        }
    }

    #[test]
    fn reads_the_definitions_dir_and_the_action_map() {
        let dir = std::env::temp_dir();
        let c = Config::from_lookup(Role::Worker, env(&BASE)).expect("valid");
        assert_eq!((c.definitions_dir, c.actions_file), (None, None));
        let file = dir.join(format!("harel-config-actions-{}.json", std::process::id()));
        std::fs::write(&file, "{}").expect("write");
        let (d, f) = (dir.display().to_string(), file.display().to_string());
        let mut e = BASE.to_vec();
        e.push((DEFINITIONS_DIR, &d));
        e.push((ACTIONS_FILE, &f));
        let c = Config::from_lookup(Role::Relay, env(&e)).expect("valid");
        assert_eq!(c.definitions_dir, Some(dir.clone()));
        assert_eq!(c.actions_file, Some(file.clone()));
        for (name, value) in [
            (DEFINITIONS_DIR, f.as_str()),
            (ACTIONS_FILE, "/nonexistent/a.json"),
        ] {
            let mut e = BASE.to_vec();
            e.push((name, value));
            let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("refused");
            assert!(err.to_string().starts_with(name), "{err}");
        }
        std::fs::remove_file(&file).ok();
    }

    #[test]
    fn the_park_delay_doubles_per_receive_up_to_the_cap() {
        let c = Config::from_lookup(Role::Worker, env(&BASE)).expect("valid");
        let delays: Vec<u64> = (1..=10)
            .map(|n| c.park_policy().delay(n).as_secs())
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 320, 640, 900, 900]);
        // the first 8 parks hide it 1275 s, each later one 900 s
        assert_eq!(delays[..8].iter().sum::<u64>(), 1275);
        // a count of 0 (never sent by SQS) is the first receive; huge counts stay capped
        assert_eq!(c.park_policy().delay(0), Duration::from_secs(5));
        assert_eq!(c.park_policy().delay(u32::MAX), Duration::from_secs(900));

        let mut e = BASE.to_vec();
        e.push((SUSPEND_RECHECK, "1.5"));
        e.push((SUSPEND_RECHECK_MAX, "4"));
        let c = Config::from_lookup(Role::Worker, env(&e)).expect("valid");
        let delays: Vec<f64> = (1..=4)
            .map(|n| c.park_policy().delay(n).as_secs_f64())
            .collect();
        assert_eq!(delays, [1.5, 3.0, 4.0, 4.0]);

        let mut e = BASE.to_vec();
        e.push((SUSPEND_RECHECK, "0"));
        let c = Config::from_lookup(Role::Worker, env(&e)).expect("valid");
        assert_eq!(c.park_policy().delay(7), Duration::ZERO);
    }

    #[test]
    fn the_park_cap_is_checked() {
        let mut e = BASE.to_vec();
        e.push((SUSPEND_RECHECK_MAX, "43201"));
        let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("past SQS's max");
        assert!(
            err.to_string()
                .starts_with("HAREL_SUSPEND_RECHECK_MAX_SECONDS="),
            "{err}"
        );

        let mut e = BASE.to_vec();
        e.push((SUSPEND_RECHECK, "60"));
        e.push((SUSPEND_RECHECK_MAX, "30"));
        let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("below the first delay");
        assert!(
            err.to_string()
                .contains("below HAREL_SUSPEND_RECHECK_SECONDS"),
            "{err}"
        );

        // unset, the cap never undercuts a first delay past 900 s
        let mut e = BASE.to_vec();
        e.push((SUSPEND_RECHECK, "3600"));
        let c = Config::from_lookup(Role::Worker, env(&e)).expect("valid");
        assert_eq!(c.park_policy().delay(3), Duration::from_secs(3600));
    }

    #[test]
    fn the_trace_is_off_by_default_and_read_as_harel_reads_it() {
        let c = Config::from_lookup(Role::Worker, env(&BASE)).expect("valid");
        assert!(!c.trace);
        assert_eq!(c.trace_max, 200);
        for (value, on) in [
            ("true", true),
            ("1", true),
            ("On", true),
            ("false", false),
            ("0", false),
        ] {
            let mut e = BASE.to_vec();
            e.push((TRACE, value));
            e.push((TRACE_MAX, "3"));
            let c = Config::from_lookup(Role::Relay, env(&e)).expect("valid");
            assert_eq!((c.trace, c.trace_max), (on, 3), "{value}");
        }
    }

    #[test]
    fn retention_defaults_to_30_days_and_0_keeps_forever() {
        let c = Config::from_lookup(Role::Worker, env(&BASE)).expect("valid");
        assert_eq!(c.retention, Duration::from_secs(30 * 86400));
        for (value, secs) in [("0", 0), (" 7 ", 7 * 86400)] {
            let mut e = BASE.to_vec();
            e.push((RETENTION_DAYS, value));
            let c = Config::from_lookup(Role::Relay, env(&e)).expect("valid");
            assert_eq!(c.retention, Duration::from_secs(secs), "{value:?}");
        }
        for bad in ["-1", "1.5", "30d", "36501"] {
            let mut e = BASE.to_vec();
            e.push((RETENTION_DAYS, bad));
            let err = Config::from_lookup(Role::Sweeper, env(&e)).expect_err(bad);
            assert!(
                err.to_string().starts_with("HAREL_RETENTION_DAYS="),
                "{err}"
            );
        }
    }

    #[test]
    fn missing_settings_name_the_variable() {
        for (name, _) in BASE {
            let rest: Vec<(&str, &str)> =
                BASE.iter().copied().filter(|(k, _)| *k != name).collect();
            let err = Config::from_lookup(Role::Worker, env(&rest)).expect_err("missing");
            assert!(err.to_string().contains(name), "{err}");
        }
        // the relay needs neither the DLQ nor the idempotency table
        let relay: Vec<(&str, &str)> = BASE[..3].to_vec();
        Config::from_lookup(Role::Relay, env(&relay)).expect("enough for the relay");
    }

    #[test]
    fn an_unreadable_value_keeps_why_as_its_source() {
        use std::error::Error;
        let refused = |name: &'static str, value: &'static str| {
            let mut e = BASE.to_vec();
            e.push((name, value));
            Config::from_lookup(Role::Worker, env(&e)).expect_err(value)
        };
        let err = refused(WORKER_CONCURRENCY, "zero");
        let source = err.source().expect("the parse error");
        assert_eq!(source.to_string(), "invalid digit found in string");
        // parsed, but out of range: nothing underneath
        assert!(refused(WORKER_CONCURRENCY, "0").source().is_none());
        // past Duration's range: refused, not a panic
        let err = refused(SWEEP_WINDOW, "1e300");
        assert!(
            err.to_string().starts_with("HAREL_SWEEP_WINDOW_SECONDS="),
            "{err}"
        );
        assert!(err.source().is_some());
        assert!(refused(DEFINITIONS_DIR, "/nonexistent").source().is_some());
    }

    #[test]
    fn wrong_settings_name_the_variable_and_why() {
        let mut e = BASE.to_vec();
        e[2] = (QUEUE_URL, "http://localhost:5000/123/standard");
        let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("not FIFO");
        assert!(err.to_string().starts_with("HAREL_QUEUE_URL="), "{err}");
        assert!(err.to_string().contains("FIFO"), "{err}");

        let mut e = BASE.to_vec();
        e.push((WORKER_CONCURRENCY, "zero"));
        let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("bad number");
        assert!(err.to_string().contains(WORKER_CONCURRENCY), "{err}");

        let mut e = BASE.to_vec();
        e.push((ENDPOINT_URL, "localhost:4566"));
        let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("bad endpoint");
        assert!(err.to_string().contains(ENDPOINT_URL), "{err}");

        // the template's EndpointUrl: empty in AWS (accepted), else a URL
        let mut e = BASE.to_vec();
        e.push((LOCAL_ENDPOINT_URL, ""));
        Config::from_lookup(Role::Worker, env(&e)).expect("empty: not set");
        e.push((LOCAL_ENDPOINT_URL, "host.docker.internal:5000"));
        let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("bad endpoint");
        assert!(err.to_string().starts_with("HAREL_ENDPOINT_URL="), "{err}");

        let mut e = BASE.to_vec();
        e.push((TRACE, "maybe"));
        let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("not a yes or no");
        assert!(err.to_string().starts_with("HAREL_TRACE="), "{err}");

        let mut e = BASE.to_vec();
        e.push((TRACE_MAX, "0"));
        let err = Config::from_lookup(Role::Worker, env(&e)).expect_err("no ring");
        assert!(err.to_string().starts_with("HAREL_TRACE_MAX="), "{err}");

        let mut e = BASE.to_vec();
        e[1] = (TABLE_PREFIX, "bad prefix!");
        assert!(Config::from_lookup(Role::Worker, env(&e)).is_err());
    }
}
