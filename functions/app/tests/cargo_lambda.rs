//! The worker through the real Lambda runtime API: `cargo lambda watch` runs the function
//! binary against the moto server, `cargo lambda invoke` sends it the sample events of
//! events/. Run under scripts/with-moto.sh; cargo-lambda comes from the Python index
//! (scripts/install-lambda-tools.sh) and the test skips, saying so, when it cannot be installed.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use harel_model::Status;
use harel_store::ExecutionStore;

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
            .stdout(Stdio::null())
            .stderr(Stdio::null())
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
}
