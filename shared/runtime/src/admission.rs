//! What a host admits before it runs anything: the context a create starts from and the
//! gate an event meets by the execution's status (harel's `WorkerLogic` routing). The queue
//! worker applies them to each message; a sender that validates up front (the HTTP API, the
//! local server's queue) applies the very same rules, so what it accepts the worker runs.

use harel_model::schema::{check_context, with_defaults, ContextError};
use harel_model::{Definition, Object, Status};

/// The context a create of `defn` starts from: `context` with the schema's defaults filled
/// in, which must then fit the schema.
pub fn create_context(defn: &Definition, context: &Object) -> Result<Object, ContextError> {
    let context = with_defaults(&defn.context_schema, context);
    check_context(&defn.context_schema, &context, true)?;
    Ok(context)
}

/// Why an event is acknowledged without a step. Its text (`Display`) is what logs, the
/// idempotency layer's stored outcome and harel's own messages say; [`Skip::from_text`] reads
/// it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    /// No execution has the event's id (never created, or purged).
    #[error("no such execution")]
    NoSuchExecution,
    /// The event's processed mark was read with the execution.
    #[error("event already processed")]
    AlreadyProcessed,
    /// The read said "not processed", the commit's mark condition said otherwise: another
    /// writer committed it in between (a duplicate delivery).
    #[error("event already processed (found by the commit)")]
    ProcessedByAnotherWriter,
    /// A CANCELLED execution drops everything.
    #[error("execution is CANCELLED")]
    Cancelled,
    /// A PENDING execution (not started) takes its `Start` only.
    #[error("execution is PENDING (not started)")]
    NotStarted,
    /// A CANCELLING execution takes its `Cancel` only.
    #[error("execution is CANCELLING")]
    Cancelling,
}

impl Skip {
    const ALL: [Skip; 6] = [
        Skip::NoSuchExecution,
        Skip::AlreadyProcessed,
        Skip::ProcessedByAnotherWriter,
        Skip::Cancelled,
        Skip::NotStarted,
        Skip::Cancelling,
    ];

    /// The reason whose text is `text` (None for any other text).
    pub fn from_text(text: &str) -> Option<Skip> {
        Skip::ALL.into_iter().find(|s| s.to_string() == text)
    }
}

/// What a worker does with an event of `kind` for an execution in `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Step it (a DONE or FAILED execution's engine ignores a domain event itself).
    Run,
    /// Acknowledge it without effect, for this reason.
    Skip(Skip),
    /// Hold it until the execution is resumed (a SUSPENDED execution's backlog is kept).
    Park,
}

/// harel's routing by status: a CANCELLED execution drops everything; a PENDING one (not
/// started yet) discards all but its `Start` rather than park it, since parking would hold
/// the group and block the Start behind it; a CANCELLING one skips all but its `Cancel`.
pub fn gate(status: Status, kind: &str) -> Gate {
    match status {
        Status::Cancelled => Gate::Skip(Skip::Cancelled),
        Status::Suspended => Gate::Park,
        Status::Pending if kind != "Start" => Gate::Skip(Skip::NotStarted),
        Status::Cancelling if kind != "Cancel" => Gate::Skip(Skip::Cancelling),
        _ => Gate::Run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_by_status() {
        assert_eq!(gate(Status::Running, "Pay"), Gate::Run);
        assert_eq!(gate(Status::Suspended, "Pay"), Gate::Park);
        assert_eq!(gate(Status::Cancelling, "Cancel"), Gate::Run);
        assert_eq!(
            gate(Status::Cancelling, "Pay"),
            Gate::Skip(Skip::Cancelling)
        );
        assert_eq!(gate(Status::Pending, "Start"), Gate::Run);
        assert!(matches!(gate(Status::Cancelled, "Cancel"), Gate::Skip(_)));
    }

    #[test]
    fn every_reason_reads_back_from_its_text() {
        for skip in Skip::ALL {
            assert_eq!(Skip::from_text(&skip.to_string()), Some(skip));
        }
        assert_eq!(Skip::from_text("execution is DONE"), None);
    }
}
