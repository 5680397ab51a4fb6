//! The deployed stack's contract with everything that runs in it or operates it: the names of
//! the configuration variables the functions read, with the defaults they apply. The functions
//! (`harel-lambda`) and the operator tools (the `harel` CLI, which reads the same variables to
//! find the same tables and queue) share it without depending on each other; `template.yaml`
//! sets them.
//!
//! Only names, defaults and the parsing both sides must agree on: how each function reads its
//! whole configuration is `harel_lambda::config`'s.

use std::time::Duration;

/// The prefix of the DynamoDB tables (`{prefix}_executions`, ...).
pub const TABLE_PREFIX: &str = "HAREL_TABLE_PREFIX";
/// The FIFO queue the worker reads and every client sends to.
pub const QUEUE_URL: &str = "HAREL_QUEUE_URL";
/// The queue's dead-letter queue (messages that can never succeed, with the reason).
pub const DLQ_URL: &str = "HAREL_DLQ_URL";
/// The Powertools-compatible idempotency table.
pub const IDEMPOTENCY_TABLE: &str = "IDEMPOTENCY_TABLE";
/// Seconds a message for a SUSPENDED execution stays hidden before it is looked at again.
pub const SUSPEND_RECHECK: &str = "HAREL_SUSPEND_RECHECK_SECONDS";
/// The longest a parked message stays hidden: the park delay doubles with every receive up
/// to this cap.
pub const SUSPEND_RECHECK_MAX: &str = "HAREL_SUSPEND_RECHECK_MAX_SECONDS";
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
/// How commits lay out the dedupe mark: `compat` (the default: harel's `processed` table,
/// shared with harel Python) or `lean` (a window of marks in the execution item, one write a
/// step; only where no harel Python process writes). Every writer of a stack takes the same.
pub const COMMIT_MODE: &str = "HAREL_COMMIT_MODE";
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
/// Days finished work is kept before DynamoDB's TTL removes it (0: forever). See
/// `DynamoDbStore::with_retention` for what expires when.
pub const RETENTION_DAYS: &str = "HAREL_RETENTION_DAYS";
/// The retention when [`RETENTION_DAYS`] is unset.
pub const DEFAULT_RETENTION_DAYS: u64 = 30;
/// A century: past that a retention is a typo, and epoch seconds would stop being dates.
pub const MAX_RETENTION_DAYS: u64 = 36_500;
/// A directory of `.stm` files (with their imports) whose machines the functions run besides
/// the compiled-in ones, loaded and validated at cold start (harel's `HAREL_DEFINITIONS_DIR`).
pub const DEFINITIONS_DIR: &str = "HAREL_DEFINITIONS_DIR";
/// The action map (JSON, TOML or YAML): actions bound to remote functions. Unset: the
/// `actions.{json,toml,yaml,yml}` in `HAREL_DEFINITIONS_DIR`, if any.
pub const ACTIONS_FILE: &str = "HAREL_ACTIONS_FILE";
/// The EventBridge bus execution status changes and `harel.lib.publish`'s domain events go to
/// (a name or an ARN; the template's default is the account's `default` bus). Unset or empty:
/// no events are written or put.
pub const EVENT_BUS: &str = "HAREL_EVENT_BUS";
/// The events' `source` (default `harel`).
pub const EVENT_SOURCE: &str = "HAREL_EVENT_SOURCE";
/// Only status changes to these statuses, comma-separated (`FAILED,DONE`; unset: all).
pub const EVENT_STATUSES: &str = "HAREL_EVENT_STATUSES";
/// Only status changes of these machines, comma-separated (unset: all).
pub const EVENT_MACHINES: &str = "HAREL_EVENT_MACHINES";
/// The standard SQS queue events that cannot be put go to, with the reason (the relay's).
pub const EVENTS_DLQ_URL: &str = "HAREL_EVENTS_DLQ_URL";
/// The schedules file (JSON, TOML or YAML): machines the sweeper starts on a cron or a rate
/// (`harel_schedule`). Unset or empty: no schedules.
pub const SCHEDULES_FILE: &str = "HAREL_SCHEDULES_FILE";
/// The hooks file (JSON, TOML or YAML): the API's verified webhooks (`harel_hooks`). Unset
/// or empty: no webhooks.
pub const HOOKS_FILE: &str = "HAREL_HOOKS_FILE";
/// The AWS region of every client (Lambda sets it; `AWS_DEFAULT_REGION` is accepted in
/// its place). Checked at cold start, so a missing region fails there, not on a first call.
pub const REGION: &str = "AWS_REGION";
/// The AWS SDK's own endpoint override (moto's URL in tests); checked to be a URL at cold
/// start, and overridden by [`LOCAL_ENDPOINT_URL`].
pub const ENDPOINT_URL: &str = "AWS_ENDPOINT_URL";
/// The endpoint of every AWS call when set and not empty (the template's `EndpointUrl`: empty
/// in AWS, moto's for `sam local invoke`); takes precedence over `AWS_ENDPOINT_URL`.
pub const LOCAL_ENDPOINT_URL: &str = "HAREL_ENDPOINT_URL";

