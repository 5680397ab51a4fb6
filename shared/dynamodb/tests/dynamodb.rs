//! What only the DynamoDB store has: harel's item layout, DynamoDB's limits, the outcome of
//! a cancelled transaction, Scan paging. `scripts/with-moto.sh cargo test -p harel-dynamodb`.

mod common;

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use common::faults::{faulty_client, retrying_faulty_client, Fault};
use harel_dynamodb::shards::LIST_SHARDS;
use harel_dynamodb::DynamoDbStore;
use harel_model::{Event, Execution, Object, Status};
use harel_store::prelude::*;
use harel_store::{Commit, ListQuery, Spawn, StoreError, TimerOp};
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
#[ignore = "needs a moto server: scripts/test.sh runs it"]
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
        published: Vec::new(),
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
#[ignore = "needs a moto server: scripts/test.sh runs it"]
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
#[ignore = "needs a moto server: scripts/test.sh runs it"]
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
            ("retryable", Err(StoreError::Retryable { .. }))
            | ("other", Err(StoreError::Other { .. })) => {}
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

/// The dedupe mark is conditioned in the commit: each cancellation reason a commit carrying
/// one can meet, as DynamoDB reports them (items: the Execution, then the mark).
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn the_marks_condition_tells_a_duplicate_from_a_conflict() {
    let (client, faults) = faulty_client().await;
    let store = common::store_on(client, 200).await;
    let mut exe = new_exe("dup");
    store
        .commit(&mut exe, Commit::default())
        .await
        .expect("insert");
    let mark = |event: &str| Commit {
        processed_event_id: Some(event.into()),
        ..Commit::default()
    };
    let cases: Vec<(Fault, &str)> = vec![
        // the mark exists: another writer committed the event after our read
        (
            Fault::cancelled(&["None", "ConditionalCheckFailed"]),
            "duplicate",
        ),
        // both: the writer that set the mark moved the version; still a duplicate
        (
            Fault::cancelled(&["ConditionalCheckFailed", "ConditionalCheckFailed"]),
            "duplicate",
        ),
        (
            Fault::cancelled(&["ConditionalCheckFailed", "None"]),
            "conflict",
        ),
        (Fault::cancelled(&["None", "ThrottlingError"]), "retryable"),
        (
            Fault::cancelled(&["TransactionConflict", "None"]),
            "retryable",
        ),
    ];
    for (fault, want) in cases {
        let what = fault.body.clone();
        faults.push(fault);
        let r = store.commit(&mut exe, mark("ev")).await;
        match (want, &r) {
            (
                "duplicate",
                Err(StoreError::AlreadyProcessed {
                    execution_id,
                    event_id,
                }),
            ) if execution_id == "dup" && event_id == "ev" => {}
            ("conflict", Err(StoreError::Conflict { expected: 1, .. }))
            | ("retryable", Err(StoreError::Retryable { .. })) => {}
            _ => panic!("{what}: expected {want}, got {r:?}"),
        }
        assert_eq!(exe.version, 1, "{what}: nothing bumped");
    }
    assert_eq!(faults.pending(), 0);
    assert!(!store.is_processed("dup", "ev").await.expect("read"));

    // for real on moto: the event committed once, then again on the version it moved to (a
    // worker whose read saw the new Execution and the old, absent, mark)
    store.commit(&mut exe, mark("ev")).await.expect("first");
    let mut torn = store.load("dup").await.expect("load").expect("present");
    let r = store.commit(&mut torn, mark("ev")).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyProcessed { .. })),
        "a torn read's commit is refused by the mark: {r:?}"
    );
    assert_eq!(
        store
            .load("dup")
            .await
            .expect("load")
            .expect("present")
            .version,
        2,
        "applied once"
    );

    // an older emulator's bare exception carries no reasons: the mark is read to decide
    faults.push(Fault::error(
        "TransactWriteItems",
        "ConditionalCheckFailedException",
    ));
    let r = store.commit(&mut torn, mark("ev")).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyProcessed { .. })),
        "{r:?}"
    );
    faults.push(Fault::error(
        "TransactWriteItems",
        "ConditionalCheckFailedException",
    ));
    let r = store.commit(&mut torn, mark("ev-2")).await;
    assert!(
        matches!(r, Err(StoreError::Conflict { found: Some(2), .. })),
        "mark absent: the version check failed: {r:?}"
    );
}

