//! What the outside world's routes (`POST /hooks/{name}`, `POST /callbacks/{token}[/fail]`)
//! need beside the backend: the hooks file with its secrets read, the callback key, and
//! where webhook outcomes are counted. Read once at start (the api function's cold start,
//! `harel serve`'s launch); an API without them answers those routes `404`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use harel_hooks::{CallbackKey, Hooks};

/// What deliveries to a name the hooks file does not have are counted as: the name is the
/// caller's, and random paths must not mint metric dimensions.
pub const UNKNOWN_HOOK: &str = "(unknown)";

/// What became of one webhook delivery, for the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookOutcome {
    /// Verified and enqueued (or a repeat of one already processed).
    Delivered,
    /// Verified, acknowledged `200`, nothing enqueued: the file does not route the
    /// provider's event, or its execution is closed.
    Ignored,
    /// Refused: a bad signature, a body the hook cannot map, an unknown execution.
    Refused,
}

impl HookOutcome {
    /// The outcome's lowercase name, as logs and metric dimensions spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            HookOutcome::Delivered => "delivered",
            HookOutcome::Ignored => "ignored",
            HookOutcome::Refused => "refused",
        }
    }
}

/// Where webhook outcomes are counted: EMF metrics in the api function, counters in
/// `harel serve`.
pub trait HookMetrics: Send + Sync {
    /// One delivery to hook `hook` (as named in the URL) came to `outcome`; `reason` says
    /// why when it was ignored or refused.
    fn record(&self, hook: &str, outcome: HookOutcome, reason: Option<&str>);
}

/// Counts per (hook, outcome), in memory.
#[derive(Debug, Default)]
pub struct HookCounts {
    counts: Mutex<BTreeMap<(String, HookOutcome), u64>>,
}

impl HookCounts {
    /// No deliveries counted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many deliveries to `hook` came to `outcome` so far.
    pub fn get(&self, hook: &str, outcome: HookOutcome) -> u64 {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts
            .get(&(hook.to_string(), outcome))
            .copied()
            .unwrap_or(0)
    }
}

impl HookMetrics for HookCounts {
    fn record(&self, hook: &str, outcome: HookOutcome, _reason: Option<&str>) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *counts.entry((hook.to_string(), outcome)).or_default() += 1;
    }
}

/// The hooks, the callback key and the metrics.
#[derive(Clone)]
pub struct Ingress {
    /// The hooks file, its secrets read (None: no `POST /hooks/{name}`).
    pub hooks: Option<Hooks>,
    /// The stack's callback key (None: no `POST /callbacks/{token}`).
    pub callback_key: Option<CallbackKey>,
    /// Where webhook outcomes are counted (in-memory [`HookCounts`] by default).
    pub metrics: Arc<dyn HookMetrics>,
}

impl Default for Ingress {
    fn default() -> Self {
        Ingress {
            hooks: None,
            callback_key: None,
            metrics: Arc::new(HookCounts::new()),
        }
    }
}

impl std::fmt::Debug for Ingress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingress")
            .field(
                "hooks",
                &self.hooks.as_ref().map(|h| h.origin().to_string()),
            )
            .field("callback_key", &self.callback_key.is_some())
            .finish()
    }
}
