//! The invocation a step runs in, as a value its host sets: the deadline by which a Lambda
//! invocation must have answered. A host scopes its work with [`within`]; the driver hands
//! [`deadline`] to each action in its [`crate::ActionContext`], so a remote action stops
//! retrying in time for the step to commit. Scoped to the host's tasks (a tokio task-local),
//! so two invocations in one process (tests, a long-lived host) never see each other's.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

tokio::task_local! {
    static DEADLINE: Option<Instant>;
}

/// Run `work` with `deadline` as its invocation's (None: no deadline, as in `harel run`).
/// A task spawned inside does not inherit it: scope that task's future too.
pub async fn within<F: Future>(deadline: Option<Instant>, work: F) -> F::Output {
    DEADLINE.scope(deadline, work).await
}

/// The deadline of the invocation this task runs in, if its host set one.
pub fn deadline() -> Option<Instant> {
    DEADLINE.try_with(|d| *d).ok().flatten()
}

/// A Lambda deadline (epoch milliseconds, as the runtime gives it) as an [`Instant`] on this
/// process's clock.
pub fn deadline_from_epoch_ms(epoch_ms: u64) -> Instant {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    Instant::now() + Duration::from_millis(epoch_ms.saturating_sub(now_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_deadline_is_seen_inside_its_scope_only() {
        assert_eq!(deadline(), None);
        let at = Instant::now() + Duration::from_secs(3);
        let seen = within(Some(at), async { deadline() }).await;
        assert_eq!(seen, Some(at));
        let other = within(None, async { deadline() }).await;
        assert_eq!(other, None);
        assert_eq!(deadline(), None);
    }
}
