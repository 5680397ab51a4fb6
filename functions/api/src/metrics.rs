//! Webhook outcomes as CloudWatch metrics: one EMF document per delivery (the function's
//! invocation is one request), as the other functions print theirs (`harel_lambda::metrics`):
//! `WebhooksDelivered`, `WebhooksIgnored` and `WebhooksRefused`, per hook (dimension `Hook`)
//! and for the function. An ignored delivery (an event type the hooks file does not route)
//! is acknowledged to the provider, so this count is where it shows.

use harel_api::{HookMetrics, HookOutcome};
use harel_lambda::metrics::{
    now_ms, EmfError, InvocationMetrics, Metric, MetricsSettings, WEBHOOKS_DELIVERED,
    WEBHOOKS_IGNORED, WEBHOOKS_REFUSED,
};

pub struct EmfHookMetrics {
    settings: MetricsSettings,
}

impl EmfHookMetrics {
    /// The namespace and service of `POWERTOOLS_METRICS_NAMESPACE`/`POWERTOOLS_SERVICE_NAME`.
    pub fn from_env() -> Result<Self, EmfError> {
        Ok(EmfHookMetrics {
            settings: MetricsSettings::from_env()?,
        })
    }

    fn metrics(&self, hook: &str, outcome: HookOutcome, timestamp_ms: u64) -> InvocationMetrics {
        let mut metrics = InvocationMetrics::new("api", timestamp_ms).with_settings(&self.settings);
        metrics.hook_count(hook, metric(outcome), 1);
        metrics
    }
}

fn metric(outcome: HookOutcome) -> Metric {
    match outcome {
        HookOutcome::Delivered => WEBHOOKS_DELIVERED,
        HookOutcome::Ignored => WEBHOOKS_IGNORED,
        HookOutcome::Refused => WEBHOOKS_REFUSED,
    }
}

impl HookMetrics for EmfHookMetrics {
    fn record(&self, hook: &str, outcome: HookOutcome, _reason: Option<&str>) {
        self.metrics(hook, outcome, now_ms()).emit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ignored_delivery_is_a_count_for_its_hook_and_the_function() {
        let emf = EmfHookMetrics {
            settings: MetricsSettings::default(),
        };
        let docs = emf
            .metrics("stripe", HookOutcome::Ignored, 1_700_000_000_000)
            .documents()
            .expect("valid EMF");
        assert_eq!(docs.len(), 2, "{docs:?}");
        assert_eq!(docs[0]["Function"], "api");
        assert_eq!(docs[0]["WebhooksIgnored"], 1.0);
        assert_eq!(docs[1]["Hook"], "stripe");
        assert_eq!(docs[1]["WebhooksIgnored"], 1.0);
        assert_eq!(
            docs[1]["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            serde_json::json!([["service", "Function", "Hook"]])
        );
    }
}
