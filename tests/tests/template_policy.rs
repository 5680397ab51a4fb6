//! Least privilege and data hygiene in `template.yaml`, read as CloudFormation deploys it:
//! SAM's own translator (aws-sam-translator, in the SAM CLI's venv; scripts/sam-translate.py)
//! expands the template first, so the roles, event source mappings and schedules SAM adds are
//! checked too. Each function's role grants exactly the actions its code (and Lambda on its
//! behalf: logs, X-Ray, the SQS poller, the on-failure destination) makes, on its own tables
//! and queues; no role anywhere has a `*` resource but X-Ray's two actions, which have no
//! resource type; every queue and table is encrypted; the dead-letter queue keeps messages 14
//! days. And the code side: every AWS SDK operation the functions' crates call is in the table
//! below, so a new call fails here until someone says which function makes it and grants it.
//!
//! YAML: `serde_yaml_ng` (the maintained fork of the archived `serde_yaml`) keeps
//! CloudFormation's short-form tags (`!Ref`, `!GetAtt`, `!Sub`) as tagged values instead of
//! refusing them, which is what a policy check needs to read `!GetAtt Table.Arn`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml_ng::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

fn template() -> Value {
    let path = root().join("template.yaml");
    let text = std::fs::read_to_string(&path).expect("template.yaml is readable");
    serde_yaml_ng::from_str(&text).expect("template.yaml parses, short-form tags included")
}

/// template.yaml expanded by SAM's translator (JSON, read as YAML), once per test binary.
fn deployed() -> Value {
    static EXPANDED: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EXPANDED
        .get_or_init(|| {
            let tools = Command::new("bash")
                .arg(root().join("scripts/install-lambda-tools.sh"))
                .output()
                .expect("bash runs");
            assert!(
                tools.status.success(),
                "the SAM CLI (and its translator) could not be installed from the Python index: {}",
                String::from_utf8_lossy(&tools.stderr)
            );
            let sam_bin = String::from_utf8_lossy(&tools.stdout)
                .lines()
                .nth(1)
                .map(PathBuf::from)
                .expect("the SAM venv's bin directory");
            let out = Command::new(sam_bin.join("python"))
                .arg(root().join("scripts/sam-translate.py"))
                .arg(root().join("template.yaml"))
                .output()
                .expect("the SAM venv's python runs");
            assert!(
                out.status.success(),
                "SAM's translator refused template.yaml:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_yaml_ng::from_slice(&out.stdout).expect("the translator prints JSON")
        })
        .clone()
}

fn resources(t: &Value) -> &serde_yaml_ng::Mapping {
    t.get("Resources")
        .and_then(Value::as_mapping)
        .expect("a Resources section")
}

fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn list(v: Option<&Value>) -> Vec<Value> {
    match v {
        Some(Value::Sequence(items)) => items.clone(),
        Some(one) => vec![one.clone()],
        None => Vec::new(),
    }
}

/// A resource reference as written: `!GetAtt X.Arn` -> "X.Arn", `!Ref X` -> "X",
/// `!Sub "${X.Arn}/index/I"` -> "X.Arn/index/I"; anything else (a literal ARN, "*") as its
/// text.
fn resource_ref(v: &Value) -> String {
    match v {
        Value::Tagged(t) if t.tag == "GetAtt" || t.tag == "Ref" => str_of(&t.value),
        Value::Tagged(t) if t.tag == "Sub" => {
            let text = str_of(&t.value);
            match text.strip_prefix("${").and_then(|r| r.split_once('}')) {
                Some((arn, rest)) if rest.starts_with("/index/") => format!("{arn}{rest}"),
                _ => text,
            }
        }
        Value::Mapping(m) if m.len() == 1 => {
            let (k, v) = m.iter().next().expect("one entry");
            match str_of(k).as_str() {
                "Fn::GetAtt" => list(Some(v))
                    .iter()
                    .map(str_of)
                    .collect::<Vec<_>>()
                    .join("."),
                "Ref" => str_of(v),
                "Fn::Sub" => {
                    let text = str_of(v);
                    match text.strip_prefix("${").and_then(|r| r.split_once('}')) {
                        Some((arn, rest)) if rest.starts_with("/index/") => format!("{arn}{rest}"),
                        _ => text,
                    }
                }
                _ => format!("{m:?}"),
            }
        }
        other => str_of(other),
    }
}

/// The actions IAM grants on `*` only (they have no resource type): X-Ray's, which
/// `Tracing: Active` needs.
const RESOURCELESS: &[&str] = &["xray:PutTraceSegments", "xray:PutTelemetryRecords"];

/// Whether `name` is a `CommaDelimitedList` parameter of the template (a list of ARNs the
/// deployment gives).
fn is_arn_list_parameter(t: &Value, name: &str) -> bool {
    t.get("Parameters")
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("Type"))
        .map(str_of)
        .as_deref()
        == Some("CommaDelimitedList")
}

/// `!If [Condition, statement, !Ref AWS::NoValue]`: the statement, when it applies.
fn unconditioned(statement: Value) -> Value {
    match statement {
        Value::Tagged(t) if t.tag == "If" => list(Some(&t.value))
            .get(1)
            .cloned()
            .expect("an !If with a statement"),
        Value::Mapping(m) if m.len() == 1 && m.contains_key("Fn::If") => list(m.get("Fn::If"))
            .get(1)
            .cloned()
            .expect("an Fn::If with a statement"),
        other => other,
    }
}

/// The statements of a role's inline policies as written, conditioned ones included.
fn raw_statements(t: &Value, role: &str) -> Vec<Value> {
    list(resources(t)[role]["Properties"].get("Policies"))
        .iter()
        .flat_map(|p| list(p["PolicyDocument"].get("Statement")))
        .collect()
}

/// The logical id of the role a function of the deployed template runs with.
fn role_of(t: &Value, function: &str) -> String {
    let f = resources(t)
        .get(function)
        .unwrap_or_else(|| panic!("no resource {function}"));
    let role = resource_ref(&f["Properties"]["Role"]);
    role.strip_suffix(".Arn")
        .unwrap_or_else(|| panic!("{function}'s Role is {role:?}, not a role of the template"))
        .to_string()
}

/// The statements of a role's inline policies; a role with managed policies is refused
/// (what they grant cannot be read here).
fn statements(t: &Value, role: &str) -> Vec<Value> {
    let r = resources(t)
        .get(role)
        .unwrap_or_else(|| panic!("no resource {role}"));
    assert_eq!(r["Type"], Value::from("AWS::IAM::Role"), "{role}");
    let props = &r["Properties"];
    assert!(
        list(props.get("ManagedPolicyArns")).is_empty(),
        "{role} has managed policies {:?}: their statements (AWSLambdaBasicExecutionRole, \
         AWSLambdaSQSQueueExecutionRole, ...) grant on \"*\"",
        props.get("ManagedPolicyArns")
    );
    list(props.get("Policies"))
        .iter()
        .flat_map(|p| list(p["PolicyDocument"].get("Statement")))
        .map(unconditioned)
        .collect()
}