/// A commit whose answer is lost is sent again by the SDK with the same ClientRequestToken;
/// DynamoDB answers such a resend as the success it was (moto ignores the token, so the
/// connector plays DynamoDB's part: it answers a token it saw applied).
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_lost_commit_answer_is_a_success_through_the_client_request_token() {
    let (client, faults) = retrying_faulty_client().await;
    let store = common::store_on(client, 200).await;
    let mut exe = new_exe("token");
    store
        .commit(&mut exe, Commit::default())
        .await
        .expect("insert");
    let step = || Commit {
        emits: vec![(Some("token".into()), Event::new("E"))],
        processed_event_id: Some("ev".into()),
        ..Commit::default()
    };

    // on moto alone: the resend meets its own first write (the mark exists now)
    faults.push(Fault::answer_lost("TransactWriteItems"));
    let mut first = exe.clone();
    let r = store.commit(&mut first, step()).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyProcessed { .. })),
        "moto ignores the token: the resend is refused by the mark: {r:?}"
    );
    let tokens = faults.tokens();
    assert_eq!(
        tokens.len(),
        3,
        "insert, the lost one, its resend: {tokens:?}"
    );
    assert_eq!(tokens[1], tokens[2], "the SDK re-sends the same token");
    assert!(
        tokens[1].len() <= 36 && tokens[1] != tokens[0],
        "{tokens:?}"
    );

    // as DynamoDB answers it: the commit succeeds, applied once
    faults.emulate_dynamodb_tokens();
    let mut exe = store.load("token").await.expect("load").expect("present");
    let step2 = || Commit {
        emits: vec![(Some("token".into()), Event::new("F"))],
        processed_event_id: Some("ev-2".into()),
        ..Commit::default()
    };
    faults.push(Fault::answer_lost("TransactWriteItems"));
    let seqs = store
        .commit(&mut exe, step2())
        .await
        .expect("the resend is answered as the success it was");
    assert_eq!(exe.version, 3);
    assert_eq!(seqs.len(), 1);
    let tokens = faults.tokens();
    assert_eq!(tokens[tokens.len() - 1], tokens[tokens.len() - 2]);
    let stored = store.load("token").await.expect("load").expect("present");
    assert_eq!(stored.version, 3, "applied once");
    let kinds: Vec<String> = store
        .pending_outbox()
        .await
        .expect("outbox")
        .into_iter()
        .map(|o| o.event.kind.to_string())
        .collect();
    assert_eq!(kinds, ["E", "F"], "one entry per step");
    // the same write laid out again (same version, same event, same document) gets the same
    // token; another write of that version does not
    let again = harel_dynamodb::commit::request_token(&stored, &step2(), 7, 0, None);
    assert_eq!(
        again,
        harel_dynamodb::commit::request_token(&stored, &step2(), 7, 0, None)
    );
    assert_ne!(
        again,
        harel_dynamodb::commit::request_token(&stored, &step(), 7, 0, None)
    );
    assert_ne!(
        again,
        harel_dynamodb::commit::request_token(&stored, &step2(), 8, 0, None)
    );
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
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
#[ignore = "needs a moto server: scripts/test.sh runs it"]
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
    for scan in [true, false] {
        let mut seen = std::collections::HashSet::new();
        let mut q = ListQuery {
            limit: 7,
            scan,
            ..ListQuery::default()
        };
        loop {
            let page = store.list_executions(&q).await.expect("list");
            assert!(
                page.items.len() == 7 || page.next_cursor.is_none(),
                "full pages until the last (scan {scan})"
            );
            seen.extend(page.items.into_iter().map(|s| s.id));
            match page.next_cursor {
                Some(c) => q.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen.len(), 30, "scan {scan}");
    }
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
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
#[ignore = "needs a moto server: scripts/test.sh runs it"]
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
#[ignore = "needs a moto server: scripts/test.sh runs it"]
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
        after_sending: false,
    });
    let (loaded, done) = store
        .load_for_event("unproc", "ev")
        .await
        .expect("load_for_event");
    assert_eq!(faults.pending(), 0, "the throttled answer was served");
    assert_eq!(loaded.map(|e| e.version), Some(1));
    assert!(done);
}

