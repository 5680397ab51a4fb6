//! One sweeper invocation, as `functions/sweeper`'s main runs it: on a scheduled tick, the
//! schedules' starts (`harel_schedule::tick`), then the timers (`harel_lambda::sweep`); a
//! wake from the worker (`{"harel:wake": ...}`) only fires timers.

use std::time::Instant;

use harel_lambda::wake::wake_until;
use harel_lambda::{sweep, SweepPlan, SweepReport};
use harel_schedule::{DynamoDbMarks, Schedules, TickReport};
use serde_json::{json, Value};

use crate::Services;

/// The schedules the sweeper starts and where their marks are kept.
#[derive(Clone, Debug)]
pub struct ScheduledStarts {
    /// The schedules file's entries, checked against the machines.
    pub schedules: Schedules,
    /// Each schedule's last start, kept in DynamoDB so a start happens once per slot.
    pub marks: DynamoDbMarks,
}

/// What one invocation did.
#[derive(Clone, Debug, Default)]
pub struct SweeperRun {
    /// The invocation was a worker's wake (a timer due before the next tick), not a tick.
    pub woken: bool,
    /// What the timer sweep fired and how many reads it made.
    pub sweep: SweepReport,
    /// The schedules' tick (None: a wake, or no schedules file).
    pub schedules: Option<TickReport>,
}

impl SweeperRun {
    /// The invocation's answer.
    pub fn answer(&self) -> Value {
        let r = &self.sweep;
        let mut answer = json!({"fired": r.fired, "polls": r.polls, "looks": r.looks});
        if let Some(t) = &self.schedules {
            answer["started"] = json!(t.started);
        }
        answer
    }
}

/// Why an invocation failed (Lambda retries a scheduled invocation).
#[derive(Debug, thiserror::Error)]
pub enum SweeperError {
    /// Firing timers failed (a store or queue error).
    #[error(transparent)]
    Sweep(#[from] harel_lambda::sweeper::SweepError),
    /// Starting the scheduled executions failed.
    #[error(transparent)]
    Schedules(#[from] harel_schedule::TickError),
}

/// Run one invocation with `payload` (the scheduled event, or a wake), working until
/// `deadline`.
pub async fn invoke(
    b: &Services,
    payload: &Value,
    deadline: Instant,
) -> Result<SweeperRun, SweeperError> {
    let now = b.driver.now();
    let c = &b.config;
    let woken = wake_until(payload);
    // the schedules ride on the minute tick only: a wake is about one timer
    let mut ticked = None;
    if let (None, Some(starts)) = (woken, &b.schedules) {
        let tick = harel_schedule::tick(
            &starts.schedules,
            &starts.marks,
            &b.store,
            &b.transport,
            now,
        )
        .await;
        match tick {
            Ok(report) => ticked = Some(Ok(report)),
            // the timers are still fired; the invocation then fails with it (and is retried)
            Err(e) => {
                tracing::error!(error = %e, "schedules tick failed");
                ticked = Some(Err(e));
            }
        }
    }
    let plan = match woken {
        Some(until) => SweepPlan::woken(now, until, c.sweep_window, c.sweep_interval, deadline),
        None => SweepPlan::scheduled(
            now,
            c.sweep_window,
            c.compat_sweep_minutes,
            c.sweep_interval,
            deadline,
        ),
    };
    let report = sweep(&b.store, &b.transport, || b.driver.now(), plan).await?;
    Ok(SweeperRun {
        woken: woken.is_some(),
        sweep: report,
        schedules: ticked.transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// examples/schedules.yaml is what the docs show: it must pass the sweeper's cold-start
    /// check against the machines the functions run.
    #[test]
    fn the_example_schedules_fit_the_app_s_machines() {
        let driver = crate::aws::driver().expect("the app's machines");
        let lookup = |m: &str| driver.definition(m).cloned();
        let file = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/schedules.yaml"
        ));
        let schedules = harel_schedule::load(file, Some(&lookup)).expect("a valid file");
        let names: Vec<&str> = schedules.names().collect();
        assert_eq!(names, ["nightly-orders", "approvals-sweep"]);
    }
}