/// (action, resource logical id) pairs a function's role grants, `*` for X-Ray's.
fn grants(t: &Value, function: &str) -> BTreeSet<(String, String)> {
    let role = role_of(t, function);
    let mut out = BTreeSet::new();
    {
        for statement in statements(t, &role) {
            assert_eq!(
                statement.get("Effect").map(str_of).as_deref(),
                Some("Allow"),
                "{function}: only Allow statements are expected"
            );
            let actions: Vec<String> = list(statement.get("Action")).iter().map(str_of).collect();
            let targets: Vec<String> = list(statement.get("Resource"))
                .iter()
                .map(resource_ref)
                .collect();
            assert!(
                !targets.is_empty(),
                "{function}: a statement without Resource"
            );
            for action in &actions {
                assert!(
                    !action.contains('*'),
                    "{function}: wildcard action {action:?}"
                );
                for r in &targets {
                    if r == "*" && RESOURCELESS.contains(&action.as_str()) {
                        out.insert((action.clone(), r.clone()));
                        continue;
                    }
                    assert!(
                        !r.contains('*'),
                        "{function}: wildcard resource {r:?} for {action}"
                    );
                    // a table's index: "X.Arn/index/I" is granted as "X/index/I"
                    let (arn, index) = match r.split_once("/index/") {
                        Some((arn, index)) => (arn, Some(index)),
                        None => (r.as_str(), None),
                    };
                    // the bus named by EventBusName, and no other, granted as "EventBus"
                    if index.is_none() && r.contains(":event-bus/") {
                        assert!(
                            r.ends_with(":event-bus/${EventBusName}"),
                            "{function}: {r:?} is not the EventBusName bus"
                        );
                        out.insert((action.clone(), "EventBus".to_string()));
                        continue;
                    }
                    // a list parameter of ARNs (RemoteActionFunctions), granted as its name
                    if index.is_none() && is_arn_list_parameter(t, arn) {
                        out.insert((action.clone(), arn.to_string()));
                        continue;
                    }
                    let logical = arn.strip_suffix(".Arn").unwrap_or_else(|| {
                        panic!("{function}: resource {r:?} is not a !GetAtt X.Arn of this template")
                    });
                    assert!(
                        resources(t).contains_key(logical),
                        "{function}: {r:?} names no resource of the template"
                    );
                    let granted = match index {
                        Some(index) => format!("{logical}/index/{index}"),
                        None => logical.to_string(),
                    };
                    out.insert((action.clone(), granted));
                }
            }
        }
    }
    out
}

/// What each function's code calls, as (SDK operation, resource, why). IAM checks a
/// TransactWriteItems per item (PutItem/DeleteItem/...) and a SendMessageBatch as SendMessage.
const WORKER: &[(&str, &str, &str)] = &[
    (
        "GetItem",
        "DefinitionsTable",
        "a pinned machine version, once per process",
    ),
    (
        "TransactWriteItems:Update",
        "DefinitionsTable",
        "commit: a machine version, kept with its first execution",
    ),
    (
        "GetItem",
        "ExecutionsTable",
        "load (create's existence check, live regions, a child's parent)",
    ),
    ("BatchGetItem", "ExecutionsTable", "load_for_event"),
    (
        "BatchGetItem",
        "ProcessedTable",
        "load_for_event's dedupe mark",
    ),
    (
        "TransactWriteItems:Put",
        "ExecutionsTable",
        "commit: the CAS write",
    ),
    ("TransactWriteItems:Put", "OutboxTable", "commit: emits"),
    (
        "TransactWriteItems:Put",
        "EventsTable",
        "commit: a status change's event, harel.lib.publish's",
    ),
    (
        "TransactWriteItems:Put",
        "SpawnsTable",
        "commit: spawn intents",
    ),
    (
        "TransactWriteItems:Put",
        "TimersTable",
        "commit: timer schedules",
    ),
    (
        "TransactWriteItems:Delete",
        "TimersTable",
        "commit: timer cancels",
    ),
    (
        "TransactWriteItems:Put",
        "ProcessedTable",
        "commit: the processed mark",
    ),
    (
        "Scan",
        "SpawnsTable",
        "inline delivery finds its spawn seqs",
    ),
    (
        "TransactWriteItems:Put",
        "TraceTable",
        "commit: the trace entry (HAREL_TRACE)",
    ),
    (
        "TransactWriteItems:Delete",
        "TraceTable",
        "commit: the trace ring's oldest entry",
    ),
    (
        "Query",
        "TraceTable",
        "the highest trace idx, when the execution item lacks it",
    ),
    ("DeleteItem", "OutboxTable", "outbox ack"),
    ("DeleteItem", "SpawnsTable", "spawn ack"),
    ("PutItem", "IdempotencyTable", "claim"),
    (
        "GetItem",
        "IdempotencyTable",
        "get_record after a refused claim",
    ),
    ("UpdateItem", "IdempotencyTable", "completion"),
    ("DeleteItem", "IdempotencyTable", "a failed record released"),
    (
        "SendMessageBatch",
        "Queue",
        "outbox delivery, region broadcasts",
    ),
    (
        "ChangeMessageVisibility",
        "Queue",
        "parking a SUSPENDED execution's message",
    ),
    (
        "Invoke",
        "Sweeper",
        "the wake: a batch armed a timer due before the next tick",
    ),
    (
        "Invoke",
        "RemoteActionFunctions",
        "remote actions: the action map's lambda: targets (harel-remote)",
    ),
    (
        "GetParameter",
        "RemoteActionParameters",
        "remote actions' ssm: header values, read at cold start (harel-remote Secrets)",
    ),
    (
        "GetSecretValue",
        "RemoteActionSecrets",
        "remote actions' secretsmanager: header values, read at cold start",
    ),
    (
        "GetParameter",
        "CallbackSecretArns",
        "the callback secret as ssm: (harel.lib.callback_token), read at cold start",
    ),
    (
        "GetSecretValue",
        "CallbackSecretArns",
        "the callback secret as secretsmanager:, read at cold start",
    ),
    (
        "SendMessage",
        "DeadLetterQueue",
        "dead letters with their reason",
    ),
    // the SQS event source mapping polls with the function's role
    ("ReceiveMessage", "Queue", "event source mapping"),
    ("DeleteMessage", "Queue", "event source mapping"),
    ("GetQueueAttributes", "Queue", "event source mapping"),
];

const RELAY: &[(&str, &str, &str)] = &[
    (
        "GetItem",
        "DefinitionsTable",
        "a child's pinned machine version, once per process",
    ),
    (
        "TransactWriteItems:Update",
        "DefinitionsTable",
        "a child's start: its machine version, kept with the first execution using it",
    ),
    ("Scan", "OutboxTable", "pending_outbox"),
    ("Scan", "EventsTable", "pending_published"),
    (
        "BatchWriteItem",
        "EventsTable",
        "ack_published: a request's events put or dead-lettered",
    ),
    (
        "UpdateItem",
        "EventsTable",
        "retry_published: a failed put counted",
    ),
    (
        "TransactWriteItems:Put",
        "EventsTable",
        "a child's start: its status change",
    ),
    (
        "PutEvents",
        "EventBus",
        "publish_events: 10 entries a request",
    ),
    (
        "SendMessage",
        "EventsDeadLetterQueue",
        "events that cannot be put, with the reason",
    ),
    ("Scan", "SpawnsTable", "pending_spawns"),
    ("GetItem", "ExecutionsTable", "a child exists? its parent"),
    (
        "TransactWriteItems:Put",
        "ExecutionsTable",
        "a child's create (its start's commit)",
    ),
    (
        "TransactWriteItems:Put",
        "OutboxTable",
        "the child's start emits",
    ),
    (
        "TransactWriteItems:Put",
        "SpawnsTable",
        "the child's own regions",
    ),
    (
        "TransactWriteItems:Put",
        "TimersTable",
        "the child's timers",
    ),
    (
        "TransactWriteItems:Delete",
        "TimersTable",
        "timer cancels in the child's start",
    ),
    (
        "TransactWriteItems:Put",
        "TraceTable",
        "the child's start, traced (HAREL_TRACE)",
    ),
    (
        "TransactWriteItems:Delete",
        "TraceTable",
        "the trace ring's oldest entry",
    ),
    (
        "Query",
        "TraceTable",
        "the highest trace idx, after a collision",
    ),
    ("DeleteItem", "OutboxTable", "outbox ack"),
    ("DeleteItem", "SpawnsTable", "spawn ack"),
    ("SendMessageBatch", "Queue", "outbox delivery"),
    (
        "Invoke",
        "RemoteActionFunctions",
        "remote actions in a child's start (harel-remote)",
    ),
    (
        "GetParameter",
        "RemoteActionParameters",
        "remote actions' ssm: header values, read at cold start",
    ),
    (
        "GetSecretValue",
        "RemoteActionSecrets",
        "remote actions' secretsmanager: header values, read at cold start",
    ),
    (
        "GetParameter",
        "CallbackSecretArns",
        "the callback secret as ssm: (harel.lib.callback_token), read at cold start",
    ),
    (
        "GetSecretValue",
        "CallbackSecretArns",
        "the callback secret as secretsmanager:, read at cold start",
    ),
];

