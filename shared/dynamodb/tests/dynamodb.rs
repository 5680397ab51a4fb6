//! What only the DynamoDB store has: harel's item layout, DynamoDB's limits, the outcome of
//! a cancelled transaction, Scan paging. `scripts/with-moto.sh cargo test -p harel-dynamodb`.

mod common;

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use common::faults::{faulty_client, Fault};
use harel_dynamodb::DynamoDbStore;
use harel_model::{Event, Execution, Object};
use harel_store::{Commit, ExecutionStore, ListQuery, Spawn, StoreError, TimerOp};
use serde_json::json;

fn obj(v: serde_json::Value) -> Object {
    match v {
        serde_json::Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn new_exe(id: &str) -> Execution {
    Execution::new("def").with_id(id)
}

async fn scan(
    store: &DynamoDbStore,
    table: String,
) -> Vec<std::collections::HashMap<String, AttributeValue>> {
    store
        .client()
        .scan()
        .table_name(table)
        .send()
        .await
        .expect("scan")
        .items()
        .to_vec()
}

fn attr_s(item: &std::collections::HashMap<String, AttributeValue>, k: &str) -> String {
    match item.get(k) {
        Some(AttributeValue::S(s)) => s.clone(),
        other => panic!("{k}: expected S, got {other:?}"),
    }
}

fn attr_n(item: &std::collections::HashMap<String, AttributeValue>, k: &str) -> String {
    match item.get(k) {
        Some(AttributeValue::N(s)) => s.clone(),
        other => panic!("{k}: expected N, got {other:?}"),
    }
}

#[tokio::test]
async fn items_are_laid_out_as_harel_writes_them() {
    let store = common::store(200).await;
    let t = store.tables().clone();
    let mut exe = new_exe("layout");
    exe.context = obj(json!({"x": 1.0}));
    let commit = Commit {
        emits: vec![(None, Event::new("Out").with_id("e1"))],
        processed_event_id: Some("ev-9".into()),
        timers: vec![TimerOp::Schedule {
            path: "A.B".into(),
            fire_at: 1_700_000_000.5,
        }],
        spawns: vec![Spawn {
            child_id: "layout:R:1".into(),
            root_path: "R".into(),
            context: obj(json!({"a": 1.0, "é": [1, null]})),
        }],
        trace: Some(obj(json!({"event_kind": "Start", "actions": []}))),
    };
    store.commit(&mut exe, commit).await.expect("commit");

    let exes = scan(&store, t.executions()).await;
    assert_eq!(exes.len(), 1);
    let e = &exes[0];
    assert_eq!(attr_s(e, "id"), "layout");
    assert_eq!(attr_n(e, "version"), "1");
    assert_eq!(attr_s(e, "definition_id"), "def");
    assert_eq!(
        Execution::from_json(&attr_s(e, "data")).expect("data is the Execution JSON"),
        exe
    );
    assert_eq!(attr_n(e, "trace_idx"), "0");

    let outbox = scan(&store, t.outbox()).await;
    assert_eq!(outbox.len(), 1);
    assert_eq!(
        outbox[0].get("target_id"),
        Some(&AttributeValue::Null(true)),
        "None is NULL, as boto3 writes it"
    );
    let event: Event = serde_json::from_str(&attr_s(&outbox[0], "event")).expect("event JSON");
    assert_eq!(event.id, "e1");

    let spawns = scan(&store, t.spawns()).await;
    assert_eq!(
        attr_s(&spawns[0], "context"),
        r#"{"a": 1.0, "\u00e9": [1, null]}"#,
        "json.dumps text"
    );
    assert_eq!(attr_s(&spawns[0], "parent_id"), "layout");
    assert_eq!(attr_s(&spawns[0], "child_id"), "layout:R:1");
    assert_eq!(attr_s(&spawns[0], "root_path"), "R");

    let processed = scan(&store, t.processed()).await;
    assert_eq!(processed.len(), 1);
    assert_eq!(processed[0].len(), 2, "a dedupe mark is just its key");
    assert_eq!(attr_s(&processed[0], "event_id"), "ev-9");

    let timers = scan(&store, t.timers()).await;
    assert_eq!(attr_n(&timers[0], "fire_at"), "1700000000.5");
    assert_eq!(attr_s(&timers[0], "path"), "A.B");
    // harel's three attributes and the index's shard: FNV-1a of "layout\0A.B" mod 8
    assert_eq!(timers[0].len(), 4);
    assert_eq!(
        attr_s(&timers[0], "due_shard"),
        harel_dynamodb::timers::due_shard("layout", "A.B", 8).to_string()
    );

    let trace = scan(&store, t.trace()).await;
    assert_eq!(attr_n(&trace[0], "idx"), "0");
    assert_eq!(
        attr_s(&trace[0], "entry"),
        r#"{"event_kind": "Start", "actions": []}"#
    );

    assert!(
        scan(&store, t.counters()).await.is_empty(),
        "clock seqs touch no counter"
    );
}

#[tokio::test]
async fn limits_fail_clearly_and_write_nothing() {
    let store = common::store(200).await;
    let t = store.tables().clone();

    let mut exe = new_exe("many");
    let commit = Commit {
        emits: (0..100)
            .map(|i| (None, Event::new(format!("E{i}"))))
            .collect(),
        ..Commit::default()
    };
    match store.commit(&mut exe, commit).await {
        Err(StoreError::TooLarge(msg)) => {
            assert!(
                msg.contains("101 transaction items") && msg.contains("\"many\""),
                "{msg}"
            );
            assert!(msg.contains("nothing was written"), "{msg}");
        }
        other => panic!("101 items must be refused, got {other:?}"),
    }
    assert_eq!(exe.version, 0);

    let mut big = new_exe("big");
    big.context
        .insert("blob".into(), json!("x".repeat(410_000)));
    match store.commit(&mut big, Commit::default()).await {
        Err(StoreError::TooLarge(msg)) => {
            assert!(msg.contains("execution \"big\""), "{msg}");
            assert!(msg.contains("-byte item"), "{msg}");
        }
        other => panic!("an Execution item past 400 KB must be refused, got {other:?}"),
    }

    let mut wide = new_exe("wide");
    let commit = Commit {
        emits: (0..11)
            .map(|i| {
                (
                    None,
                    Event::new(format!("E{i}")).with_data(obj(json!({"pad": "y".repeat(390_000)}))),
                )
            })
            .collect(),
        ..Commit::default()
    };
    match store.commit(&mut wide, commit).await {
        Err(StoreError::TooLarge(msg)) => assert!(msg.contains("transaction limit"), "{msg}"),
        other => panic!("a commit past 4 MB must be refused, got {other:?}"),
    }

    for table in [t.executions(), t.outbox()] {
        assert!(
            scan(&store, table.clone()).await.is_empty(),
            "{table} untouched"
        );
    }
    // just under the limits it goes through
    let commit = Commit {
        emits: (0..99)
            .map(|i| (None, Event::new(format!("E{i}"))))
            .collect(),
        ..Commit::default()
    };
    store.commit(&mut exe, commit).await.expect("100 items fit");
    assert_eq!(store.pending_outbox().await.expect("outbox").len(), 99);
}

#[tokio::test]
async fn cancellations_other_than_the_version_check_are_never_conflicts() {
    let (client, faults) = faulty_client().await;
    let store = common::store_on(client, 200).await;
    let mut exe = new_exe("faulty");
    store
        .commit(&mut exe, Commit::default())
        .await
        .expect("insert");
    let step = || Commit {
        emits: vec![(Some("faulty".into()), Event::new("E"))],
        timers: vec![TimerOp::Schedule {
            path: "P".into(),
            fire_at: 5.0,
        }],
        ..Commit::default()
    };

    let cases: Vec<(Fault, &str)> = vec![
        (
            Fault::cancelled(&["None", "TransactionConflict", "None"]),
            "retryable",
        ),
        (
            Fault::cancelled(&["None", "None", "ThrottlingError"]),
            "retryable",
        ),
        (
            Fault::cancelled(&["None", "ValidationError", "None"]),
            "other",
        ),
        (
            Fault::error(
                "TransactWriteItems",
                "ProvisionedThroughputExceededException",
            ),
            "retryable",
        ),
        (
            Fault::error("TransactWriteItems", "TransactionConflictException"),
            "retryable",
        ),
        (
            Fault::error("TransactWriteItems", "ValidationException"),
            "other",
        ),
    ];
    for (fault, want) in cases {
        let what = fault.body.clone();
        faults.push(fault);
        let r = store.commit(&mut exe, step()).await;
        match (want, &r) {
            ("retryable", Err(StoreError::Retryable(_))) | ("other", Err(StoreError::Other(_))) => {
            }
            _ => panic!("{what}: expected {want}, got {r:?}"),
        }
        assert_eq!(exe.version, 1, "{what}: the version bump is undone");
    }
    assert_eq!(faults.pending(), 0);
    assert!(
        store.pending_outbox().await.expect("outbox").is_empty(),
        "nothing leaked"
    );
    assert!(store.due_timers(10.0).await.expect("timers").is_empty());

    // a CAS miss reported the old way (bare exception, or reasons without the item): the
    // stored version is read back
    for fault in [
        Fault::error("TransactWriteItems", "ConditionalCheckFailedException"),
        Fault::cancelled(&["ConditionalCheckFailed", "None", "None"]),
    ] {
        faults.push(fault);
        match store.commit(&mut exe, step()).await {
            Err(StoreError::Conflict {
                expected: 1,
                found: Some(1),
                ..
            }) => {}
            other => panic!("expected a conflict with the version read back, got {other:?}"),
        }
    }
    // an outbox seq that already exists: laid out again with fresh seqs, and it commits
    faults.push(Fault::cancelled(&[
        "None",
        "ConditionalCheckFailed",
        "None",
    ]));
    let seqs = store
        .commit(&mut exe, step())
        .await
        .expect("retried with fresh seqs");
    assert_eq!(faults.pending(), 0);
    assert_eq!(exe.version, 2);
    let outbox = store.pending_outbox().await.expect("outbox");
    assert_eq!(outbox.iter().map(|o| o.seq).collect::<Vec<_>>(), seqs);
}

#[tokio::test]
async fn a_backlog_larger_than_one_scan_page_drains_in_seq_order() {
    let store = common::store(200).await;
    let mut exe = new_exe("backlog");
    let pad = "z".repeat(4_000);
    let mut all_seqs = Vec::new();
    for batch in 0..12 {
        let commit = Commit {
            emits: (0..25)
                .map(|i| {
                    (
                        Some("backlog".into()),
                        Event::new(format!("B{batch}-{i}")).with_data(obj(json!({"pad": pad}))),
                    )
                })
                .collect(),
            ..Commit::default()
        };
        all_seqs.extend(store.commit(&mut exe, commit).await.expect("commit"));
    }
    // the table really is bigger than one Scan page
    let first = store
        .client()
        .scan()
        .table_name(store.tables().outbox())
        .send()
        .await
        .expect("scan");
    assert!(
        first.last_evaluated_key().is_some(),
        "one Scan page does not hold the backlog"
    );
    assert!(first.items().len() < 300);
    let pending = store.pending_outbox().await.expect("outbox");
    assert_eq!(pending.len(), 300);
    assert_eq!(
        pending.iter().map(|o| o.seq).collect::<Vec<_>>(),
        all_seqs,
        "sorted by seq"
    );
}

#[tokio::test]
async fn listing_spans_more_than_one_scan_page() {
    let store = common::store(200).await;
    let pad = "p".repeat(40_000);
    for i in 0..30 {
        let mut e = new_exe(&format!("l{i:02}"));
        e.context.insert("pad".into(), json!(pad));
        store
            .commit(&mut e, Commit::default())
            .await
            .expect("insert");
    }
    let first = store
        .client()
        .scan()
        .table_name(store.tables().executions())
        .send()
        .await
        .expect("scan");
    assert!(
        first.last_evaluated_key().is_some(),
        "more than one Scan page"
    );
    let mut seen = std::collections::HashSet::new();
    let mut q = ListQuery {
        limit: 7,
        ..ListQuery::default()
    };
    loop {
        let page = store.list_executions(&q).await.expect("list");
        assert!(
            page.items.len() == 7 || page.next_cursor.is_none(),
            "full pages until the last"
        );
        seen.extend(page.items.into_iter().map(|s| s.id));
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 30);
}

#[tokio::test]
async fn create_waits_for_the_endpoint_and_reports_one_that_never_answers() {
    let prefix = common::fresh_prefix();
    let store = DynamoDbStore::create(
        Some(&common::endpoint()),
        &prefix,
        3,
        Duration::from_millis(10),
    )
    .await
    .expect("moto answers");
    store.ensure_tables().await.expect("creating again is fine");
    let mut e = new_exe("created");
    store
        .commit(&mut e, Commit::default())
        .await
        .expect("usable");

    let dead = DynamoDbStore::create(
        Some("http://127.0.0.1:9"),
        &prefix,
        2,
        Duration::from_millis(10),
    )
    .await;
    match dead {
        Err(err) => assert!(
            err.to_string().contains("did not answer after 2 attempts"),
            "{err}"
        ),
        Ok(_) => panic!("a dead endpoint must be reported"),
    }
    assert!(DynamoDbStore::new(common::client().await, "bad-prefix").is_err());
}

#[tokio::test]
async fn unreadable_rows_are_reported_as_corrupt_not_skipped() {
    let store = common::store(200).await;
    let t = store.tables().clone();
    store
        .client()
        .put_item()
        .table_name(t.executions())
        .item("id", AttributeValue::S("junk".into()))
        .item("data", AttributeValue::S("{not json".into()))
        .item("version", AttributeValue::N("1".into()))
        .send()
        .await
        .expect("put");
    match store.load("junk").await {
        Err(StoreError::Corrupt(msg)) => assert!(msg.contains(&t.executions()), "{msg}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    store
        .client()
        .put_item()
        .table_name(t.outbox())
        .item("seq", AttributeValue::N("7".into()))
        .item("event", AttributeValue::N("1".into()))
        .send()
        .await
        .expect("put");
    match store.pending_outbox().await {
        Err(StoreError::Corrupt(msg)) => assert!(msg.contains("event"), "{msg}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[tokio::test]
async fn keys_left_unprocessed_by_batch_get_are_asked_again() {
    let (client, faults) = faulty_client().await;
    let store = common::store_on(client, 200).await;
    let mut exe = new_exe("unproc");
    let commit = Commit {
        processed_event_id: Some("ev".into()),
        ..Commit::default()
    };
    store.commit(&mut exe, commit).await.expect("commit");
    // DynamoDB under throttling answers 200 with every key unprocessed; harel would read
    // that as "no such execution"
    let t = store.tables().clone();
    let body = json!({
        "Responses": {},
        "UnprocessedKeys": {
            t.executions(): {"Keys": [{"id": {"S": "unproc"}}], "ProjectionExpression": "#d, #t",
                "ExpressionAttributeNames": {"#d": "data", "#t": "trace_idx"}, "ConsistentRead": true},
            t.processed(): {"Keys": [{"execution_id": {"S": "unproc"}, "event_id": {"S": "ev"}}], "ConsistentRead": true},
        }
    });
    faults.push(Fault {
        operation: "BatchGetItem",
        status: 200,
        body: body.to_string(),
    });
    let (loaded, done) = store
        .load_for_event("unproc", "ev")
        .await
        .expect("load_for_event");
    assert_eq!(faults.pending(), 0, "the throttled answer was served");
    assert_eq!(loaded.map(|e| e.version), Some(1));
    assert!(done);
}
