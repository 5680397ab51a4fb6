//! How a function reports a failure a person must read: its error's `Display` and every
//! source's, each said once, on one log line and in what the Lambda runtime reports. Rust's
//! own report of an `Err` returned from `main`, and `{:?}` in a log field, print the `Debug`
//! dump instead (`Store(Other { message: …, source: Some(ServiceError(…`), which tells an
//! operator the shape of our types rather than what went wrong.

use std::error::Error;
use std::fmt;

/// `err` and its sources as one line: `a: b: c`. A source whose text its parent already
/// carries (ours often say what the SDK said, and keep its error as the source) is not
/// repeated.
pub fn chain(err: &(dyn Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// A failure as reported: the chain's text, for `Display` and `Debug` alike.
pub struct Reported(String);

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Reported {}

/// Log `err` at error level as `what` with its chain in `error`, and give it back as the
/// boxed error the Lambda runtime (an invocation's answer) or `main` (a failed cold start)
/// reports, readable either way.
pub fn failed<E: Error + 'static>(what: &str, err: E) -> Box<dyn Error + Send + Sync> {
    let text = chain(&err);
    tracing::error!(error = %text, "{what}");
    Box::new(Reported(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reading the timers")]
    struct Outer(#[source] Middle);

    #[derive(Debug, thiserror::Error)]
    #[error("DynamoDB Query on harel_timers: ResourceNotFoundException: index by_due")]
    struct Middle(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("ResourceNotFoundException: index by_due")]
    struct Inner;

    #[test]
    fn a_chain_says_each_cause_once() {
        let err = Outer(Middle(Inner));
        assert_eq!(
            chain(&err),
            "reading the timers: DynamoDB Query on harel_timers: ResourceNotFoundException: index by_due"
        );
    }

    #[test]
    fn a_reported_failure_reads_the_same_in_debug() {
        let reported = failed("sweep failed", Outer(Middle(Inner)));
        assert_eq!(format!("{reported:?}"), format!("{reported}"));
        assert!(!format!("{reported:?}").contains("Outer("));
    }
}
