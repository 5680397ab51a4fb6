//! Why a publish did not (fully) happen.

/// One message of a batch that SQS did not accept.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryFailure {
    /// Its index in the slice given to `publish_batch`.
    pub index: usize,
    /// SQS's error code for the entry (e.g. `InvalidParameterValue`, `InternalError`).
    pub code: String,
    /// SQS's explanation of the failure, as it gave it.
    pub message: String,
    /// SQS's verdict: the request itself is wrong and resending it cannot succeed.
    pub sender_fault: bool,
}

/// Why a publish, park or dead-letter move failed; on a batch, [`delivered`](Self::delivered)
/// says which messages were sent anyway.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The group id (given here) breaks SQS's rules, see [`check_group_id`](crate::check_group_id):
    /// refused before anything was sent, and resending cannot help.
    #[error("invalid SQS message group id {0:?}: 1 to 128 ASCII letters, digits or punctuation")]
    InvalidGroup(String),
    /// The whole call failed (network, throttling, a missing queue): nothing is known to
    /// have been sent.
    #[error("SQS request failed: {message}")]
    Request {
        /// What went wrong, the SDK's error chain included.
        message: String,
        /// The SDK's error, when the call itself failed.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// Some messages of a batch were sent and some were not, even after retrying the
    /// retryable ones; `delivered` holds the indices that were sent.
    #[error("{} of {} messages not sent: {}", failed.len(), failed.len() + delivered.len(), describe(failed))]
    Partial {
        /// Indices (into the batch given to `publish_batch`) of the messages that were sent.
        delivered: Vec<usize>,
        /// The messages that were not sent, each with SQS's reason.
        failed: Vec<EntryFailure>,
    },
}

impl TransportError {
    /// A failed call described by `message` alone.
    pub fn request(message: impl Into<String>) -> Self {
        TransportError::Request {
            message: message.into(),
            source: None,
        }
    }

    /// A failed SDK call: its full account (the error and each source under it, as the
    /// SDK's `DisplayErrorContext` gives it) as the message, the error kept as the source.
    pub fn sdk<E: std::error::Error + Send + Sync + 'static>(error: E) -> Self {
        TransportError::Request {
            message: chain(&error),
            source: Some(Box::new(error)),
        }
    }

    /// The indices of a batch known to be delivered despite the error.
    pub fn delivered(&self) -> &[usize] {
        match self {
            TransportError::Partial { delivered, .. } => delivered,
            _ => &[],
        }
    }
}

/// `error: its source: ...`, a source whose text its parent already says left out.
fn chain(error: &dyn std::error::Error) -> String {
    let mut said = error.to_string();
    let mut next = error.source();
    while let Some(source) = next {
        let text = source.to_string();
        if !said.contains(&text) {
            said.push_str(": ");
            said.push_str(&text);
        }
        next = source.source();
    }
    said
}

fn describe(failed: &[EntryFailure]) -> String {
    failed
        .iter()
        .map(|f| format!("#{} {}: {}", f.index, f.code, f.message))
        .collect::<Vec<_>>()
        .join("; ")
}