const SWEEPER: &[(&str, &str, &str)] = &[
    (
        "Query",
        "TimersTable/index/by_due",
        "due_timers, next_timer_due: one Query per due_shard",
    ),
    (
        "Scan",
        "TimersTable",
        "legacy_due_timers: the compatibility Scan",
    ),
    (
        "DeleteItem",
        "TimersTable",
        "delete_timer (fire_at guarded)",
    ),
    (
        "SendMessageBatch",
        "Queue",
        "Timeout publishes, scheduled starts' creates",
    ),
    (
        "BatchGetItem",
        "CountersTable",
        "the schedules' marks, one read per tick (harel-schedule; with SchedulesFile)",
    ),
    (
        "PutItem",
        "CountersTable",
        "a schedule's mark moved, conditionally (with SchedulesFile)",
    ),
    (
        "GetItem",
        "ExecutionsTable",
        "overlap: skip reads the previous start (with SchedulesFile)",
    ),
];

const API: &[(&str, &str, &str)] = &[
    (
        "GetItem",
        "ExecutionsTable",
        "load: a create's id, an event's target, show, the control routes",
    ),
    ("BatchGetItem", "ExecutionsTable", "a listing page's items"),
    (
        "Query",
        "ExecutionsTable/index/by_status",
        "GET /executions (by status)",
    ),
    (
        "Query",
        "ExecutionsTable/index/by_machine_status",
        "GET /executions?machine=",
    ),
    (
        "TransactWriteItems:Put",
        "ExecutionsTable",
        "the control routes' CAS write (regions too)",
    ),
    (
        "TransactWriteItems:Put",
        "OutboxTable",
        "a cooperative cancel's Cancel",
    ),
    (
        "TransactWriteItems:Put",
        "TimersTable",
        "resume re-arms a ttl",
    ),
    (
        "DeleteItem",
        "OutboxTable",
        "the Cancel acknowledged, published",
    ),
    (
        "GetItem",
        "DefinitionsTable",
        "the version an execution is pinned to (its events are checked against it)",
    ),
    (
        "Query",
        "TimersTable",
        "GET /executions/{id}: the armed timers",
    ),
    (
        "SendMessageBatch",
        "Queue",
        "creates, events (webhooks' and callbacks' too), a cooperative cancel's Cancel",
    ),
    (
        "GetItem",
        "ProcessedTable",
        "a webhook or a callback for a closed execution: did it process this event id?",
    ),
    (
        "GetParameter",
        "HookSecretArns",
        "the hooks file's ssm: secrets, read at cold start",
    ),
    (
        "GetSecretValue",
        "HookSecretArns",
        "the hooks file's secretsmanager: secrets, read at cold start",
    ),
    (
        "GetParameter",
        "CallbackSecretArns",
        "the callback secret as ssm:, read at cold start (it opens tokens)",
    ),
    (
        "GetSecretValue",
        "CallbackSecretArns",
        "the callback secret as secretsmanager:, read at cold start",
    ),
];

fn iam_action(op: &str) -> String {
    match op {
        "TransactWriteItems:Put" => "dynamodb:PutItem".into(),
        "TransactWriteItems:Delete" => "dynamodb:DeleteItem".into(),
        "TransactWriteItems:Update" => "dynamodb:UpdateItem".into(),
        "SendMessageBatch" => "sqs:SendMessage".into(),
        "Invoke" => "lambda:InvokeFunction".into(),
        "GetParameter" => "ssm:GetParameter".into(),
        "GetSecretValue" => "secretsmanager:GetSecretValue".into(),
        "PutEvents" => "events:PutEvents".into(),
        "CreateLogStream" | "PutLogEvents" => format!("logs:{op}"),
        "PutTraceSegments" | "PutTelemetryRecords" => format!("xray:{op}"),
        op if matches!(
            op,
            "SendMessage"
                | "ChangeMessageVisibility"
                | "ReceiveMessage"
                | "DeleteMessage"
                | "GetQueueAttributes"
        ) =>
        {
            format!("sqs:{op}")
        }
        op => format!("dynamodb:{op}"),
    }
}

/// What Lambda does with a function's role on its behalf, beside its code's calls.
fn lambda_side(function: &str) -> Vec<(&'static str, String, &'static str)> {
    let mut out = vec![
        (
            "CreateLogStream",
            format!("{function}LogGroup"),
            "the runtime's log capture, into the function's own log group",
        ),
        (
            "PutLogEvents",
            format!("{function}LogGroup"),
            "the runtime's log capture",
        ),
        ("PutTraceSegments", "*".into(), "Tracing: Active"),
        ("PutTelemetryRecords", "*".into(), "Tracing: Active"),
    ];
    // the worker is fed by its event source, the API by API Gateway: neither is invoked
    // asynchronously
    if function != "Worker" && function != "Api" {
        out.push((
            "SendMessage",
            "FailedInvocationsQueue".into(),
            "the on-failure destination of its asynchronous invocations",
        ));
    }
    out
}

