//! `sam local invoke Worker -e events/worker-create.json` for real: the SAM CLI, a Docker
//! engine, SAM's Runtime Interface Emulator and the worker binary, against a moto server on
//! this host, wired only through what the template declares (HAREL_ENDPOINT_URL and the
//! rest, from an env.json like events/env.json) and `--add-host host.docker.internal:host-gateway`.
//!
//! The Lambda base image cannot be pulled here: scripts/sam-local-image.sh builds a local one
//! (busybox, the host's C libraries for the binary, the CA bundle) that `--invoke-image`
//! names, with `--skip-pull-image`. The binary is the debug build of the one binary `sam build`
//! deploys to every function (harel-bootstrap, which runs what the function's Handler names:
//! `worker` here; a release build takes minutes), mounted as the function's code.
//! Without a Docker engine (or busybox-static) the test says so and skips.
//!
//! And `sam local start-api` the same way, that binary run by its Handler as the Api: a create
//! sent to SAM's local HTTP API reaches moto's queue, the worker (in this process) runs it,
//! and the execution is read back through the same local API.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod tools;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace")
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn skip(why: &str) {
    eprintln!("SKIPPED: sam local invoke: {why}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .expect("a free port")
        .local_addr()
        .expect("addr")
        .port()
}

/// A moto server on every interface (the container reaches it through the bridge's gateway).
fn moto_on_all_interfaces() -> (Killed, u16) {
    let venv = Command::new("bash")
        .arg(root().join("scripts/python-env.sh"))
        .output()
        .expect("python-env.sh runs");
    assert!(
        venv.status.success(),
        "{}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let venv = PathBuf::from(String::from_utf8_lossy(&venv.stdout).trim());
    let port = free_port();
    let child = Command::new(venv.join("bin/moto_server"))
        .args(["-H", "0.0.0.0", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto_server starts");
    let killed = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "moto did not start on {port}");
        std::thread::sleep(Duration::from_millis(200));
    }
    (killed, port)
}

/// The one binary of every function (the template's Handler picks which it runs), built for
/// this host (the debug profile, in this build's target dir).
fn bootstrap_binary() -> PathBuf {
    binary("harel-bootstrap", "bootstrap")
}

/// A function's binary, built for this host (the debug profile, in this build's target dir).
fn binary(package: &str, name: &str) -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root().join("target"));
    let out = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", package])
        .current_dir(root())
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("debug").join(name)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// template.yaml with each function's code in its own directory under `dir` (what
/// `sam build` makes of it), `function`'s (worker, api) holding `bootstrap`.
fn build_dir(dir: &Path, function_with: &str, bootstrap: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template");
    let mut out = Vec::new();
    let mut function = None;
    for line in text.lines() {
        for f in ["Worker", "Relay", "Sweeper", "Api"] {
            if line == format!("  {f}:") {
                function = Some(f.to_ascii_lowercase());
            }
        }
        match (&function, line.trim()) {
            (Some(f), "CodeUri: ./") => out.push(line.replace("./", &format!("{f}/"))),
            _ => out.push(line.to_string()),
        }
    }
    for f in ["worker", "relay", "sweeper", "api"] {
        std::fs::create_dir_all(dir.join(f)).expect("mkdir");
    }
    std::fs::copy(bootstrap, dir.join(function_with).join("bootstrap")).expect("copy the binary");
    // the MachinesLayer's content (mounted at /opt: HAREL_DEFINITIONS_DIR=/opt/machines)
    copy_tree(&root().join("machines-layer"), &dir.join("machines-layer"));
    let template = dir.join("template.yaml");
    std::fs::write(&template, out.join("\n")).expect("write the template");
    template
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs SAM, cargo lambda, Docker or Chromium: scripts/test.sh runs it"]
async fn sam_local_invoke_runs_the_worker_against_moto() {
    let docker = Command::new("docker").arg("info").output();
    if !docker.as_ref().is_ok_and(|o| o.status.success()) {
        return skip(
            "no Docker engine (docker info failed): apt-get install docker.io, start dockerd",
        );
    }
    let Some((_, sam_bin)) = tools::lambda_tools() else {
        return;
    };
    let bootstrap = bootstrap_binary();
    let image = Command::new("bash")
        .arg(root().join("scripts/sam-local-image.sh"))
        .arg(&bootstrap)
        .output()
        .expect("sam-local-image.sh runs");
    if !image.status.success() {
        return skip(&String::from_utf8_lossy(&image.stderr));
    }
    let image = String::from_utf8_lossy(&image.stdout).trim().to_string();

    let (_moto, port) = moto_on_all_interfaces();
    let host_endpoint = format!("http://127.0.0.1:{port}");
    let prefix = format!("sl{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let queue = |name: &str| format!("{host_endpoint}/123456789012/{name}");
    let vars = [
        ("HAREL_TABLE_PREFIX", prefix.clone()),
        ("HAREL_QUEUE_URL", queue(&format!("{prefix}.fifo"))),
        ("HAREL_DLQ_URL", queue(&format!("{prefix}-dlq.fifo"))),
        ("IDEMPOTENCY_TABLE", format!("{prefix}_idempotency")),
    ];
    let setup = Command::new(env!("CARGO_BIN_EXE_local-setup"))
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .env("AWS_ENDPOINT_URL", &host_endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .output()
        .expect("local-setup runs");
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );

    // events/env.json's shape, on this server: only variables the template declares
    let dir = std::env::temp_dir().join(format!("harel-sam-local-{prefix}"));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut worker: serde_json::Map<String, serde_json::Value> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(v.as_str())))
        .collect();
    worker.insert(
        "HAREL_ENDPOINT_URL".into(),
        format!("http://host.docker.internal:{port}").into(),
    );
    worker.insert("HAREL_SWEEPER_FUNCTION".into(), "".into());
    let env_json = dir.join("env.json");
    std::fs::write(
        &env_json,
        serde_json::json!({ "Worker": worker }).to_string(),
    )
    .expect("env");
    let template = build_dir(&dir, "worker", &bootstrap);
    let arch = if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "x86_64"
    };

    let out = Command::new(sam_bin.join("sam"))
        .args(["local", "invoke", "Worker", "--template"])
        .arg(&template)
        .args(["--event"])
        .arg(root().join("events/worker-create.json"))
        .args(["--env-vars"])
        .arg(&env_json)
        .args([
            "--skip-pull-image",
            "--invoke-image",
            &image,
            "--add-host",
            "host.docker.internal:host-gateway",
            "--parameter-overrides",
            &format!("Architecture={arch}"),
        ])
        .current_dir(&dir)
        .env("SAM_CLI_TELEMETRY", "0")
        // the credentials SAM hands the container (moto accepts any)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .output()
        .expect("sam runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "sam local invoke failed:\n{stdout}\n{stderr}"
    );
    let answer: serde_json::Value = serde_json::from_str(
        stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or_else(|| panic!("no answer:\n{stdout}\n{stderr}")),
    )
    .expect("the worker's answer is JSON");
    assert_eq!(
        answer,
        serde_json::json!({"batchItemFailures": []}),
        "{stdout}\n{stderr}"
    );
    // the function's own lines, Powertools' keys included, through SAM's log capture
    let ready = stderr
        .lines()
        .chain(stdout.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["message"] == "batch done")
        .unwrap_or_else(|| panic!("no batch done line:\n{stderr}"));
    assert_eq!(ready["cold_start"], true, "{ready}");
    assert_eq!(ready["records"], 1, "{ready}");

    // the execution is in moto's tables: the local invoke never went anywhere else
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(&host_endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "testing", "testing", None, None, "test",
        ))
        .load()
        .await;
    let store = harel_dynamodb::DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), &prefix)
        .expect("prefix");
    let exe = harel_store::Executions::load(&store, "order-1")
        .await
        .expect("load")
        .expect("the worker created order-1 on moto");
    assert_eq!(exe.definition_id, "Order");
}

