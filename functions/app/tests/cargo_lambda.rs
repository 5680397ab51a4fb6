//! The worker through the real Lambda runtime API: `cargo lambda watch` runs the function
//! binary against the moto server, `cargo lambda invoke` sends it the sample events of
//! events/; what the function prints is its JSON log lines and one EMF metrics document per
//! invocation. Run under scripts/with-moto.sh; cargo-lambda comes from the Python index
//! (scripts/install-lambda-tools.sh) and the test skips, saying so, when it cannot be installed.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use harel_model::Status;
use harel_store::prelude::*;

mod tools;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Ends the whole `cargo lambda watch` process group (it runs `cargo run`, which runs the
/// function) when the test ends, however it ends.
struct Watch(Child);

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("--")
            .arg(format!("-{}", self.0.id()))
            .status();
        let _ = self.0.wait();
    }
}

fn invoke(lambda_bin: &std::path::Path, port: u16, event: &str) -> serde_json::Value {
    let out = Command::new("cargo")
        .args([
            "lambda",
            "invoke",
            "worker",
            "-A",
            "127.0.0.1",
            "-P",
            &port.to_string(),
        ])
        .args(["--data-file", event, "-o", "json"])
        .current_dir(root())
        .env(
            "PATH",
            format!(
                "{}:{}",
                lambda_bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .expect("cargo lambda invoke runs");
    assert!(
        out.status.success(),
        "invoke {event} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the worker answers JSON")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs SAM, cargo lambda, Docker or Chromium: scripts/test.sh runs it"]
async fn worker_through_the_lambda_runtime_api() {
    use std::os::unix::process::CommandExt;

    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run these tests under scripts/with-moto.sh");
    let Some((lambda_bin, _)) = tools::lambda_tools() else {
        return;
    };
    let prefix = format!("cl{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let vars = [
        ("HAREL_TABLE_PREFIX", prefix.clone()),
        (
            "HAREL_QUEUE_URL",
            format!("{endpoint}/123456789012/{prefix}.fifo"),
        ),
        (
            "HAREL_DLQ_URL",
            format!("{endpoint}/123456789012/{prefix}-dlq.fifo"),
        ),
        ("IDEMPOTENCY_TABLE", format!("{prefix}_idempotency")),
        ("AWS_ENDPOINT_URL", endpoint.clone()),
    ];
    let setup = Command::new(env!("CARGO_BIN_EXE_local-setup"))
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("local-setup runs");
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        l.local_addr().expect("addr").port()
    };
    let env_arg: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
    // the function's output (cargo lambda watch passes it through, with the build's)
    let output_path = std::env::temp_dir().join(format!("{prefix}-watch.log"));
    let output = std::fs::File::create(&output_path).expect("an output file");
    let _watch = Watch(
        Command::new("cargo")
            .args([
                "lambda",
                "watch",
                "-p",
                "harel-worker",
                "-A",
                "127.0.0.1",
                "-P",
                &port.to_string(),
            ])
            .args(["--env-var", &env_arg.join(",")])
            .current_dir(root())
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    lambda_bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .stdout(Stdio::from(output.try_clone().expect("the output file")))
            .stderr(Stdio::from(output))
            .process_group(0)
            .spawn()
            .expect("cargo lambda watch starts"),
    );
    // the emulator listens at once; the first invoke builds and starts the function
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let created = invoke(&lambda_bin, port, "events/worker-create.json");
    assert_eq!(
        created["batchItemFailures"],
        serde_json::json!([]),
        "{created}"
    );
    let placed = invoke(&lambda_bin, port, "events/worker-event.json");
    assert_eq!(
        placed["batchItemFailures"],
        serde_json::json!([]),
        "{placed}"
    );
    let malformed = invoke(&lambda_bin, port, "events/worker-malformed.json");
    assert_eq!(
        malformed["batchItemFailures"],
        serde_json::json!([]),
        "dead-lettered, not retried"
    );

    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(&endpoint)
        .load()
        .await;
    let store = harel_dynamodb::DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), &prefix)
        .expect("prefix");
    let exe = store
        .load("order-1")
        .await
        .expect("load")
        .expect("order-1 was created");
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.context.get("items"), Some(&serde_json::json!(2)));
    assert_ne!(
        exe.active_path.as_deref(),
        Some("Cart"),
        "PlaceOrder moved it on: {exe:?}"
    );
    let transport = harel_sqs::SqsTransport::new(aws_sdk_sqs::Client::new(&sdk), &vars[1].1);
    let dead = transport
        .receive_from(&vars[2].1, 10, Duration::ZERO, Duration::from_secs(30))
        .await
        .expect("dlq");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body, "this is not JSON");
    assert!(dead[0]
        .attribute(harel_sqs::REASON_ATTRIBUTE)
        .is_some_and(|r| r.contains("not JSON")));

    assert_function_output(&output_path);
}

/// The worker's stdout: flat JSON log lines carrying the invocation's request id and the
/// record's fields, and an EMF document per invocation counting what it did.
fn assert_function_output(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).expect("the function's output");
    // read: the file is not needed any more, whatever the checks find
    let _ = std::fs::remove_file(path);
    let json: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(serde_json::Value::is_object)
        .collect();
    let done: Vec<&serde_json::Value> = json
        .iter()
        .filter(|l| l["message"] == "record done")
        .collect();
    assert_eq!(done.len(), 3, "one per record:\n{text}");
    for line in &done {
        assert_eq!(line["function"], "worker", "{line}");
        assert_eq!(line["level"], "INFO", "{line}");
        for key in [
            "timestamp",
            "service",
            "location",
            "cold_start",
            "function_name",
            "function_request_id",
            "message_id",
            "execution_id",
            "outcome",
        ] {
            assert!(line.get(key).is_some(), "no {key}: {line}");
        }
    }
    assert!(done
        .iter()
        .any(|l| l["event_kind"] == "PlaceOrder" && l["machine"] == "Order"));
    let emf: Vec<&serde_json::Value> = json
        .iter()
        .filter(|l| l["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "harel")
        .collect();
    let function_docs: Vec<&&serde_json::Value> =
        emf.iter().filter(|d| d.get("Machine").is_none()).collect();
    assert_eq!(function_docs.len(), 3, "one per invocation:\n{text}");
    let total = |name: &str| -> f64 {
        function_docs
            .iter()
            .map(|d| d[name].as_f64().unwrap_or_else(|| panic!("{name} in {d}")))
            .sum()
    };
    assert_eq!(
        total("EventsProcessed"),
        2.0,
        "the create and the PlaceOrder"
    );
    assert_eq!(total("DlqMoves"), 1.0, "the malformed message");
    // Powertools' conventions: the service dimension on every document, one ColdStart (the
    // process's first invocation), and cold_start true on exactly that invocation's lines
    for doc in &emf {
        assert_eq!(doc["service"], "harel", "{doc}");
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0][0], "service",
            "{doc}"
        );
    }
    let cold: Vec<_> = function_docs
        .iter()
        .filter(|d| d.get("ColdStart").is_some())
        .collect();
    assert_eq!(cold.len(), 1, "one cold start:\n{text}");
    assert_eq!(cold[0]["ColdStart"], 1.0);
    let cold_requests: std::collections::BTreeSet<&str> = json
        .iter()
        .filter(|l| l["cold_start"] == true)
        .filter_map(|l| l["function_request_id"].as_str())
        .collect();
    assert_eq!(cold_requests.len(), 1, "{text}");
    assert!(emf
        .iter()
        .any(|d| d["Machine"] == "Order" && d["Commits"].as_f64() == Some(1.0)));
}