/// How a stack's commits record that an event was applied ([`COMMIT_MODE`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CommitMode {
    /// harel's layout: one dedupe mark item a step in the `processed` table, written in the
    /// step's transaction; harel Python reads and writes the same marks. Two items a step.
    #[default]
    Compat,
    /// The marks of the last steps kept in the execution item itself: a step without outbox,
    /// spawn, timer, trace or bus event is one conditional write of one item. harel Python
    /// neither reads these marks nor keeps them (its writes replace the item), so a stack
    /// that any harel Python process writes to must stay [`CommitMode::Compat`].
    Lean,
}

impl CommitMode {
    /// The value as [`COMMIT_MODE`] spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            CommitMode::Compat => "compat",
            CommitMode::Lean => "lean",
        }
    }
}

impl std::fmt::Display for CommitMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A [`COMMIT_MODE`] that is neither `compat` nor `lean`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected compat (harel's processed table, the default) or lean (marks in the execution item; no harel Python writer)")]
pub struct InvalidCommitMode;

impl std::str::FromStr for CommitMode {
    type Err = InvalidCommitMode;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim().to_ascii_lowercase().as_str() {
            "compat" | "" => Ok(CommitMode::Compat),
            "lean" => Ok(CommitMode::Lean),
            _ => Err(InvalidCommitMode),
        }
    }
}

/// A retention that is not whole days from 0 to [`MAX_RETENTION_DAYS`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected whole days from 0 (keep forever) to {MAX_RETENTION_DAYS}")]
pub struct InvalidRetention;

/// `HAREL_RETENTION_DAYS` (also the CLI's `--retention-days`): whole days, 0 = keep forever.
pub fn parse_retention_days(value: &str) -> Result<Duration, InvalidRetention> {
    match value.trim().parse::<u64>() {
        Ok(days) if days <= MAX_RETENTION_DAYS => Ok(retention_days(days)),
        _ => Err(InvalidRetention),
    }
}

/// `days` as a duration (the functions' default is [`DEFAULT_RETENTION_DAYS`]).
pub fn retention_days(days: u64) -> Duration {
    Duration::from_secs(days * 24 * 3600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_modes_parse_as_the_template_spells_them() {
        assert_eq!("compat".parse(), Ok(CommitMode::Compat));
        assert_eq!(" Lean ".parse(), Ok(CommitMode::Lean));
        assert_eq!("".parse(), Ok(CommitMode::Compat));
        for bad in ["fast", "leaner", "0"] {
            assert_eq!(bad.parse::<CommitMode>(), Err(InvalidCommitMode), "{bad:?}");
        }
        for mode in [CommitMode::Compat, CommitMode::Lean] {
            assert_eq!(mode.to_string().parse(), Ok(mode));
        }
    }

    #[test]
    fn retention_is_whole_days_within_a_century() {
        assert_eq!(
            parse_retention_days(" 2 "),
            Ok(Duration::from_secs(2 * 86_400))
        );
        assert_eq!(parse_retention_days("0"), Ok(Duration::ZERO));
        for bad in ["-1", "1.5", "", "36501", "ten"] {
            assert_eq!(parse_retention_days(bad), Err(InvalidRetention), "{bad:?}");
        }
    }
}