/// One HTTP/1.1 request to `addr`: (status, body).
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("a response");
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {raw:?}"));
    let body = raw
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// `sam local start-api` with the api function's binary in the local base image: a create
/// through SAM's local HTTP API (its HttpApi event emulated as API Gateway's payload 2.0)
/// lands on moto's queue, the worker (here, in process) creates the execution, and the local
/// API reads it back.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs SAM, cargo lambda, Docker or Chromium: scripts/test.sh runs it"]
async fn sam_local_start_api_serves_the_api_function_against_moto() {
    let docker = Command::new("docker").arg("info").output();
    if !docker.as_ref().is_ok_and(|o| o.status.success()) {
        return skip(
            "no Docker engine (docker info failed): apt-get install docker.io, start dockerd",
        );
    }
    let Some((_, sam_bin)) = tools::lambda_tools() else {
        return;
    };
    let bootstrap = bootstrap_binary();
    let arch = if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "x86_64"
    };
    // a tag of its own: the script drops the emulator image SAM derived from the tag's name
    let image = Command::new("bash")
        .arg(root().join("scripts/sam-local-image.sh"))
        .arg(&bootstrap)
        .arg(format!("harel-local/api:al2023-{arch}"))
        .output()
        .expect("sam-local-image.sh runs");
    if !image.status.success() {
        return skip(&String::from_utf8_lossy(&image.stderr));
    }
    let image = String::from_utf8_lossy(&image.stdout).trim().to_string();

    let (_moto, port) = moto_on_all_interfaces();
    let host_endpoint = format!("http://127.0.0.1:{port}");
    let prefix = format!("sa{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let queue = |name: &str| format!("{host_endpoint}/123456789012/{name}");
    let vars = [
        ("HAREL_TABLE_PREFIX", prefix.clone()),
        ("HAREL_QUEUE_URL", queue(&format!("{prefix}.fifo"))),
        ("HAREL_DLQ_URL", queue(&format!("{prefix}-dlq.fifo"))),
        ("IDEMPOTENCY_TABLE", format!("{prefix}_idempotency")),
    ];
    let aws = [
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
    ];
    let setup = Command::new(env!("CARGO_BIN_EXE_local-setup"))
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .envs(aws)
        .env("AWS_ENDPOINT_URL", &host_endpoint)
        .output()
        .expect("local-setup runs");
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );

    let dir = std::env::temp_dir().join(format!("harel-sam-local-{prefix}"));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut api: serde_json::Map<String, serde_json::Value> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(v.as_str())))
        .collect();
    api.insert(
        "HAREL_ENDPOINT_URL".into(),
        format!("http://host.docker.internal:{port}").into(),
    );
    let env_json = dir.join("env.json");
    std::fs::write(&env_json, serde_json::json!({ "Api": api }).to_string()).expect("env");
    let template = build_dir(&dir, "api", &bootstrap);
    let api_port = free_port();
    let log = std::fs::File::create(dir.join("sam.log")).expect("a log file");
    let sam = Command::new(sam_bin.join("sam"))
        .args(["local", "start-api", "--template"])
        .arg(&template)
        .args(["--env-vars"])
        .arg(&env_json)
        .args([
            "--skip-pull-image",
            "--invoke-image",
            &image,
            "--add-host",
            "host.docker.internal:host-gateway",
            "--parameter-overrides",
            &format!("Architecture={arch}"),
            "--port",
            &api_port.to_string(),
            // one container for every request, not one each
            "--warm-containers",
            "LAZY",
        ])
        .current_dir(&dir)
        .env("SAM_CLI_TELEMETRY", "0")
        .envs(aws)
        .stdout(log.try_clone().expect("the log"))
        .stderr(log)
        .spawn()
        .expect("sam runs");
    let sam = Killed(sam);
    let addr = format!("127.0.0.1:{api_port}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::net::TcpStream::connect(&addr).is_err() {
        let log = std::fs::read_to_string(dir.join("sam.log")).unwrap_or_default();
        assert!(
            Instant::now() < deadline,
            "sam local start-api did not listen on {addr}:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let sam_log = || std::fs::read_to_string(dir.join("sam.log")).unwrap_or_default();

    let (status, created) = http(
        &addr,
        "POST",
        "/executions",
        r#"{"machine": "Order", "id": "order-sam", "context": {"items": 2}}"#,
    );
    assert_eq!(status, 202, "{created}\n{}", sam_log());
    let created: serde_json::Value = serde_json::from_str(&created).expect("JSON");
    assert_eq!(created["id"], "order-sam");
    let (status, refused) = http(&addr, "POST", "/executions", r#"{"machine": "Nope"}"#);
    assert_eq!(status, 404, "{refused}");

    // the create is on moto's queue: the worker runs it
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(&host_endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "testing", "testing", None, None, "test",
        ))
        .load()
        .await;
    let settings: Vec<(&str, &str)> = vars
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain([("AWS_REGION", "us-east-1")])
        .collect();
    let store = harel_dynamodb::DynamoDbStore::new(aws_sdk_dynamodb::Client::new(&sdk), &prefix)
        .expect("prefix");
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let queue_url = queue(&format!("{prefix}.fifo"));
    let worker: std::sync::Arc<harel_testkit::MotoWorker> =
        std::sync::Arc::new(harel_lambda::Worker::new(
            store,
            harel_sqs::SqsTransport::new(sqs.clone(), &queue_url),
            harel_app::aws::driver().expect("the app"),
            None,
            harel_testkit::config_from(harel_lambda::Role::Worker, &settings),
        ));
    let source = harel_sqs::SqsTransport::new(sqs, &queue_url);
    let handled = harel_testkit::pump(&source, &worker).await;
    assert_eq!(handled.len(), 1, "one create, the refusal enqueued nothing");

    let (status, shown) = http(&addr, "GET", "/executions/order-sam", "");
    assert_eq!(status, 200, "{shown}\n{}", sam_log());
    let shown: serde_json::Value = serde_json::from_str(&shown).expect("JSON");
    assert_eq!(shown["execution"]["definition_id"], "Order");
    assert_eq!(shown["execution"]["status"], "RUNNING");
    assert_eq!(shown["execution"]["context"]["items"], 2);
    // the routes of their own (no authorizer) reach the function too; this stack has no
    // hooks file and no callback secret, so they say so
    for (path, code) in [
        ("/hooks/stripe", "unknown_hook"),
        ("/callbacks/some-token", "callbacks_not_configured"),
        ("/callbacks/some-token/fail", "callbacks_not_configured"),
    ] {
        let (status, answer) = http(&addr, "POST", path, "{}");
        let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (404, Some(code)),
            "{path}: {answer}"
        );
    }
    drop(sam);
    // SAM's warm container outlives it: remove what it started for this template
    let _ = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("ancestor={image}")])
        .output()
        .map(|o| {
            for id in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                let _ = Command::new("docker").args(["rm", "-f", id]).output();
            }
        });
    let _ = std::fs::remove_dir_all(&dir);
}