/// A listing costs what it asks for: with 200 finished executions beside 3 running ones, a
/// page of RUNNING (by status, or by machine and status) reads at most limit+1 keys per
/// partition and `limit` items, and the scan listing reads the whole table.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn listing_by_index_reads_the_page_not_the_table() {
    let (client, reads) = common::recorded_client().await;
    let store = common::store_on(client, 200).await;
    for i in 0..203 {
        let mut e = new_exe(&format!("x{i:03}"));
        e.status = if i % 70 == 0 {
            Status::Running
        } else {
            Status::Done
        };
        e.created_at = Some(1_700_000_000.0 + i as f64);
        store
            .commit(&mut e, Commit::default())
            .await
            .expect("insert");
    }
    reads.take();
    let running = |machine: Option<&str>, scan| ListQuery {
        status: Some(vec![Status::Running]),
        definition_id: machine.map(str::to_string),
        limit: 2,
        scan,
        ..ListQuery::default()
    };
    for machine in [None, Some("def")] {
        let page = store
            .list_executions(&running(machine, false))
            .await
            .expect("index");
        let ids: Vec<String> = page.items.iter().map(|s| s.id.clone()).collect();
        assert_eq!(ids, ["x140", "x070"], "newest first ({machine:?})");
        let tally = reads.take();
        // root and child partitions, each in its shards: a Query of at most 2 keys a shard
        // (its share of 3 and one more), then 1 BatchGetItem of 2 items
        let queries = 2 * LIST_SHARDS as usize;
        assert_eq!(tally.count("Query"), queries, "({machine:?}) {tally:?}");
        assert_eq!(
            tally.operations().last().map(String::as_str),
            Some("BatchGetItem")
        );
        assert_eq!(tally.requests(), queries + 1, "{tally:?}");
        assert!(tally.items_read() <= queries as u64 * 3 + 2, "{tally:?}");
        let rest = store
            .list_executions(&ListQuery {
                cursor: page.next_cursor.clone(),
                ..running(machine, false)
            })
            .await
            .expect("next page");
        assert_eq!(rest.items.len(), 1);
        assert_eq!(rest.items[0].id, "x000");
        assert!(rest.next_cursor.is_none());
        reads.take();
    }
    let scanned = store
        .list_executions(&running(None, true))
        .await
        .expect("scan");
    assert_eq!(scanned.items.len(), 2);
    assert!(reads.take().items_read() >= 203, "the scan reads every row");
    // no status: every status partition, still O(limit) items
    let any = store
        .list_executions(&ListQuery {
            limit: 5,
            ..ListQuery::default()
        })
        .await
        .expect("all statuses");
    assert_eq!(any.items[0].id, "x202");
    let tally = reads.take();
    assert_eq!(tally.count("Query"), 14 * LIST_SHARDS as usize, "{tally:?}");
    assert!(
        tally.items_read() <= 14 * u64::from(LIST_SHARDS) * 6 + 5,
        "{tally:?}"
    );
}

fn listing_keys(
    items: &[std::collections::HashMap<String, AttributeValue>],
) -> Vec<(String, String)> {
    items
        .iter()
        .filter(|i| i.contains_key("list_pk"))
        .map(|i| (attr_s(i, "list_pk"), attr_s(i, "list_mpk")))
        .collect()
}

