//! Why a delivery is not taken, with the HTTP status the routes answer.

/// A delivery (a webhook or a callback completion) refused: nothing is enqueued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No hook of that name in the hooks file (404).
    #[error("no hook named {0:?}")]
    UnknownHook(String),
    /// The signature header is absent (401).
    #[error("missing signature header {0}")]
    MissingSignature(String),
    /// The signature does not verify, or is malformed (401).
    #[error("bad signature: {0}")]
    BadSignature(String),
    /// The signed timestamp is outside the tolerance (401): a replay, or a clock far off.
    #[error("stale signature: signed {age} s ago, tolerance {tolerance} s")]
    StaleSignature {
        /// Seconds from the signed timestamp to now (negative: signed in the future).
        age: i64,
        /// The hook's replay window, seconds.
        tolerance: u64,
    },
    /// The body is not what the hook reads (400): not JSON, or no event id.
    #[error("bad body: {0}")]
    BadBody(String),
    /// A callback token that was not made by this stack or was altered (401).
    #[error("invalid callback token: {0}")]
    BadToken(String),
    /// A callback token past its expiry (410).
    #[error("callback token expired {0} s ago")]
    ExpiredToken(i64),
}

impl Refusal {
    /// The HTTP status a route answers with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::UnknownHook(_) => 404,
            Refusal::MissingSignature(_)
            | Refusal::BadSignature(_)
            | Refusal::StaleSignature { .. }
            | Refusal::BadToken(_) => 401,
            Refusal::BadBody(_) => 400,
            Refusal::ExpiredToken(_) => 410,
        }
    }

    /// The machine-readable code of the API's error body.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::UnknownHook(_) => "unknown_hook",
            Refusal::MissingSignature(_) => "missing_signature",
            Refusal::BadSignature(_) => "bad_signature",
            Refusal::StaleSignature { .. } => "stale_signature",
            Refusal::BadBody(_) => "bad_body",
            Refusal::BadToken(_) => "bad_token",
            Refusal::ExpiredToken(_) => "token_expired",
        }
    }
}
