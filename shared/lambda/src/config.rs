//! The functions' configuration, read once at cold start from the environment every harel
//! tool shares. A missing or wrong setting is an error naming the variable, before any event.

use std::path::PathBuf;
use std::time::Duration;

pub const TABLE_PREFIX: &str = "HAREL_TABLE_PREFIX";
pub const QUEUE_URL: &str = "HAREL_QUEUE_URL";
pub const DLQ_URL: &str = "HAREL_DLQ_URL";
pub const IDEMPOTENCY_TABLE: &str = "IDEMPOTENCY_TABLE";
/// Seconds a message for a SUSPENDED execution stays hidden before it is looked at again.
pub const SUSPEND_RECHECK: &str = "HAREL_SUSPEND_RECHECK_SECONDS";
/// The longest a parked message stays hidden: the park delay doubles with every receive up
/// to this cap.
pub const SUSPEND_RECHECK_MAX: &str = "HAREL_SUSPEND_RECHECK_MAX_SECONDS";
/// SQS hides a message for at most 12 hours.
const MAX_VISIBILITY: Duration = Duration::from_secs(12 * 3600);
/// Groups of one batch the worker processes at the same time.
pub const WORKER_CONCURRENCY: &str = "HAREL_WORKER_CONCURRENCY";
/// The longest a sweeper sleeps between two looks at the next due time while a timer is due
/// in its window (the precision for a timer armed while a sweeper runs).
pub const SWEEP_INTERVAL: &str = "HAREL_SWEEP_INTERVAL_SECONDS";
/// Seconds ahead a sweeper invocation covers: timers due that soon are its to fire (a
/// schedule fires at most once a minute, so the default is the minute to the next tick).
pub const SWEEP_WINDOW: &str = "HAREL_SWEEP_WINDOW_SECONDS";
/// The compatibility Scan (timers harel Python armed, outside the time index) runs on the
/// minutes this divides; 0: never (no Python writer shares the tables).
pub const COMPAT_SWEEP_MINUTES: &str = "HAREL_COMPAT_SWEEP_MINUTES";
/// Shards of the timers' `by_due` index: the same on every writer and sweeper of the tables.
pub const TIMER_SHARDS: &str = "HAREL_TIMER_SHARDS";
/// The sweeper function the worker wakes for a timer due before the next tick (empty: none).
pub const SWEEPER_FUNCTION: &str = "HAREL_SWEEPER_FUNCTION";
/// Milliseconds of an invocation's remaining time the relay and sweeper keep in reserve.
pub const TIME_RESERVE: &str = "HAREL_TIME_RESERVE_MS";
/// Seconds an idempotency record lives (Powertools' `expires_after_seconds`).
pub const IDEMPOTENCY_EXPIRY: &str = "HAREL_IDEMPOTENCY_EXPIRY_SECONDS";
/// harel's opt-in execution timeline ("true"/"false").
pub const TRACE: &str = "HAREL_TRACE";
/// Steps kept per execution when the trace is on.
pub const TRACE_MAX: &str = "HAREL_TRACE_MAX";
/// harel's `DEFAULT_TRACE_MAX`.
pub const DEFAULT_TRACE_MAX: usize = 200;
/// Days finished work is kept before DynamoDB's TTL removes it (0: forever). See
/// `DynamoDbStore::with_retention` for what expires when.
pub const RETENTION_DAYS: &str = "HAREL_RETENTION_DAYS";
pub const DEFAULT_RETENTION_DAYS: u64 = 30;
/// A century: past that a retention is a typo, and epoch seconds would stop being dates.
const MAX_RETENTION_DAYS: u64 = 36_500;
/// A directory of `.stm` files (with their imports) whose machines the functions run besides
/// the compiled-in ones, loaded and validated at cold start (harel's `HAREL_DEFINITIONS_DIR`).
pub const DEFINITIONS_DIR: &str = "HAREL_DEFINITIONS_DIR";
/// The action map (JSON, TOML or YAML): actions bound to remote functions. Unset: the
/// `actions.{json,toml,yaml,yml}` in `HAREL_DEFINITIONS_DIR`, if any.
pub const ACTIONS_FILE: &str = "HAREL_ACTIONS_FILE";
pub const REGION: &str = "AWS_REGION";
pub const ENDPOINT_URL: &str = "AWS_ENDPOINT_URL";
/// The endpoint of every AWS call when set and not empty (the template's `EndpointUrl`: empty
/// in AWS, moto's for `sam local invoke`); takes precedence over `AWS_ENDPOINT_URL`.
pub const LOCAL_ENDPOINT_URL: &str = "HAREL_ENDPOINT_URL";

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("{name}={value:?} is invalid: {reason}")]
    Invalid {
        name: &'static str,
        value: String,
        reason: String,
    },
}