/// No hot partition: executions created RUNNING and finished DONE write their listing keys
/// over every shard of each status (the shard follows the id, so it never moves), and a page
/// merged across the shards is still the newest first and reads O(page).
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn status_changes_spread_the_listing_index_over_its_shards() {
    let (client, reads) = common::recorded_client().await;
    let store = common::store_on(client, 0).await;
    let count = 96;
    let mut exes = Vec::new();
    for i in 0..count {
        let mut e = new_exe(&format!("order-{i:03}"));
        e.status = Status::Running;
        e.created_at = Some(1_700_000_000.0 + i as f64);
        store
            .commit(&mut e, Commit::default())
            .await
            .expect("create");
        exes.push(e);
    }
    let shards_of = |keys: &[(String, String)], status: &str| {
        let mut per_shard = std::collections::BTreeMap::<String, usize>::new();
        for (pk, mpk) in keys {
            let (logical, shard) = pk.rsplit_once('#').expect("a sharded key");
            assert_eq!(logical, status, "{pk}");
            assert_eq!(mpk, &format!("def#{pk}"));
            *per_shard.entry(shard.to_string()).or_default() += 1;
        }
        per_shard
    };
    let table = store.tables().executions();
    let running = shards_of(&listing_keys(&scan(&store, table.clone()).await), "RUNNING");
    for e in &mut exes {
        e.status = Status::Done;
        e.finished_at = e.created_at;
        store.commit(e, Commit::default()).await.expect("finish");
    }
    let done = shards_of(&listing_keys(&scan(&store, table.clone()).await), "DONE");
    for per_shard in [&running, &done] {
        assert_eq!(
            per_shard.len(),
            LIST_SHARDS as usize,
            "every shard: {per_shard:?}"
        );
        // 12 each on average: none takes more than twice its share
        let mean = count / LIST_SHARDS as usize;
        assert!(per_shard.values().all(|&n| n <= 2 * mean), "{per_shard:?}");
    }
    assert_eq!(
        running, done,
        "an execution keeps its shard across status changes"
    );

    reads.take();
    let page = store
        .list_executions(&ListQuery {
            status: Some(vec![Status::Done]),
            roots_only: true,
            limit: 5,
            ..ListQuery::default()
        })
        .await
        .expect("a page");
    let ids: Vec<&str> = page.items.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "order-095",
            "order-094",
            "order-093",
            "order-092",
            "order-091"
        ]
    );
    let tally = reads.take();
    // one Query a shard, each first asked for its share of the 6 keys and one more (2), where
    // a whole page a shard would be 6: the keys read follow the page, not the shard count
    assert_eq!(tally.count("Query"), LIST_SHARDS as usize, "{tally:?}");
    assert_eq!(
        tally.items_read(),
        u64::from(LIST_SHARDS) * 2 + 5,
        "{tally:?}"
    );
    let mut seen = ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut cursor = page.next_cursor;
    while let Some(c) = cursor {
        let next = store
            .list_executions(&ListQuery {
                status: Some(vec![Status::Done]),
                roots_only: true,
                limit: 7,
                cursor: Some(c),
                ..ListQuery::default()
            })
            .await
            .expect("next page");
        seen.extend(next.items.iter().map(|s| s.id.clone()));
        cursor = next.next_cursor;
    }
    let expected: Vec<String> = (0..count).rev().map(|i| format!("order-{i:03}")).collect();
    assert_eq!(
        seen, expected,
        "pages across shards: every execution once, newest first"
    );
}

