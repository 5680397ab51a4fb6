//! `harel show` against DynamoDB (moto): `scripts/with-moto.sh cargo test -p harel-cli --test show_dynamodb`.

use std::process::Command;

use harel_dynamodb::DynamoDbStore;
use harel_store::prelude::*;
use harel_store::Commit;

fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").expect(
        "this test needs a moto server: run it under scripts/with-moto.sh (AWS_ENDPOINT_URL is not set)",
    )
}

#[tokio::test]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn show_prints_the_stored_execution_and_refuses_an_unknown_id() {
    let prefix = format!("cli{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let store = DynamoDbStore::create(
        Some(&endpoint()),
        &prefix,
        5,
        std::time::Duration::from_millis(200),
    )
    .await
    .expect("tables");
    let mut exe = harel_model::Execution::new("shown").with_id("show-me");
    exe.context.insert("k".into(), serde_json::json!(1.5));
    store
        .commit(&mut exe, Commit::default())
        .await
        .expect("commit");

    let out = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args([
            "show",
            "show-me",
            "--store",
            "dynamodb",
            "--table-prefix",
            &prefix,
            "--json",
        ])
        .output()
        .expect("harel runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).expect("utf-8");
    let shown: serde_json::Value = serde_json::from_str(printed.trim_end()).expect("JSON");
    let stored: serde_json::Value = serde_json::from_str(&exe.to_json()).expect("JSON");
    assert_eq!(shown["execution"], stored, "the stored document");

    let out = Command::new(env!("CARGO_BIN_EXE_harel"))
        .args([
            "show",
            "nobody",
            "--store",
            "dynamodb",
            "--table-prefix",
            &prefix,
        ])
        .output()
        .expect("harel runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no execution \"nobody\"") && err.contains(&format!("{prefix}_executions")),
        "{err}"
    );
}