/// Which function is reading its configuration: each needs a different part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Worker,
    Relay,
    Sweeper,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub table_prefix: String,
    pub queue_url: String,
    /// Required by the worker (malformed messages go there).
    pub dlq_url: Option<String>,
    /// Required by the worker.
    pub idempotency_table: Option<String>,
    /// The first park's delay; each later receive of the same message doubles it.
    pub suspend_recheck: Duration,
    /// The cap on a park's delay.
    pub suspend_recheck_max: Duration,
    pub worker_concurrency: usize,
    pub sweep_interval: Duration,
    pub sweep_window: Duration,
    /// The sweeper's compatibility Scan runs every this many minutes (0: never).
    pub compat_sweep_minutes: u64,
    /// Shards of the timers' index (1 to 100, default 8): the store's `with_due_shards`.
    pub timer_shards: u32,
    /// The worker wakes this function (None: no wakes; timers then fire on the ticks).
    pub sweeper_function: Option<String>,
    pub time_reserve: Duration,
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
}

impl Config {
    pub fn from_env(role: Role) -> Result<Self, ConfigError> {
        Self::from_lookup(role, |name| std::env::var(name).ok())
    }

    /// Read through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(
        role: Role,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let get = |name: &'static str| lookup(name).filter(|v| !v.trim().is_empty());
        let required = |name: &'static str| get(name).ok_or(ConfigError::Missing(name));
        // the SDK would otherwise fail on the first call, not at cold start
        if get(REGION).is_none() && get("AWS_DEFAULT_REGION").is_none() {
            return Err(ConfigError::Missing(REGION));
        }
        if let Some(endpoint) = get(ENDPOINT_URL) {
            check_url(ENDPOINT_URL, &endpoint)?;
        }
        if let Some(endpoint) = get(LOCAL_ENDPOINT_URL) {
            check_url(LOCAL_ENDPOINT_URL, &endpoint)?;
        }
        let table_prefix = required(TABLE_PREFIX)?;
        // harel's table-name rule (`{prefix}_executions`, ...), shared with harel Python
        let mut chars = table_prefix.chars();
        let identifier = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && table_prefix.len() <= 30;
        if !identifier {
            return Err(invalid(
                TABLE_PREFIX,
                &table_prefix,
                "expected an identifier (a letter or _, then letters, digits or _; at most 30 characters)",
            ));
        }
        let queue_url = required(QUEUE_URL)?;
        check_fifo_url(QUEUE_URL, &queue_url)?;
        let needs_worker = role == Role::Worker;
        let dlq_url = match get(DLQ_URL) {
            Some(url) => {
                check_fifo_url(DLQ_URL, &url)?;
                Some(url)
            }
            None if needs_worker => return Err(ConfigError::Missing(DLQ_URL)),
            None => None,
        };
        let idempotency_table = match get(IDEMPOTENCY_TABLE) {
            Some(t) => Some(t),
            None if needs_worker => return Err(ConfigError::Missing(IDEMPOTENCY_TABLE)),
            None => None,
        };
        let seconds = |name: &'static str, default: f64| -> Result<Duration, ConfigError> {
            match get(name) {
                None => Ok(Duration::from_secs_f64(default)),
                Some(v) => match v.trim().parse::<f64>() {
                    Ok(s) if s.is_finite() && s >= 0.0 => Ok(Duration::from_secs_f64(s)),
                    _ => Err(invalid(
                        name,
                        &v,
                        "expected a non-negative number of seconds",
                    )),
                },
            }
        };
        let worker_concurrency = match get(WORKER_CONCURRENCY) {
            None => 8,
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(invalid(
                        WORKER_CONCURRENCY,
                        &v,
                        "expected a whole number of at least 1",
                    ))
                }
            },
        };
        // harel reads "1"/"true"/"yes"/"on" (any case) as on and anything else as off; a
        // value that is neither a yes nor a no is refused here rather than read as off
        let trace = match get(TRACE).map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("0" | "false" | "no" | "off") => false,
            Some("1" | "true" | "yes" | "on") => true,
            Some(_) => {
                return Err(invalid(
                    TRACE,
                    &get(TRACE).unwrap_or_default(),
                    "expected true or false",
                ))
            }
        };
        let trace_max = match get(TRACE_MAX) {
            None => DEFAULT_TRACE_MAX,
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n >= 1 => n,
                // harel takes 0 as "no ring" (unbounded): refused, since an unbounded
                // trace outgrows the partition and the bill unnoticed
                _ => {
                    return Err(invalid(
                        TRACE_MAX,
                        &v,
                        "expected a whole number of at least 1",
                    ))
                }
            },
        };
        let sweep_interval = seconds(SWEEP_INTERVAL, 1.0)?;
        if sweep_interval.is_zero() {
            return Err(invalid(
                SWEEP_INTERVAL,
                "0",
                "the sweeper would spin: use at least 0.1",
            ));
        }
        let suspend_recheck = seconds(SUSPEND_RECHECK, 5.0)?;
        if suspend_recheck > MAX_VISIBILITY {
            return Err(invalid(
                SUSPEND_RECHECK,
                &suspend_recheck.as_secs().to_string(),
                "SQS hides a message for at most 43200 seconds",
            ));
        }
        // unset, the cap is 900 s, or the first delay when that is longer (a deployment that
        // set only the recheck keeps working)
        let suspend_recheck_max = seconds(
            SUSPEND_RECHECK_MAX,
            suspend_recheck.as_secs_f64().max(900.0),
        )?;
        if suspend_recheck_max > MAX_VISIBILITY {
            return Err(invalid(
                SUSPEND_RECHECK_MAX,
                &suspend_recheck_max.as_secs().to_string(),
                "SQS hides a message for at most 43200 seconds",
            ));
        }
        if suspend_recheck_max < suspend_recheck {
            return Err(invalid(
                SUSPEND_RECHECK_MAX,
                &suspend_recheck_max.as_secs_f64().to_string(),
                &format!("the cap is below {SUSPEND_RECHECK} ({suspend_recheck:?})"),
            ));
        }
        Ok(Config {
            table_prefix,
            queue_url,
            dlq_url,
            idempotency_table,
            suspend_recheck,
            suspend_recheck_max,
            worker_concurrency,
            sweep_interval,
            sweep_window: seconds(SWEEP_WINDOW, 60.0)?,
            compat_sweep_minutes: match get(COMPAT_SWEEP_MINUTES) {
                None => 5,
                Some(v) => v.trim().parse::<u64>().map_err(|_| {
                    invalid(
                        COMPAT_SWEEP_MINUTES,
                        &v,
                        "expected whole minutes (0: no compatibility Scan)",
                    )
                })?,
            },
            timer_shards: match get(TIMER_SHARDS) {
                None => 8,
                Some(v) => match v.trim().parse::<u32>() {
                    Ok(n) if (1..=100).contains(&n) => n,
                    _ => {
                        return Err(invalid(
                            TIMER_SHARDS,
                            &v,
                            "expected a whole number from 1 to 100",
                        ))
                    }
                },
            },
            sweeper_function: get(SWEEPER_FUNCTION).map(|v| v.trim().to_string()),
            time_reserve: Duration::from_millis(match get(TIME_RESERVE) {
                None => 3000,
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| invalid(TIME_RESERVE, &v, "expected whole milliseconds"))?,
            }),
            idempotency_expiry: seconds(IDEMPOTENCY_EXPIRY, 3600.0)?,
            trace,
            trace_max,
            retention: match get(RETENTION_DAYS) {
                None => retention_days(DEFAULT_RETENTION_DAYS),
                Some(v) => parse_retention_days(&v)?,
            },
            definitions_dir: match get(DEFINITIONS_DIR) {
                None => None,
                Some(v) if std::path::Path::new(v.trim()).is_dir() => Some(PathBuf::from(v.trim())),
                Some(v) => return Err(invalid(DEFINITIONS_DIR, &v, "not a directory")),
            },
            actions_file: match get(ACTIONS_FILE) {
                None => None,
                Some(v) if std::path::Path::new(v.trim()).is_file() => {
                    Some(PathBuf::from(v.trim()))
                }
                Some(v) => return Err(invalid(ACTIONS_FILE, &v, "no such file")),
            },
        })
    }
}

