//! Least privilege and data hygiene in `template.yaml`: each function's policy grants exactly
//! the actions its code makes, on its own tables and queues (no `*`); every queue and table is
//! encrypted; the dead-letter queue keeps messages 14 days. And the code side: every AWS SDK
//! operation the functions' crates call is in the table below, so a new call fails here until
//! someone says which function makes it and grants it.
//!
//! YAML: `serde_yaml_ng` (the maintained fork of the archived `serde_yaml`) keeps
//! CloudFormation's short-form tags (`!Ref`, `!GetAtt`, `!Sub`) as tagged values instead of
//! refusing them, which is what a policy check needs to read `!GetAtt Table.Arn`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
                _ => format!("{m:?}"),
            }
        }
        other => str_of(other),
    }
}

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

/// (action, resource logical id) pairs a function's inline policies grant.
fn grants(t: &Value, function: &str) -> BTreeSet<(String, String)> {
    let f = resources(t)
        .get(function)
        .unwrap_or_else(|| panic!("no resource {function}"));
    let mut out = BTreeSet::new();
    for policy in list(f.get("Properties").and_then(|p| p.get("Policies"))) {
        for statement in list(policy.get("Statement")) {
            // `!If [Condition, statement, !Ref AWS::NoValue]`: the statement, when it applies
            let statement = match statement {
                Value::Tagged(t) if t.tag == "If" => list(Some(&t.value))
                    .get(1)
                    .cloned()
                    .unwrap_or_else(|| panic!("{function}: an !If without a statement")),
                other => other,
            };
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
                    assert!(
                        !r.contains('*'),
                        "{function}: wildcard resource {r:?} for {action}"
                    );
                    // a table's index: "X.Arn/index/I" is granted as "X/index/I"
                    let (arn, index) = match r.split_once("/index/") {
                        Some((arn, index)) => (arn, Some(index)),
                        None => (r.as_str(), None),
                    };
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
    ("Scan", "OutboxTable", "pending_outbox"),
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
    ("SendMessageBatch", "Queue", "Timeout publishes"),
];

fn iam_action(op: &str) -> String {
    match op {
        "TransactWriteItems:Put" => "dynamodb:PutItem".into(),
        "TransactWriteItems:Delete" => "dynamodb:DeleteItem".into(),
        "SendMessageBatch" => "sqs:SendMessage".into(),
        "Invoke" => "lambda:InvokeFunction".into(),
        "GetParameter" => "ssm:GetParameter".into(),
        "GetSecretValue" => "secretsmanager:GetSecretValue".into(),
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

fn needs(table: &[(&str, &str, &str)]) -> BTreeSet<(String, String)> {
    table
        .iter()
        .map(|(op, res, _)| (iam_action(op), res.to_string()))
        .collect()
}

#[test]
fn each_function_is_granted_exactly_what_its_code_uses() {
    let t = template();
    let mut failures = Vec::new();
    for (function, table) in [("Worker", WORKER), ("Relay", RELAY), ("Sweeper", SWEEPER)] {
        let granted = grants(&t, function);
        let needed = needs(table);
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
        "functions/app/src",
        "functions/worker/src",
        "functions/relay/src",
        "functions/sweeper/src",
    ] {
        sdk_calls(&root().join(dir), &mut found);
    }
    let used: BTreeSet<String> = WORKER
        .iter()
        .chain(RELAY)
        .chain(SWEEPER)
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
            let f = resources(&t).get(function).expect("the function");
            let conditioned: Vec<Value> = list(f.get("Properties").and_then(|p| p.get("Policies")))
                .iter()
                .flat_map(|p| list(p.get("Statement")))
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

/// The example remote action (`ChargeFunction`, functions/charge) calls nothing: no policy of
/// its own (SAM's basic execution role: logs), built from the `charge` binary of the
/// workspace, named so an action map can bind it (`lambda:${TablePrefix}-charge`).
#[test]
fn the_example_action_function_has_only_logs() {
    let t = template();
    let f = resources(&t)
        .get("ChargeFunction")
        .expect("the ChargeFunction");
    let props = f.get("Properties").expect("properties");
    assert!(
        props.get("Policies").is_none() && props.get("Role").is_none(),
        "the example action calls nothing: no policy, no role of its own"
    );
    assert!(props.get("Events").is_none(), "invoked by the worker only");
    assert_eq!(
        format!("{:?}", props.get("FunctionName").expect("a fixed name")),
        format!(
            "{:?}",
            Value::Tagged(Box::new(serde_yaml_ng::value::TaggedValue {
                tag: serde_yaml_ng::value::Tag::new("Sub"),
                value: Value::String("${TablePrefix}-charge".into()),
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
    let env = t["Globals"]["Function"]["Environment"]["Variables"]
        [harel_lambda::config::RETENTION_DAYS]
        .clone();
    assert_eq!(resource_ref(&env), "RetentionDays", "{env:?}");
    assert_eq!(str_of(&t["Parameters"]["RetentionDays"]["Default"]), "30");
}