fn needs(table: &[(&str, &str, &str)]) -> BTreeSet<(String, String)> {
    table
        .iter()
        .map(|(op, res, _)| (iam_action(op), res.to_string()))
        .collect()
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn each_function_is_granted_exactly_what_its_code_uses() {
    let t = deployed();
    let mut failures = Vec::new();
    for (function, table) in [
        ("Worker", WORKER),
        ("Relay", RELAY),
        ("Sweeper", SWEEPER),
        ("Api", API),
    ] {
        let granted = grants(&t, function);
        let mut needed = needs(table);
        for (op, resource, _) in lambda_side(function) {
            needed.insert((iam_action(op), resource));
        }
        for extra in granted.difference(&needed) {
            failures.push(format!(
                "{function} is granted {extra:?}, which its code never uses"
            ));
        }
        for missing in needed.difference(&granted) {
            failures.push(format!("{function} needs {missing:?}, not granted"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `.operation()` calls of the SDK fluent clients in a crate's sources.
fn sdk_calls(dir: &Path, found: &mut BTreeMap<String, BTreeSet<String>>) {
    const OPS: &[&str] = &[
        "get_item",
        "batch_get_item",
        "transact_write_items",
        "transact_get_items",
        "put_item",
        "update_item",
        "delete_item",
        "query",
        "scan",
        "batch_write_item",
        "create_table",
        "describe_table",
        "delete_table",
        "update_time_to_live",
        "describe_time_to_live",
        "update_table",
        "send_message",
        "send_message_batch",
        "change_message_visibility",
        "change_message_visibility_batch",
        "receive_message",
        "delete_message",
        "delete_message_batch",
        "get_queue_attributes",
        "get_queue_url",
        "create_queue",
        "purge_queue",
        "delete_queue",
        "set_queue_attributes",
        "invoke",
        "update_table",
        "get_parameter",
        "get_secret_value",
        "put_events",
    ];
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sdk_calls(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a readable source");
            for op in OPS {
                if text.contains(&format!(".{op}()")) {
                    found.entry(op.to_string()).or_default().insert(
                        path.strip_prefix(root())
                            .unwrap_or(&path)
                            .display()
                            .to_string(),
                    );
                }
            }
        }
    }
}

/// Every SDK operation the functions' crates can call is either one the table above lists
/// for a function, or one no function reaches (with the reason).
#[test]
fn every_sdk_call_in_the_functions_crates_is_accounted_for() {
    let mut found = BTreeMap::new();
    for dir in [
        "shared/dynamodb/src",
        "shared/sqs/src",
        "shared/idempotency/src",
        "shared/lambda/src",
        "shared/remote/src",
        "shared/schedule/src",
        "functions/app/src",
        "functions/worker/src",
        "functions/relay/src",
        "functions/sweeper/src",
        "functions/api/src",
        "functions/bootstrap/src",
        "shared/api/src",
        "shared/control/src",
    ] {
        sdk_calls(&root().join(dir), &mut found);
    }
    let used: BTreeSet<String> = WORKER
        .iter()
        .chain(RELAY)
        .chain(SWEEPER)
        .chain(API)
        .map(|(op, _, _)| {
            let op = op.split(':').next().unwrap_or(op);
            // CamelCase operation -> the fluent method's snake_case
            let mut snake = String::new();
            for (i, c) in op.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    snake.push('_');
                }
                snake.push(c.to_ascii_lowercase());
            }
            snake
        })
        .collect();
    // reached by no function: (operation, why)
    let elsewhere: BTreeMap<&str, &str> = BTreeMap::from([
        ("create_table", "ensure_tables / local-setup / the CLI (tables are the template's in AWS)"),
        ("describe_table", "ensure_tables: whether harel Python's tables have our indexes, and until an added one is ACTIVE (the template declares them)"),
        ("update_table", "ensure_tables: adds our indexes to a table harel Python created"),
        ("describe_time_to_live", "ensure_tables (the template declares the TTL)"),
        ("update_time_to_live", "ensure_tables (the template declares the TTL)"),
        ("create_queue", "tests and local-setup (queues are the template's in AWS)"),
        ("update_item", "SeqAllocation::Counter, not the functions' default (the idempotency layer's UpdateItem is listed)"),
        ("batch_write_item", "purge (the CLI)"),
        ("put_item", "append_trace, outside a commit (the CLI, tests); the idempotency claim is listed"),
        ("change_message_visibility_batch", "harel dlq / the console: a look at the dead-letter queue releases what it received (the operator's credentials, no function)"),
    ]);
    let mut unknown = Vec::new();
    for (op, files) in &found {
        if !used.contains(op) && !elsewhere.contains_key(op.as_str()) {
            unknown.push(format!("{op} (in {files:?}): add it to a function's table and its policy, or say why no function reaches it"));
        }
    }
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
    for op in used {
        // the table lists nothing the code does not call (the event source's three are Lambda's)
        if matches!(
            op.as_str(),
            "receive_message" | "delete_message" | "get_queue_attributes"
        ) {
            continue;
        }
        assert!(
            found.contains_key(&op),
            "the table lists {op}, which no crate calls"
        );
    }
}

#[test]
fn queues_and_tables_are_encrypted_and_dead_letters_kept_14_days() {
    let t = template();
    let mut failures = Vec::new();
    let mut dlqs = BTreeSet::new();
    for (_, r) in resources(&t) {
        if let Some(target) = r
            .get("Properties")
            .and_then(|p| p.get("RedrivePolicy"))
            .and_then(|p| p.get("deadLetterTargetArn"))
        {
            dlqs.insert(resource_ref(target).trim_end_matches(".Arn").to_string());
        }
    }
    assert!(!dlqs.is_empty(), "the queue has no dead-letter queue");
    for (name, r) in resources(&t) {
        let name = str_of(name);
        let kind = r.get("Type").map(str_of).unwrap_or_default();
        let props = r.get("Properties");
        let prop = |k: &str| props.and_then(|p| p.get(k));
        match kind.as_str() {
            "AWS::DynamoDB::Table" => {
                let sse = prop("SSESpecification")
                    .and_then(|s| s.get("SSEEnabled"))
                    .map(str_of);
                if sse.as_deref() != Some("true") {
                    failures.push(format!(
                        "table {name}: SSESpecification.SSEEnabled is not true"
                    ));
                }
            }
            "AWS::SQS::Queue" => {
                let managed = prop("SqsManagedSseEnabled").map(str_of);
                if managed.as_deref() != Some("true") && prop("KmsMasterKeyId").is_none() {
                    failures.push(format!(
                        "queue {name}: neither SqsManagedSseEnabled nor a KMS key"
                    ));
                }
                if dlqs.contains(&name) {
                    let retention = prop("MessageRetentionPeriod").map(str_of);
                    if retention.as_deref() != Some("1209600") {
                        failures.push(format!(
                            "dead-letter queue {name}: MessageRetentionPeriod {retention:?}, not 1209600 (14 days)"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every table holds state someone may need back (an execution, its timers, its outbox and
/// spawns, processed marks, definitions, idempotency records, counters, its trace): each can
/// be restored to a moment of the last 35 days (docs/src/restore.md). Checked on every table the
/// template declares, so a new table without recovery fails here.
#[test]
fn every_table_can_be_restored_to_a_moment() {
    let t = template();
    let mut tables = BTreeSet::new();
    let mut failures = Vec::new();
    for (name, r) in resources(&t) {
        if r.get("Type").map(str_of).as_deref() != Some("AWS::DynamoDB::Table") {
            continue;
        }
        let name = str_of(name);
        let recovery = r
            .get("Properties")
            .and_then(|p| p.get("PointInTimeRecoverySpecification"))
            .and_then(|s| s.get("PointInTimeRecoveryEnabled"))
            .map(str_of);
        if recovery.as_deref() != Some("true") {
            failures.push(format!(
                "table {name}: PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled is not true"
            ));
        }
        tables.insert(name);
    }
    // the loop saw the state tables the stores write (a renamed or moved table is noticed)
    for expected in [
        "ExecutionsTable",
        "TimersTable",
        "OutboxTable",
        "SpawnsTable",
        "ProcessedTable",
        "DefinitionsTable",
        "IdempotencyTable",
        "CountersTable",
        "TraceTable",
    ] {
        assert!(
            tables.contains(expected),
            "{expected} is not a table of template.yaml (found {tables:?})"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The store's TTL and listing indexes as the code names them, and RetentionDays reaching
/// every function as HAREL_RETENTION_DAYS.
#[test]
fn retention_ttl_and_listing_indexes_match_the_store() {
    let t = template();
    let r = resources(&t);
    let props = |name: &str| {
        r.get(Value::from(name))
            .and_then(|v| v.get("Properties"))
            .unwrap_or_else(|| panic!("no resource {name}"))
            .clone()
    };
    for table in ["ExecutionsTable", "ProcessedTable", "TraceTable"] {
        let ttl = props(table)
            .get("TimeToLiveSpecification")
            .cloned()
            .unwrap_or_else(|| panic!("{table} has no TimeToLiveSpecification"));
        assert_eq!(
            ttl.get("AttributeName").map(str_of).as_deref(),
            Some(harel_dynamodb::RETAIN_UNTIL),
            "{table}"
        );
        assert_eq!(ttl.get("Enabled").map(str_of).as_deref(), Some("true"));
    }
    for table in ["OutboxTable", "SpawnsTable", "TimersTable", "CountersTable"] {
        assert!(
            props(table).get("TimeToLiveSpecification").is_none(),
            "{table} holds live work only: nothing of it may expire"
        );
    }
    let indexes: Vec<(String, Option<String>, Option<String>, String)> =
        list(props("ExecutionsTable").get("GlobalSecondaryIndexes"))
            .iter()
            .map(|g| {
                let keys = list(g.get("KeySchema"));
                let key = |i: usize| keys.get(i).and_then(|k| k.get("AttributeName")).map(str_of);
                (
                    g.get("IndexName").map(str_of).unwrap_or_default(),
                    key(0),
                    key(1),
                    g.get("Projection")
                        .and_then(|p| p.get("ProjectionType"))
                        .map(str_of)
                        .unwrap_or_default(),
                )
            })
            .collect();
    let want: Vec<_> = harel_dynamodb::tables::INDEXES
        .iter()
        .filter(|i| i.table == "executions")
        .map(|i| {
            (
                i.name.to_string(),
                Some(i.partition.0.to_string()),
                i.sort.as_ref().map(|(sk, _)| sk.to_string()),
                "KEYS_ONLY".to_string(),
            )
        })
        .collect();
    assert_eq!(indexes, want, "the template declares the store's indexes");
    let env =
        t["Globals"]["Function"]["Environment"]["Variables"][harel_stack::RETENTION_DAYS].clone();
    assert_eq!(resource_ref(&env), "RetentionDays", "{env:?}");
    assert_eq!(str_of(&t["Parameters"]["RetentionDays"]["Default"]), "30");
}

/// Every role of the deployed template, the ones SAM generates included (the schedules'),
/// grants on named resources only: no managed policy, no wildcard action, no `*` resource but
/// X-Ray's; and the schedules' roles may invoke their own function and write to the failure
/// queue, nothing else.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn no_deployed_role_grants_a_wildcard_resource() {
    let t = deployed();
    let mut roles = Vec::new();
    let mut failures = Vec::new();
    for (id, r) in resources(&t) {
        if r["Type"] != "AWS::IAM::Role" {
            continue;
        }
        let id = str_of(id);
        for statement in statements(&t, &id) {
            let actions: Vec<String> = list(statement.get("Action")).iter().map(str_of).collect();
            for action in &actions {
                if action.contains('*') {
                    failures.push(format!("{id}: wildcard action {action}"));
                }
            }
            for resource in list(statement.get("Resource")) {
                let text = resource_ref(&resource);
                let resourceless = actions.iter().all(|a| RESOURCELESS.contains(&a.as_str()));
                if text.contains('*') && !(text == "*" && resourceless) {
                    failures.push(format!("{id}: {actions:?} on {text:?}"));
                }
            }
        }
        roles.push(id);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        roles,
        [
            "ApiRole",
            "ChargeRole",
            "RelayRole",
            "RelayTickRole",
            "SweeperRole",
            "SweeperTickRole",
            "WorkerRole"
        ],
        "the roles of the deployed template"
    );
    for (schedule_role, function) in [("RelayTickRole", "Relay"), ("SweeperTickRole", "Sweeper")] {
        let mut granted = BTreeSet::new();
        for statement in statements(&t, schedule_role) {
            for action in list(statement.get("Action")) {
                for resource in list(statement.get("Resource")) {
                    granted.insert((str_of(&action), resource_ref(&resource)));
                }
            }
        }
        assert_eq!(
            granted,
            BTreeSet::from([
                (
                    "lambda:InvokeFunction".to_string(),
                    format!("{function}.Arn")
                ),
                (
                    "sqs:SendMessage".to_string(),
                    "FailedInvocationsQueue.Arn".to_string()
                ),
            ]),
            "{schedule_role}"
        );
    }
}

/// The SQS event source polls with the worker's role, which names the queue: SAM adds no
/// AWSLambdaSQSQueueExecutionRole (the poller's actions on `*`) to a role it did not create.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn the_sqs_poller_is_scoped_to_the_queue() {
    let t = deployed();
    let mappings: Vec<(String, &Value)> = resources(&t)
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::Lambda::EventSourceMapping")
        .map(|(k, r)| (str_of(k), r))
        .collect();
    assert_eq!(mappings.len(), 1, "one event source mapping");
    let props = &mappings[0].1["Properties"];
    assert_eq!(resource_ref(&props["EventSourceArn"]), "Queue.Arn");
    assert_eq!(resource_ref(&props["FunctionName"]), "Worker");
    assert_eq!(role_of(&t, "Worker"), "WorkerRole");
    let granted = grants(&t, "Worker");
    for action in [
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
    ] {
        let on: Vec<&String> = granted
            .iter()
            .filter(|(a, _)| a == action)
            .map(|(_, r)| r)
            .collect();
        assert_eq!(on, ["Queue"], "{action}");
    }
}

/// A tiny CloudFormation evaluator: enough of Ref, Fn::If, Fn::Join, Fn::Split and Fn::Sub
/// to compute the physical names a stack gets.
fn eval(v: &Value, stack: &str, params: &BTreeMap<&str, &str>, t: &Value) -> Value {
    let conditions = |name: &str| -> bool {
        match name {
            "DerivePrefix" => params.get("TablePrefix").copied().unwrap_or("").is_empty(),
            other => panic!("condition {other} not modelled"),
        }
    };
    let lookup = |name: &str| -> Value {
        match name {
            "AWS::StackName" => Value::from(stack),
            "AWS::Region" => Value::from("us-east-1"),
            "AWS::AccountId" => Value::from("123456789012"),
            p => Value::from(
                params
                    .get(p)
                    .map(|s| s.to_string())
                    .or_else(|| t["Parameters"].get(p).map(|d| str_of(&d["Default"])))
                    .unwrap_or_else(|| panic!("{p} is neither a parameter nor modelled")),
            ),
        }
    };
    match v {
        Value::Mapping(m) if m.len() == 1 => {
            let (k, arg) = m.iter().next().expect("one entry");
            let args = list(Some(arg));
            match str_of(k).as_str() {
                "Ref" => lookup(&str_of(arg)),
                "Fn::If" => {
                    let branch = if conditions(&str_of(&args[0])) { 1 } else { 2 };
                    eval(&args[branch], stack, params, t)
                }
                "Fn::Join" => {
                    let parts = list(Some(&eval(&args[1], stack, params, t)));
                    Value::from(
                        parts
                            .iter()
                            .map(|p| str_of(&eval(p, stack, params, t)))
                            .collect::<Vec<_>>()
                            .join(&str_of(&args[0])),
                    )
                }
                "Fn::Split" => Value::Sequence(
                    str_of(&eval(&args[1], stack, params, t))
                        .split(&str_of(&args[0]))
                        .map(Value::from)
                        .collect(),
                ),
                "Fn::Sub" => {
                    let (text, vars) = match arg {
                        Value::Sequence(s) => (str_of(&s[0]), s.get(1).cloned()),
                        other => (str_of(other), None),
                    };
                    let mut out = String::new();
                    let mut rest = text.as_str();
                    while let Some((before, after)) = rest.split_once("${") {
                        out.push_str(before);
                        let (name, tail) = after.split_once('}').expect("a closed ${");
                        let value = match vars.as_ref().and_then(|v| v.get(name)) {
                            Some(expr) => eval(expr, stack, params, t),
                            None => lookup(name),
                        };
                        out.push_str(&str_of(&value));
                        rest = tail;
                    }
                    out.push_str(rest);
                    Value::from(out)
                }
                _ => v.clone(),
            }
        }
        other => other.clone(),
    }
}

/// Every physical name a stack gives (tables, queues, log groups, schedules), evaluated.
fn physical_names(t: &Value, stack: &str, params: &BTreeMap<&str, &str>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (id, r) in resources(t) {
        let props = &r["Properties"];
        for key in ["TableName", "QueueName", "LogGroupName", "Name"] {
            if let Some(v) = props.get(key) {
                let name = str_of(&eval(v, stack, params, t));
                assert!(!name.is_empty(), "{id:?}.{key}");
                names.insert(name);
            }
        }
    }
    names
}

/// Two stacks side by side in one account: every name is derived from the stack's, the
/// tables' prefix as the functions and the CLI (the TablePrefix output) read it, unless
/// TablePrefix is given; and the tables, queues and log groups outlive a replacement or a
/// `sam delete`.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn names_are_the_stacks_and_data_is_retained() {
    let t = deployed();
    let none = BTreeMap::new();
    let prod = physical_names(&t, "harel", &none);
    let dev = physical_names(&t, "harel-dev", &none);
    assert!(
        prod.is_disjoint(&dev),
        "shared names: {:?}",
        prod.intersection(&dev).collect::<Vec<_>>()
    );
    for want in [
        "harel_executions",
        "harel_idempotency",
        "harel.fifo",
        "harel-dlq.fifo",
        "harel-failed",
        "/aws/lambda/harel/worker",
        "harel-sweeper-tick",
    ] {
        assert!(prod.contains(want), "{want} not in {prod:?}");
    }
    for want in [
        "harel_dev_executions",
        "harel_dev.fifo",
        "harel-dev-relay-tick",
    ] {
        assert!(dev.contains(want), "{want} not in {dev:?}");
    }
    let shared = BTreeMap::from([("TablePrefix", "orders")]);
    let named = physical_names(&t, "harel-dev", &shared);
    assert!(named.contains("orders_executions") && named.contains("orders.fifo"));
    // the functions and the CLI read the same prefix the tables are named with
    for (stack, params, prefix) in [
        ("harel-dev", &none, "harel_dev"),
        ("harel-dev", &shared, "orders"),
    ] {
        let output = eval(&t["Outputs"]["TablePrefix"]["Value"], stack, params, &t);
        assert_eq!(str_of(&output), prefix);
        for function in ["Worker", "Relay", "Sweeper"] {
            let env = &resources(&t)[function]["Properties"]["Environment"]["Variables"];
            let value = eval(&env["HAREL_TABLE_PREFIX"], stack, params, &t);
            assert_eq!(str_of(&value), prefix, "{function}");
        }
    }
    let mut stateful = 0;
    for (id, r) in resources(&t) {
        let kind = str_of(&r["Type"]);
        if matches!(
            kind.as_str(),
            "AWS::DynamoDB::Table" | "AWS::SQS::Queue" | "AWS::Logs::LogGroup"
        ) {
            stateful += 1;
            for policy in ["DeletionPolicy", "UpdateReplacePolicy"] {
                assert_eq!(
                    r.get(policy).map(str_of).as_deref(),
                    Some("Retain"),
                    "{id:?} ({kind}): {policy}"
                );
            }
        }
    }
    assert_eq!(
        stateful,
        10 + 5 + 5,
        "10 tables (harel's 7, idempotency, definitions, events), 5 queues (the events' dead letters, the failed-executions example's), 5 log groups (the example action's and the API's too)"
    );
}

/// X-Ray, log groups with a retention, the async functions' failure destination, EventBridge
/// Scheduler with a retry policy and a dead-letter queue, high-throughput FIFO.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn functions_are_traced_logged_and_their_failures_kept() {
    let t = deployed();
    let r = resources(&t);
    for function in ["Worker", "Relay", "Sweeper", "Api"] {
        let props = &r[function]["Properties"];
        assert_eq!(
            str_of(&props["TracingConfig"]["Mode"]),
            "Active",
            "{function}"
        );
        let group = resource_ref(&props["LoggingConfig"]["LogGroup"]);
        assert_eq!(group, format!("{function}LogGroup"));
        assert_eq!(
            resource_ref(&r[group.as_str()]["Properties"]["RetentionInDays"]),
            "LogRetentionInDays"
        );
        assert_eq!(str_of(&props["LoggingConfig"]["LogFormat"]), "JSON");
    }
    for function in ["Relay", "Sweeper"] {
        let config = r
            .iter()
            .find(|(_, v)| {
                v["Type"] == "AWS::Lambda::EventInvokeConfig"
                    && resource_ref(&v["Properties"]["FunctionName"]) == function
            })
            .map(|(_, v)| &v["Properties"])
            .unwrap_or_else(|| panic!("{function} has no EventInvokeConfig"));
        assert_eq!(
            resource_ref(&config["DestinationConfig"]["OnFailure"]["Destination"]),
            "FailedInvocationsQueue.Arn",
            "{function}"
        );
        let schedules: Vec<&Value> = r
            .values()
            .filter(|v| {
                v["Type"] == "AWS::Scheduler::Schedule"
                    && resource_ref(&v["Properties"]["Target"]["Arn"]) == format!("{function}.Arn")
            })
            .collect();
        assert_eq!(schedules.len(), 1, "{function}: one schedule");
        let target = &schedules[0]["Properties"]["Target"];
        assert!(
            target["RetryPolicy"].get("MaximumRetryAttempts").is_some(),
            "{function}: {target:?}"
        );
        assert_eq!(
            resource_ref(&target["DeadLetterConfig"]["Arn"]),
            "FailedInvocationsQueue.Arn"
        );
        assert_eq!(
            str_of(&schedules[0]["Properties"]["ScheduleExpression"]),
            "rate(1 minute)"
        );
    }
    // the schedules are EventBridge Scheduler's, not rules: the only rule is the consumers'
    // example on the events bus (docs/src/events.md), which targets its queue, never a function
    for (id, rule) in r.iter().filter(|(_, v)| v["Type"] == "AWS::Events::Rule") {
        assert_eq!(
            rule.get("Condition").map(str_of).as_deref(),
            Some("HasFailedExecutionsQueue"),
            "the schedules are EventBridge Scheduler's, not rules: {id:?}"
        );
        for target in list(rule["Properties"].get("Targets")) {
            assert_eq!(
                resource_ref(&target["Arn"]),
                "FailedExecutionsTarget.Arn",
                "{id:?}"
            );
        }
    }
    for queue in ["Queue", "DeadLetterQueue"] {
        let props = &r[queue]["Properties"];
        assert_eq!(str_of(&props["FifoQueue"]), "true");
        assert_eq!(
            str_of(&props["DeduplicationScope"]),
            "messageGroup",
            "{queue}"
        );
        assert_eq!(
            str_of(&props["FifoThroughputLimit"]),
            "perMessageGroupId",
            "{queue}"
        );
    }
}

/// The alarms: the dead letters (depth, and age before SQS's 14 days), failed asynchronous
/// invocations, each function's errors and throttles, and harel's own metrics under the
/// namespace and dimensions the code publishes; each notifies AlarmTopicArn when it is set.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn alarms_watch_what_can_go_wrong_and_notify_the_topic() {
    use harel_lambda::metrics::{
        CONFLICTS, FAILED_EXECUTIONS, FUNCTION_DIMENSION, OUT_OF_TIME, SERVICE_DIMENSION,
    };
    let t = deployed();
    let mut watched = BTreeSet::new();
    for (id, r) in resources(&t) {
        if r["Type"] != "AWS::CloudWatch::Alarm" {
            continue;
        }
        let props = &r["Properties"];
        for key in ["AlarmActions", "OKActions"] {
            let action = &props[key];
            let args = list(action.get("Fn::If"));
            assert_eq!(args.len(), 3, "{id:?}.{key}: {action:?}");
            assert_eq!(str_of(&args[0]), "HasAlarmTopic");
            assert_eq!(
                list(Some(&args[1]))
                    .iter()
                    .map(resource_ref)
                    .collect::<Vec<_>>(),
                ["AlarmTopicArn"]
            );
            assert_eq!(resource_ref(&args[2]), "AWS::NoValue");
        }
        assert!(props.get("AlarmDescription").is_some(), "{id:?}");
        let dims: Vec<(String, String)> = list(props.get("Dimensions"))
            .iter()
            .map(|d| (str_of(&d["Name"]), resource_ref(&d["Value"])))
            .collect();
        watched.insert((
            resource_ref(&props["Namespace"]),
            str_of(&props["MetricName"]),
            dims,
        ));
    }
    let d = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let mut want = BTreeSet::from([
        (
            "AWS/SQS".to_string(),
            "ApproximateNumberOfMessagesVisible".to_string(),
            d(&[("QueueName", "DeadLetterQueue.QueueName")]),
        ),
        (
            "AWS/SQS".to_string(),
            "ApproximateAgeOfOldestMessage".to_string(),
            d(&[("QueueName", "DeadLetterQueue.QueueName")]),
        ),
        (
            "AWS/SQS".to_string(),
            "ApproximateNumberOfMessagesVisible".to_string(),
            d(&[("QueueName", "FailedInvocationsQueue.QueueName")]),
        ),
        (
            "AWS/SQS".to_string(),
            "ApproximateNumberOfMessagesVisible".to_string(),
            d(&[("QueueName", "EventsDeadLetterQueue.QueueName")]),
        ),
    ]);
    for function in ["Worker", "Relay", "Sweeper"] {
        for metric in ["Errors", "Throttles"] {
            want.insert((
                "AWS/Lambda".to_string(),
                metric.to_string(),
                d(&[("FunctionName", function)]),
            ));
        }
    }
    for (metric, function) in [
        (OUT_OF_TIME, "relay"),
        (OUT_OF_TIME, "sweeper"),
        (CONFLICTS, "worker"),
        (FAILED_EXECUTIONS, "worker"),
    ] {
        want.insert((
            "MetricsNamespace".to_string(),
            metric.name.to_string(),
            d(&[
                (SERVICE_DIMENSION, "AWS::StackName"),
                (FUNCTION_DIMENSION, function),
            ]),
        ));
    }
    assert_eq!(watched, want);
}

/// What the functions read of Powertools' variables and the local endpoint, from the
/// parameters; and every parameter says what it is for.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn parameters_are_described_and_reach_the_functions() {
    let raw = template();
    for (name, p) in raw["Parameters"].as_mapping().expect("parameters") {
        assert!(
            p.get("Description")
                .is_some_and(|d| str_of(d).trim().len() > 10),
            "parameter {name:?} has no description"
        );
    }
    assert_eq!(str_of(&raw["Parameters"]["EndpointUrl"]["Default"]), "");
    assert_eq!(str_of(&raw["Parameters"]["AlarmTopicArn"]["Default"]), "");
    assert_eq!(
        str_of(&raw["Parameters"]["MetricsNamespace"]["Default"]),
        harel_lambda::metrics::NAMESPACE
    );
    let t = deployed();
    for function in ["Worker", "Relay", "Sweeper", "Api"] {
        let env = &resources(&t)[function]["Properties"]["Environment"]["Variables"];
        for (variable, source) in [
            (
                harel_lambda::logging::POWERTOOLS_SERVICE_NAME,
                "AWS::StackName",
            ),
            (
                harel_lambda::metrics::POWERTOOLS_METRICS_NAMESPACE,
                "MetricsNamespace",
            ),
            (harel_stack::LOCAL_ENDPOINT_URL, "EndpointUrl"),
        ] {
            assert_eq!(
                resource_ref(&env[variable]),
                source,
                "{function}: {variable}"
            );
        }
    }
}

/// `sam local invoke` passes only the variables the template declares: every variable
/// events/env.json sets for a function is one of that function's (so the endpoint override
/// reaches it and the local run cannot fall through to real AWS).
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn env_json_sets_only_declared_variables() {
    let t = deployed();
    let text = std::fs::read_to_string(root().join("events/env.json")).expect("events/env.json");
    let env: Value = serde_yaml_ng::from_str(&text).expect("JSON");
    let mut functions = 0;
    for (function, vars) in env.as_mapping().expect("by function") {
        let function = str_of(function);
        let declared = resources(&t)[function.as_str()]["Properties"]["Environment"]["Variables"]
            .as_mapping()
            .expect("variables")
            .keys()
            .map(str_of)
            .collect::<BTreeSet<_>>();
        for (name, _) in vars.as_mapping().expect("variables") {
            assert!(
                declared.contains(&str_of(name)),
                "events/env.json sets {name:?} for {function}, which the template does not declare: sam local drops it"
            );
        }
        assert!(
            vars.get(harel_stack::LOCAL_ENDPOINT_URL).is_some(),
            "{function}: no endpoint override"
        );
        functions += 1;
    }
    assert_eq!(functions, 3);
}

/// Remote actions: the worker and the relay may invoke the functions the deployment lists in
/// `RemoteActionFunctions` (the action map's Lambda targets), read the parameters of
/// `RemoteActionParameters` and the secrets of `RemoteActionSecrets` (its `ssm:` and
/// `secretsmanager:` header values), nothing when a list is empty (the default), and only
/// the one action each; the sweeper runs no action and reads no header value.
#[test]
fn remote_actions_grant_only_the_listed_functions() {
    let t = template();
    for (list_parameter, condition_name, action) in [
        (
            "RemoteActionFunctions",
            "HasRemoteActions",
            "lambda:InvokeFunction",
        ),
        (
            "RemoteActionParameters",
            "HasRemoteParameters",
            "ssm:GetParameter",
        ),
        (
            "RemoteActionSecrets",
            "HasRemoteSecrets",
            "secretsmanager:GetSecretValue",
        ),
    ] {
        let parameter = t
            .get("Parameters")
            .and_then(|p| p.get(list_parameter))
            .unwrap_or_else(|| panic!("the {list_parameter} parameter"));
        assert_eq!(parameter.get("Default").map(str_of).as_deref(), Some(""));
        assert_eq!(
            parameter.get("Type").map(str_of).as_deref(),
            Some("CommaDelimitedList")
        );
        let condition = format!(
            "{:?}",
            t.get("Conditions")
                .and_then(|c| c.get(condition_name))
                .unwrap_or_else(|| panic!("the {condition_name} condition"))
        );
        assert!(condition.contains(list_parameter), "{condition}");
        for function in ["Worker", "Relay", "Sweeper"] {
            let role = role_of(&t, function);
            let conditioned: Vec<Value> = raw_statements(&t, &role)
                .into_iter()
                .filter_map(|s| match s {
                    Value::Tagged(tag) if tag.tag == "If" => Some(tag.value.clone()),
                    _ => None,
                })
                .collect();
            let remote: Vec<&Value> = conditioned
                .iter()
                .filter(|v| format!("{v:?}").contains(list_parameter))
                .collect();
            if function == "Sweeper" {
                assert!(remote.is_empty(), "the sweeper runs no action");
                continue;
            }
            assert_eq!(
                remote.len(),
                1,
                "{function}: one statement for {list_parameter}"
            );
            let parts = list(Some(remote[0]));
            assert_eq!(str_of(&parts[0]), condition_name, "{function}");
            let statement = &parts[1];
            assert_eq!(
                list(statement.get("Action"))
                    .iter()
                    .map(str_of)
                    .collect::<Vec<_>>(),
                vec![action]
            );
            assert_eq!(
                statement.get("Resource").map(resource_ref).as_deref(),
                Some(list_parameter)
            );
            assert!(
                format!("{:?}", parts[2]).contains("AWS::NoValue"),
                "{function}: no grant at all without {list_parameter}"
            );
        }
    }
}

/// The example remote action (`ChargeFunction`, functions/charge) calls nothing: its role
/// writes its own log group and X-Ray segments, nothing else; built from the `charge` binary
/// of the workspace, named after the stack so an action map can bind it
/// (`lambda:${AWS::StackName}-charge`).
#[test]
fn the_example_action_function_has_only_logs() {
    let t = template();
    let f = resources(&t)
        .get("ChargeFunction")
        .expect("the ChargeFunction");
    let props = f.get("Properties").expect("properties");
    assert!(props.get("Policies").is_none(), "no policy of its own");
    assert!(props.get("Events").is_none(), "invoked by the worker only");
    assert_eq!(
        grants(&t, "ChargeFunction"),
        BTreeSet::from([
            (
                "logs:CreateLogStream".to_string(),
                "ChargeLogGroup".to_string()
            ),
            (
                "logs:PutLogEvents".to_string(),
                "ChargeLogGroup".to_string()
            ),
            ("xray:PutTraceSegments".to_string(), "*".to_string()),
            ("xray:PutTelemetryRecords".to_string(), "*".to_string()),
        ])
    );
    assert_eq!(
        format!("{:?}", props.get("FunctionName").expect("a fixed name")),
        format!(
            "{:?}",
            Value::Tagged(Box::new(serde_yaml_ng::value::TaggedValue {
                tag: serde_yaml_ng::value::Tag::new("Sub"),
                value: Value::String("${AWS::StackName}-charge".into()),
            }))
        )
    );
    let binary = f
        .get("Metadata")
        .and_then(|m| m.get("BuildProperties"))
        .and_then(|b| b.get("Binary"))
        .map(str_of);
    assert_eq!(binary.as_deref(), Some("charge"));
    let manifest = std::fs::read_to_string(root().join("functions/charge/Cargo.toml"))
        .expect("functions/charge");
    assert!(manifest.contains("name = \"charge\""), "{manifest}");
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        workspace.contains("\"functions/charge\""),
        "a workspace member"
    );
}

/// Worker, Relay, Sweeper and Api deploy one binary (functions/bootstrap), which `sam build`
/// links once; each names the function it runs in its Handler (Lambda's `_HANDLER`), a name
/// that binary dispatches on. (`sam_local.rs` runs that binary as the Worker and as the Api.)
#[test]
fn the_stacks_functions_share_one_binary_and_name_theirs_in_the_handler() {
    let t = template();
    let r = resources(&t);
    let dispatch = std::fs::read_to_string(root().join("functions/bootstrap/src/main.rs"))
        .expect("functions/bootstrap");
    for (function, handler) in [
        ("Worker", "worker"),
        ("Relay", "relay"),
        ("Sweeper", "sweeper"),
        ("Api", "api"),
    ] {
        let f = r.get(function).expect("the function");
        let binary = f
            .get("Metadata")
            .and_then(|m| m.get("BuildProperties"))
            .and_then(|b| b.get("Binary"))
            .map(str_of);
        assert_eq!(binary.as_deref(), Some("bootstrap"), "{function}");
        let named = f["Properties"].get("Handler").map(str_of);
        assert_eq!(named.as_deref(), Some(handler), "{function}'s Handler");
        let kind = format!("(\"{handler}\", Function::{function})");
        assert!(dispatch.contains(&kind), "the bootstrap runs {handler}");
    }
    let manifest = std::fs::read_to_string(root().join("functions/bootstrap/Cargo.toml"))
        .expect("functions/bootstrap");
    assert!(manifest.contains("name = \"bootstrap\""), "{manifest}");
}

/// The consumers' example (docs/src/events.md): the rule matches what the store writes (its
/// detail-type, status FAILED, the configured source) on the bus the relay puts to, and only
/// that rule may send to its queue.
#[test]
fn the_failed_executions_example_matches_the_events_it_takes() {
    let t = template();
    let r = resources(&t);
    let props = &r["FailedExecutionsRule"]["Properties"];
    assert_eq!(resource_ref(&props["EventBusName"]), "EventBusName");
    let pattern = &props["EventPattern"];
    assert_eq!(
        list(pattern.get("detail-type"))
            .iter()
            .map(str_of)
            .collect::<Vec<_>>(),
        vec![harel_store::events::STATUS_CHANGE.to_string()]
    );
    assert_eq!(
        list(pattern["detail"].get("status"))
            .iter()
            .map(str_of)
            .collect::<Vec<_>>(),
        vec!["FAILED".to_string()]
    );
    assert_eq!(
        list(pattern.get("source"))
            .iter()
            .map(resource_ref)
            .collect::<Vec<_>>(),
        vec!["EventSource".to_string()]
    );
    let statement =
        &list(r["FailedExecutionsTargetPolicy"]["Properties"]["PolicyDocument"].get("Statement"))
            [0];
    assert_eq!(
        resource_ref(&statement["Condition"]["ArnEquals"]["aws:SourceArn"]),
        "FailedExecutionsRule.Arn"
    );
    let env = &t["Globals"]["Function"]["Environment"]["Variables"];
    assert_eq!(resource_ref(&env[harel_stack::EVENT_BUS]), "EventBusName");
    assert_eq!(resource_ref(&env[harel_stack::EVENT_SOURCE]), "EventSource");
}

/// The HTTP API takes IAM (SigV4) on every route but the outside world's: a webhook provider
/// or a callback token's holder cannot sign, so `POST /hooks/{name}` and
/// `POST /callbacks/{token}[/fail]` have routes of their own without an authorizer (their
/// signature or token is checked by the function) - exactly the operations openapi.yaml marks
/// `security: []`.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn only_the_webhook_and_callback_routes_skip_iam() {
    let t = deployed();
    let api = &resources(&t)["HttpApi"]["Properties"];
    let body = api.get("Body").unwrap_or(&api["DefinitionBody"]);
    let mut open = BTreeSet::new();
    let mut routes = 0;
    for (path, ops) in body["paths"].as_mapping().expect("paths") {
        for (method, op) in ops.as_mapping().expect("operations") {
            routes += 1;
            let security: Vec<String> = list(op.get("security"))
                .iter()
                .flat_map(|s| {
                    s.as_mapping()
                        .into_iter()
                        .flat_map(|m| m.keys().map(str_of))
                })
                .collect();
            match security.as_slice() {
                [one] if one == "AWS_IAM" => {}
                [one] if one == "NONE" => {
                    open.insert(format!("{} {}", str_of(method), str_of(path)));
                }
                other => panic!("{method:?} {path:?}: security {other:?}"),
            }
        }
    }
    assert_eq!(routes, 4, "the $default route and the three open ones");
    let spec: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(root().join("openapi.yaml")).expect("openapi.yaml"),
    )
    .expect("the spec");
    let mut unsigned = BTreeSet::new();
    for (path, ops) in spec["paths"].as_mapping().expect("paths") {
        for (method, op) in ops.as_mapping().expect("operations") {
            if op.get("security").is_some_and(|s| list(Some(s)).is_empty()) {
                unsigned.insert(format!("{} {}", str_of(method), str_of(path)));
            }
        }
    }
    assert_eq!(open, unsigned);
    assert_eq!(
        open,
        BTreeSet::from([
            "post /callbacks/{token}".to_string(),
            "post /callbacks/{token}/fail".to_string(),
            "post /hooks/{name}".to_string(),
        ])
    );
    // and what they are checked with reaches the functions: the hooks file the api's, the
    // callback secret those that make tokens (worker, relay) and the one that opens them
    let env = |function: &str, variable: &str| {
        resource_ref(&resources(&t)[function]["Properties"]["Environment"]["Variables"][variable])
    };
    assert_eq!(env("Api", harel_stack::HOOKS_FILE), "HooksFile");
    for function in ["Worker", "Relay", "Api"] {
        assert_eq!(
            env(function, "HAREL_CALLBACK_SECRET"),
            "CallbackSecret",
            "{function}"
        );
    }
}
