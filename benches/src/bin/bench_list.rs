//! What one page of `list_executions` costs as the executions table grows: M finished
//! executions (two machines) beside 3 running roots and 2 running children, the page asked
//! for is `--status RUNNING --limit 5` (by machine too, of any status, and 200 DONE as a
//! monitor's refresh asks), through the sharded status indexes and through harel's Scan
//! (`ListQuery::scan`), in the same run.
//! Requests and items read are counted on the wire (a Query's or Scan's `ScannedCount`, a
//! BatchGetItem's items); the index side's read units as DynamoDB bills them
//! (`harel_testwire::units`, exact here: no filter, items under 4 KB). A Scan is billed on
//! every byte it reads, filtered or projected away or not, which its answer does not show:
//! its items read are its bill.
//!
//!     scripts/bench-list.sh [M ...]      (runs this under scripts/with-moto.sh)

use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
use harel_dynamodb::commit::{plan, Inputs, Retention};
use harel_dynamodb::DynamoDbStore;
use harel_model::{Execution, Status};
use harel_store::prelude::*;
use harel_store::{Commit, ListQuery};

const RUNNING_ROOTS: usize = 3;

fn exe(i: usize, status: Status) -> Execution {
    let machine = if i.is_multiple_of(2) {
        "order"
    } else {
        "payment"
    };
    let mut e = Execution::new(machine).with_id(format!("x{i:07}"));
    e.status = status;
    e.active_path = Some("A".into());
    e.created_at = Some(1_700_000_000.0 + i as f64);
    e.updated_at = e.created_at;
    if status == Status::Done {
        e.finished_at = e.created_at;
        e.outcome = Some("success".into());
    }
    e
}

/// Write executions `from..to` as finished, exactly the items a commit writes, 25 per
/// BatchWriteItem (seeding through transactions would take far longer).
async fn seed(store: &DynamoDbStore, from: usize, to: usize) {
    let commit = Commit::default();
    let rows: Vec<WriteRequest> = (from..to)
        .map(|i| {
            let e = exe(i, Status::Done);
            let p = plan(Inputs {
                tables: store.tables(),
                exe: &e,
                commit: &commit,
                outbox_base: 0,
                spawn_base: 0,
                known_trace_max: None,
                trace_max: 0,
                retention: Retention { secs: 0, now: 0.0 },
                due_shards: store.due_shards(),
                published: &[],
                // the Put, whose item is the row as committed
                mode: store.commit_mode(),
            })
            .expect("a plan");
            let item = p.items[0]
                .put()
                .expect("the execution's Put")
                .item()
                .clone();
            WriteRequest::builder()
                .put_request(
                    PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .expect("item"),
                )
                .build()
        })
        .collect();
    let table = store.tables().executions();
    for chunk in rows.chunks(25) {
        let mut pending = chunk.to_vec();
        while !pending.is_empty() {
            let resp = store
                .client()
                .batch_write_item()
                .request_items(&table, pending)
                .send()
                .await
                .expect("batch write");
            pending = resp
                .unprocessed_items()
                .and_then(|u| u.get(&table))
                .cloned()
                .unwrap_or_default();
        }
    }
}

async fn running(store: &DynamoDbStore) {
    for r in 0..RUNNING_ROOTS {
        let mut root = exe(10_000_000 + r, Status::Running);
        root.definition_id = "order".into();
        store
            .commit(&mut root, Commit::default())
            .await
            .expect("root");
        if r == 0 {
            for c in 0..2 {
                let mut child = exe(10_000_100 + c, Status::Running);
                child.definition_id = "order".into();
                child.parent_id = Some(root.id.clone());
                store
                    .commit(&mut child, Commit::default())
                    .await
                    .expect("child");
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let mut sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("sizes are whole numbers"))
        .collect();
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000, 100_000];
    }
    sizes.sort_unstable();
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("run under scripts/with-moto.sh");
    let reads = harel_testwire::Recorder::new();
    let client = harel_benches::recorded_dynamodb(&endpoint, &reads).await;
    let prefix = format!("bl{}", std::process::id());
    let store = DynamoDbStore::new(client, &prefix).expect("prefix");
    store.ensure_tables().await.expect("tables");
    running(&store).await;
    println!("### Listing: one page of `harel list`, M finished executions beside 5 running\n");
    println!("| finished M | page | index: requests | index: items read | index: read units | scan: requests | scan: items read |");
    println!("|---:|---|---:|---:|---:|---:|---:|");
    let mut seeded = 0;
    for m in sizes {
        seed(&store, seeded, m).await;
        seeded = m;
        // the last is a terminal monitor's refresh (`harel monitor --limit 200`) of one status
        for (label, status, machine, limit) in [
            ("RUNNING, limit 5", Some(Status::Running), None, 5),
            (
                "order RUNNING, limit 5",
                Some(Status::Running),
                Some("order"),
                5,
            ),
            ("any status, limit 5", None, None, 5),
            ("DONE, limit 200", Some(Status::Done), None, 200),
        ] {
            let mut cost = Vec::new();
            for scan in [false, true] {
                let q = ListQuery {
                    status: status.map(|s| vec![s]),
                    definition_id: machine.map(str::to_string),
                    limit,
                    scan,
                    ..ListQuery::default()
                };
                reads.take();
                let page = store.list_executions(&q).await.expect("list");
                assert_eq!(page.items.len(), limit, "a full page ({label})");
                cost.push(reads.take());
            }
            println!(
                "| {m} | {label} | {} | {} | {:.1} | {} | {} |",
                cost[0].requests(),
                cost[0].items_read(),
                cost[0].read_units(),
                cost[1].requests(),
                cost[1].items_read()
            );
        }
    }
}