fn retention_days(days: u64) -> Duration {
    Duration::from_secs(days * 24 * 3600)
}

/// `HAREL_RETENTION_DAYS` (also the CLI's `--retention-days`): whole days, 0 = keep forever.
pub fn parse_retention_days(value: &str) -> Result<Duration, ConfigError> {
    match value.trim().parse::<u64>() {
        Ok(days) if days <= MAX_RETENTION_DAYS => Ok(retention_days(days)),
        _ => Err(invalid(
            RETENTION_DAYS,
            value,
            &format!("expected whole days from 0 (keep forever) to {MAX_RETENTION_DAYS}"),
        )),
    }
}

impl Config {
    /// How long to hide the message of a SUSPENDED execution on its `receive_count`-th
    /// receive (1 = first): `suspend_recheck * 2^(receive_count - 1)`, at most
    /// `suspend_recheck_max`. Each park is one more receive towards the queue's
    /// `maxReceiveCount`; the growing delay lets a long suspension outlast it (harel's
    /// constant `nack(delay)` sends the message to the DLQ after `maxReceiveCount` rechecks).
    pub fn suspend_park_delay(&self, receive_count: u32) -> Duration {
        let doublings = receive_count.saturating_sub(1).min(31);
        self.suspend_recheck
            .checked_mul(1u32 << doublings)
            .map_or(self.suspend_recheck_max, |d| {
                d.min(self.suspend_recheck_max)
            })
    }
}