/// Upgrading from the unsharded listing keys: executions an earlier release wrote are missing
/// from the listing until `reindex_listing` rewrites their keys (a dry run counts them and
/// writes nothing); a second run finds nothing left, and rows without listing keys (harel
/// Python's) are neither read as candidates nor touched.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn reindex_shards_the_keys_an_earlier_release_wrote() {
    let store = common::store(0).await;
    let table = store.tables().executions();
    for i in 0..10 {
        let mut e = new_exe(&format!("old-{i}"));
        e.status = if i < 6 { Status::Running } else { Status::Done };
        if i % 2 == 1 {
            e.parent_id = Some("old-0".into());
        }
        e.created_at = Some(1_700_000_000.0 + f64::from(i));
        store
            .commit(&mut e, Commit::default())
            .await
            .expect("commit");
        // the keys as the previous release wrote them
        let child = e.parent_id.is_some();
        store
            .client()
            .update_item()
            .table_name(&table)
            .key("id", AttributeValue::S(e.id.to_string()))
            .update_expression("SET list_pk = :pk, list_mpk = :mpk")
            .expression_attribute_values(
                ":pk",
                AttributeValue::S(harel_store::listing::status_key(e.status, child)),
            )
            .expression_attribute_values(
                ":mpk",
                AttributeValue::S(harel_store::listing::machine_status_key(
                    "def", e.status, child,
                )),
            )
            .send()
            .await
            .expect("legacy keys");
    }
    let python_row = new_exe("python-1");
    store
        .client()
        .put_item()
        .table_name(&table)
        .item("id", AttributeValue::S("python-1".into()))
        .item("data", AttributeValue::S(python_row.to_json()))
        .item("version", AttributeValue::N("1".into()))
        .send()
        .await
        .expect("a row as harel Python writes it");
    let everything = ListQuery {
        limit: 50,
        ..ListQuery::default()
    };
    let listed = |page: harel_model::ExecutionPage| page.items.len();
    assert_eq!(
        listed(store.list_executions(&everything).await.expect("list")),
        0
    );

    let dry = store.reindex_listing(true).await.expect("dry run");
    assert_eq!(
        dry,
        harel_dynamodb::Reindexed {
            read: 10,
            rewritten: 10,
            changed_meanwhile: 0
        }
    );
    assert_eq!(
        listed(store.list_executions(&everything).await.expect("list")),
        0
    );

    let done = store.reindex_listing(false).await.expect("reindex");
    assert_eq!(
        done,
        harel_dynamodb::Reindexed {
            read: 10,
            rewritten: 10,
            changed_meanwhile: 0
        }
    );
    let page = store.list_executions(&everything).await.expect("list");
    assert_eq!(page.items.len(), 10);
    let running_children = store
        .list_executions(&ListQuery {
            status: Some(vec![Status::Running]),
            definition_id: Some("def".into()),
            limit: 50,
            ..ListQuery::default()
        })
        .await
        .expect("by machine");
    let mut ids: Vec<&str> = running_children
        .items
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    ids.sort();
    assert_eq!(ids, ["old-0", "old-1", "old-2", "old-3", "old-4", "old-5"]);
    let again = store.reindex_listing(false).await.expect("again");
    assert_eq!(
        again,
        harel_dynamodb::Reindexed {
            read: 10,
            rewritten: 0,
            changed_meanwhile: 0
        }
    );
    let rows = scan(&store, table).await;
    let python = rows
        .iter()
        .find(|r| attr_s(r, "id") == "python-1")
        .expect("kept");
    assert!(
        !python.contains_key("list_pk"),
        "harel Python's row is left as it was"
    );
}

