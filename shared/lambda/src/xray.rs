//! X-Ray subsegments for the functions' AWS calls (the store's and the idempotency layer's
//! DynamoDB requests, the queue's SQS requests), sent to the X-Ray daemon Lambda runs beside
//! each function with `Tracing: Active` (`AWS_XRAY_DAEMON_ADDRESS`, UDP), under the
//! invocation's trace (`_X_AMZN_TRACE_ID`, which the Lambda runtime sets per invocation).
//!
//! Why an SDK interceptor and not the ADOT (OpenTelemetry) layer: the layer adds a collector
//! process and its cold start to every function, and an OpenTelemetry SDK to the binaries,
//! for the same three kinds of subsegment; the interceptor is the AWS SDK's own extension point,
//! sees every request of a client (retries included in its duration), and costs one UDP
//! datagram per call, sent without waiting. Nothing is sent outside Lambda (no daemon
//! address), when the trace is not sampled (`Sampled=0`), or without a trace header.

use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
    FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use serde_json::{json, Map, Value};

/// Set by Lambda when tracing is active: where the X-Ray daemon listens (`host:port`, UDP).
pub(crate) const DAEMON_ADDRESS: &str = "AWS_XRAY_DAEMON_ADDRESS";
/// Set by the Lambda runtime for each invocation: `Root=...;Parent=...;Sampled=1`.
pub(crate) const TRACE_HEADER: &str = "_X_AMZN_TRACE_ID";

/// The parts of a trace header a subsegment needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TraceHeader {
    pub root: String,
    pub parent: String,
    pub sampled: bool,
}

impl TraceHeader {
    /// `Root=1-...;Parent=...;Sampled=1` (any order, other keys ignored); None without a
    /// root or a parent.
    pub(crate) fn parse(header: &str) -> Option<Self> {
        let mut root = None;
        let mut parent = None;
        let mut sampled = false;
        for part in header.split(';') {
            match part.trim().split_once('=') {
                Some(("Root", v)) => root = Some(v.to_string()),
                Some(("Parent", v)) => parent = Some(v.to_string()),
                Some(("Sampled", v)) => sampled = v == "1",
                _ => {}
            }
        }
        Some(TraceHeader {
            root: root?,
            parent: parent?,
            sampled,
        })
    }
}

/// Where the interceptor reads the current trace header (the process environment in Lambda).
pub type HeaderSource = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The interceptor: one subsegment per SDK operation.
#[derive(Clone)]
pub struct XrayInterceptor {
    socket: Arc<UdpSocket>,
    daemon: String,
    header: HeaderSource,
}

impl std::fmt::Debug for XrayInterceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XrayInterceptor")
            .field("daemon", &self.daemon)
            .finish()
    }
}

impl XrayInterceptor {
    /// In Lambda with tracing on: the daemon from `AWS_XRAY_DAEMON_ADDRESS`, the header from
    /// `_X_AMZN_TRACE_ID` at each call. None when the address is not set (tracing off, or
    /// not in Lambda) or no socket can be opened.
    pub fn from_env() -> Option<Self> {
        let daemon = std::env::var(DAEMON_ADDRESS)
            .ok()
            .filter(|a| !a.trim().is_empty())?;
        Self::new(daemon, Arc::new(|| std::env::var(TRACE_HEADER).ok())).ok()
    }

    /// Sends subsegments to the daemon at `daemon` (`host:port`), under the trace header `header`
    /// reads at each call; fails when no UDP socket can be opened.
    pub fn new(daemon: String, header: HeaderSource) -> std::io::Result<Self> {
        let socket = UdpSocket::bind("0.0.0.0:0")?;
        socket.set_nonblocking(true)?;
        Ok(XrayInterceptor {
            socket: Arc::new(socket),
            daemon,
            header,
        })
    }
}

/// What the interceptor keeps between an operation's start and its end.
#[derive(Clone, Debug)]
struct Started {
    at: f64,
    resource: Option<(&'static str, String)>,
}

impl Storable for Started {
    type Storer = StoreReplace<Self>;
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// 16 lowercase hex digits: a subsegment id.
fn segment_id() -> String {
    format!("{:016x}", fastrand_u64())
}

fn fastrand_u64() -> u64 {
    // uuid's v4 is random enough and already a dependency
    let (hi, _) = uuid::Uuid::new_v4().as_u64_pair();
    hi
}

impl Intercept for XrayInterceptor {
    fn name(&self) -> &'static str {
        "XrayInterceptor"
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        cfg.interceptor_state().store_put(Started {
            at: now(),
            resource: None,
        });
        Ok(())
    }

    /// The table, queue or function the request names (from its JSON body).
    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let body = context.request().body().bytes().unwrap_or_default();
        let resource = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
            [
                ("table_name", "TableName"),
                ("queue_url", "QueueUrl"),
                ("function_name", "FunctionName"),
            ]
            .into_iter()
            .find_map(|(key, field)| v[field].as_str().map(|s| (key, s.to_string())))
        });
        if let Some(started) = cfg.load::<Started>().cloned() {
            cfg.interceptor_state().store_put(Started {
                resource: resource.or(started.resource),
                ..started
            });
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(header) = (self.header)().as_deref().and_then(TraceHeader::parse) else {
            return Ok(());
        };
        if !header.sampled {
            return Ok(());
        }
        let Some(started) = cfg.load::<Started>() else {
            return Ok(());
        };
        let (service, operation) = cfg
            .load::<Metadata>()
            .map_or(("AWS".to_string(), "Unknown".to_string()), |m| {
                (m.service().to_string(), m.name().to_string())
            });
        let status = context.response().map(|r| r.status().as_u16());
        let failed = matches!(context.output_or_error(), Some(Err(_)));
        let mut aws = Map::new();
        aws.insert("operation".into(), json!(operation));
        if let Some((key, value)) = &started.resource {
            aws.insert((*key).into(), json!(value));
        }
        let mut subsegment = json!({
            "type": "subsegment",
            "id": segment_id(),
            "trace_id": header.root,
            "parent_id": header.parent,
            "name": service,
            "namespace": "aws",
            "start_time": started.at,
            "end_time": now(),
            "aws": aws,
        });
        if let Some(code) = status {
            subsegment["http"] = json!({"response": {"status": code}});
        }
        match status {
            Some(400..=499) => subsegment["error"] = json!(true),
            _ if failed => subsegment["fault"] = json!(true),
            _ => {}
        }
        if code_is_throttle(status) {
            subsegment["throttle"] = json!(true);
        }
        let datagram = format!("{{\"format\":\"json\",\"version\":1}}\n{subsegment}");
        // tracing must never fail a call: a full socket buffer drops the subsegment
        let _ = self.socket.send_to(datagram.as_bytes(), &self.daemon);
        Ok(())
    }
}

fn code_is_throttle(status: Option<u16>) -> bool {
    status == Some(429)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_read_in_any_order() {
        assert_eq!(
            TraceHeader::parse(
                "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
            ),
            Some(TraceHeader {
                root: "1-5759e988-bd862e3fe1be46a994272793".into(),
                parent: "53995c3f42cd8ad8".into(),
                sampled: true,
            })
        );
        let h = TraceHeader::parse("Sampled=0;Lineage=a:1;Parent=p;Root=r").expect("parsed");
        assert!(!h.sampled);
        assert_eq!((h.root.as_str(), h.parent.as_str()), ("r", "p"));
        assert_eq!(TraceHeader::parse("Root=r;Sampled=1"), None, "no parent");
        assert_eq!(segment_id().len(), 16);
    }
}
