//! The exit codes, one per kind of failure, so that scripts can tell them apart:
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | done |
//! | 1 | failed otherwise (and a command's own "no": `validate` found errors, `fmt --check` would change a file, `purge` refused a tree, as harel's) |
//! | 2 | usage: a wrong or missing argument or setting (clap's own errors, no table prefix, no queue URL, no region) |
//! | 3 | not found: no such execution, machine, table or stack |
//! | 4 | refused: the request is understood but not done (an execution that exists already, events for a finished one, a context or event data the machine's declarations refuse, a redrive target that is not a leaf) |
//! | 5 | AWS error: a request to AWS (or the emulator) failed: unreachable, credentials, throttling |
//!
//! A failure carries its kind as an [`Failure`] anywhere in its `anyhow` chain; one without is 1.

use std::fmt;
use std::process::ExitCode;

pub const USAGE: u8 = 2;
pub const NOT_FOUND: u8 = 3;
pub const REFUSED: u8 = 4;
pub const AWS: u8 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Usage,
    NotFound,
    Refused,
    Aws,
}

impl Kind {
    pub fn code(self) -> u8 {
        match self {
            Kind::Usage => USAGE,
            Kind::NotFound => NOT_FOUND,
            Kind::Refused => REFUSED,
            Kind::Aws => AWS,
        }
    }
}

/// An error message with its kind.
#[derive(Debug)]
pub struct Failure {
    pub kind: Kind,
    message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

fn failure(kind: Kind, message: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Failure {
        kind,
        message: message.to_string(),
    })
}

pub fn usage(message: impl fmt::Display) -> anyhow::Error {
    failure(Kind::Usage, message)
}

pub fn not_found(message: impl fmt::Display) -> anyhow::Error {
    failure(Kind::NotFound, message)
}

pub fn refused(message: impl fmt::Display) -> anyhow::Error {
    failure(Kind::Refused, message)
}

pub fn aws(message: impl fmt::Display) -> anyhow::Error {
    failure(Kind::Aws, message)
}

/// The kind of an error, from the first [`Failure`] in its chain.
pub fn kind_of(err: &anyhow::Error) -> Option<Kind> {
    err.chain()
        .find_map(|e| e.downcast_ref::<Failure>())
        .map(|f| f.kind)
}

/// The exit code of a failed command.
pub fn code_of(err: &anyhow::Error) -> ExitCode {
    ExitCode::from(kind_of(err).map_or(1, Kind::code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_kind_survives_context_and_plain_errors_are_one() {
        let e = Err::<(), _>(not_found("no execution \"x\""))
            .context("showing x")
            .expect_err("an error");
        assert_eq!(kind_of(&e), Some(Kind::NotFound));
        assert_eq!(format!("{e:#}"), "showing x: no execution \"x\"");
        assert_eq!(kind_of(&anyhow::anyhow!("boom")), None);
        let codes: Vec<u8> = [Kind::Usage, Kind::NotFound, Kind::Refused, Kind::Aws]
            .into_iter()
            .map(Kind::code)
            .collect();
        assert_eq!(codes, [2, 3, 4, 5]);
    }
}