fn invalid(name: &'static str, value: &str, reason: &str) -> ConfigError {
    ConfigError::Invalid {
        name,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

fn check_url(name: &'static str, url: &str) -> Result<(), ConfigError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| invalid(name, url, "expected an http:// or https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(invalid(name, url, "the URL has no host"));
    }
    Ok(())
}

fn check_fifo_url(name: &'static str, url: &str) -> Result<(), ConfigError> {
    check_url(name, url)?;
    if !url.ends_with(".fifo") {
        return Err(invalid(
            name,
            url,
            "harel needs a FIFO queue (its URL ends in .fifo): the group is the one-writer lock",
        ));
    }
    Ok(())
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
            .map(|n| c.suspend_park_delay(n).as_secs())
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 320, 640, 900, 900]);
        // the first 8 parks hide it 1275 s, each later one 900 s
        assert_eq!(delays[..8].iter().sum::<u64>(), 1275);
        // a count of 0 (never sent by SQS) is the first receive; huge counts stay capped
        assert_eq!(c.suspend_park_delay(0), Duration::from_secs(5));
        assert_eq!(c.suspend_park_delay(u32::MAX), Duration::from_secs(900));

        let mut e = BASE.to_vec();
        e.push((SUSPEND_RECHECK, "1.5"));
        e.push((SUSPEND_RECHECK_MAX, "4"));
        let c = Config::from_lookup(Role::Worker, env(&e)).expect("valid");
        let delays: Vec<f64> = (1..=4)
            .map(|n| c.suspend_park_delay(n).as_secs_f64())
            .collect();
        assert_eq!(delays, [1.5, 3.0, 4.0, 4.0]);

        let mut e = BASE.to_vec();
        e.push((SUSPEND_RECHECK, "0"));
        let c = Config::from_lookup(Role::Worker, env(&e)).expect("valid");
        assert_eq!(c.suspend_park_delay(7), Duration::ZERO);
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
        assert_eq!(c.suspend_park_delay(3), Duration::from_secs(3600));
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