/// A revive (a finished execution running again) drops `retain_until`; FAILED keeps none;
/// retention zero writes none anywhere.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn retention_stamps_finished_executions_marks_and_trace() {
    let day = 24 * 3600;
    let store = common::store(200)
        .await
        .with_retention(Duration::from_secs(3 * day));
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs()
    };
    let raw = |table: String, id: &'static str| {
        let store = &store;
        async move {
            scan(store, table)
                .await
                .into_iter()
                .filter(|i| {
                    i.get("id").or(i.get("execution_id")) == Some(&AttributeValue::S(id.into()))
                })
                .collect::<Vec<_>>()
        }
    };
    let retain = |item: &std::collections::HashMap<String, AttributeValue>| {
        item.get("retain_until").map(|_| {
            attr_n(item, "retain_until")
                .parse::<u64>()
                .expect("epoch seconds")
        })
    };
    let mut e = new_exe("ret");
    e.status = Status::Running;
    let before = now();
    store
        .commit(
            &mut e,
            Commit {
                processed_event_id: Some("ev1".into()),
                trace: Some(obj(json!({"event_kind": "Start"}))),
                ..Commit::default()
            },
        )
        .await
        .expect("running");
    let t = store.tables().clone();
    assert_eq!(
        retain(&raw(t.executions(), "ret").await[0]),
        None,
        "live: no TTL"
    );
    let mark = retain(&raw(t.processed(), "ret").await[0]).expect("a mark's TTL");
    assert!(
        (before + 15 * day..=now() + 15 * day).contains(&mark),
        "a mark outlives SQS redelivery: {mark}"
    );
    let step = retain(&raw(t.trace(), "ret").await[0]).expect("a trace row's TTL");
    assert!(
        (before + 3 * day..=now() + 3 * day).contains(&step),
        "{step}"
    );

    e.status = Status::Done;
    e.finished_at = Some(1_800_000_000.75);
    store.commit(&mut e, Commit::default()).await.expect("done");
    assert_eq!(
        retain(&raw(t.executions(), "ret").await[0]),
        Some(1_800_000_000 + 3 * day),
        "finished_at + retention"
    );
    e.status = Status::Running;
    e.finished_at = None;
    store
        .commit(&mut e, Commit::default())
        .await
        .expect("revived");
    assert_eq!(
        retain(&raw(t.executions(), "ret").await[0]),
        None,
        "a revive drops it"
    );
    e.status = Status::Cancelled;
    e.finished_at = Some(1_800_000_100.0);
    store
        .commit(&mut e, Commit::default())
        .await
        .expect("cancelled");
    assert_eq!(
        retain(&raw(t.executions(), "ret").await[0]),
        Some(1_800_000_100 + 3 * day)
    );
    let mut f = new_exe("failed");
    f.status = Status::Failed;
    f.finished_at = Some(1_800_000_000.0);
    store
        .commit(&mut f, Commit::default())
        .await
        .expect("failed");
    assert_eq!(
        retain(&raw(t.executions(), "failed").await[0]),
        None,
        "FAILED awaits an operator"
    );
    store
        .append_trace("failed", obj(json!({"event_kind": "Manual"})))
        .await
        .expect("append");
    assert!(
        retain(&raw(t.trace(), "failed").await[0]).is_some(),
        "standalone trace rows too"
    );

    // the TTL is on for the three tables that keep finished work
    for table in [t.executions(), t.processed(), t.trace()] {
        let ttl = store
            .client()
            .describe_time_to_live()
            .table_name(&table)
            .send()
            .await
            .expect("describe ttl");
        let d = ttl.time_to_live_description().expect("ttl");
        assert_eq!(d.attribute_name(), Some("retain_until"), "{table}");
    }

    let keep = common::store(200).await;
    let mut k = new_exe("kept");
    k.status = Status::Done;
    k.finished_at = Some(1_800_000_000.0);
    keep.commit(
        &mut k,
        Commit {
            processed_event_id: Some("ev".into()),
            trace: Some(obj(json!({"event_kind": "End"}))),
            ..Commit::default()
        },
    )
    .await
    .expect("kept");
    let kt = keep.tables().clone();
    for table in [kt.executions(), kt.processed(), kt.trace()] {
        for item in scan(&keep, table.clone()).await {
            assert!(
                !item.contains_key("retain_until"),
                "retention 0 keeps {table} forever"
            );
        }
    }
}

/// A table missing from the account (a stack half deployed, a wrong prefix): DynamoDB's
/// answer names no table, so the store's error does, with the operation.
#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_missing_table_is_named_with_the_operation() {
    let store = common::store(0).await;
    let t = store.tables().clone();
    store
        .client()
        .delete_table()
        .table_name(t.processed())
        .send()
        .await
        .expect("drop the processed marks' table");

    let err = store
        .load_for_event("anyone", "ev-1")
        .await
        .expect_err("a read of a missing table fails");
    let text = err.to_string();
    assert!(
        text.contains("BatchGetItem") && text.contains(&t.processed()),
        "{text}"
    );

    let mut exe = new_exe("orphan");
    let commit = Commit {
        processed_event_id: Some("ev-1".into()),
        ..Commit::default()
    };
    let err = store
        .commit(&mut exe, commit)
        .await
        .expect_err("a commit writing a missing table fails");
    let text = err.to_string();
    assert!(
        text.contains("TransactWriteItems") && text.contains(&t.processed()),
        "{text}"
    );
    assert!(
        store.load("orphan").await.expect("load").is_none(),
        "nothing half-written"
    );
}
