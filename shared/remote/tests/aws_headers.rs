//! Header values from SSM Parameter Store (`ssm:`, a SecureString decrypted) and Secrets
//! Manager (`secretsmanager:`), read on the moto server `scripts/with-moto.sh` starts, sent
//! to a loopback HTTP function; a reference that cannot be read stops the binding, naming
//! the action and the reference, before anything is called.
//!
//! `scripts/with-moto.sh cargo test -p harel-remote --test aws_headers`

use std::sync::{Arc, Mutex};

use harel_model::{Event, Execution};
use harel_remote::{bind, ActionMap, Clients, Format, Secrets};
use harel_runtime::{ActionRegistry, DurableRunner};
use harel_store::MemoryStore;
use harel_testwire::actions::{read_request, Request};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

const MACHINE: &str = r#"
event Pay {}
bind { charge = billing.charge }
machine Billing {
  initial Idle
  state Idle {}
  state Paid {}
  from Idle select charge on Pay {
    "ok" to Paid
    else to Idle
  }
}
"#;

/// An HTTP function answering `{"context": <the request's>, "result": "ok"}`; every request
/// it received is kept.
async fn function() -> (String, Arc<Mutex<Vec<Request>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/charge", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                while let Some(request) = read_request(&mut socket).await {
                    let payload: Value = serde_json::from_slice(&request.body).unwrap_or_default();
                    let body = json!({"context": payload["context"], "result": "ok"}).to_string();
                    kept.lock().expect("log").push(request);
                    let text = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if socket.write_all(text.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

fn path(exe: &Execution) -> &str {
    exe.active_path.as_deref().unwrap_or("")
}

fn map_for(url: &str, parameter: &str, secret: &str) -> ActionMap {
    let text = json!({
        "billing.charge": {"target": url, "headers": {
            "X-Api-Key": format!("ssm:{parameter}"),
            "Authorization": format!("secretsmanager:{secret}"),
        }},
    })
    .to_string();
    ActionMap::parse(&text, Format::Json, "aws-headers.json").expect("map")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn header_values_come_from_ssm_and_secrets_manager() {
    let sdk = harel_testwire::sdk_config().await;
    let tag = harel_testwire::unique_prefix("hdr");
    let parameter = format!("/{tag}/api-key");
    let secret = format!("{tag}/charge-token");
    aws_sdk_ssm::Client::new(&sdk)
        .put_parameter()
        .name(&parameter)
        .value("k-123-secure")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .send()
        .await
        .expect("put_parameter on moto");
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(&secret)
        .secret_string("Bearer tok-456")
        .send()
        .await
        .expect("create_secret on moto");

    let (url, seen) = function().await;
    let map = map_for(&url, &parameter, &secret);
    let secrets = Secrets::resolve(&map, Some(&sdk)).await.expect("resolved");
    // only the references show, never the values
    let shown = format!("{secrets:?} {map:?}");
    assert!(shown.contains(&format!("ssm:{parameter}")), "{shown}");
    assert!(
        !shown.contains("k-123") && !shown.contains("tok-456"),
        "{shown}"
    );

    let mut registry = ActionRegistry::with_stdlib();
    bind(&mut registry, &map, &Clients::new(None), |_| None, &secrets).expect("bound");
    let defn = harel_lang::load_str(MACHINE, Some("Billing"), "billing.stm").expect("machine");
    let runner = DurableRunner::new(MemoryStore::new(), [defn]).with_registry(registry);
    let exe = runner.create("Billing", None, None).await.expect("create");
    let paid = runner
        .process(&exe.id, &Event::new("Pay"))
        .await
        .expect("process");
    assert_eq!(path(&paid), "Paid");
    let seen = seen.lock().expect("log");
    assert_eq!(seen.len(), 1);
    // the SecureString arrives decrypted, the secret as its SecretString
    assert_eq!(seen[0].header("x-api-key"), Some("k-123-secure"));
    assert_eq!(seen[0].header("authorization"), Some("Bearer tok-456"));
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn a_missing_parameter_or_secret_is_named_and_nothing_is_called() {
    let sdk = harel_testwire::sdk_config().await;
    let tag = harel_testwire::unique_prefix("hdr");
    let secret = format!("{tag}/there");
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(&secret)
        .secret_string("Bearer x")
        .send()
        .await
        .expect("create_secret on moto");
    let (url, seen) = function().await;

    let missing = format!("/{tag}/missing");
    let err = Secrets::resolve(&map_for(&url, &missing, &secret), Some(&sdk))
        .await
        .expect_err("no such parameter");
    assert_eq!(
        err.to_string(),
        format!(
            "action \"billing.charge\": header \"X-Api-Key\": cannot read ssm:{missing}: no such parameter"
        )
    );

    let parameter = format!("/{tag}/key");
    aws_sdk_ssm::Client::new(&sdk)
        .put_parameter()
        .name(&parameter)
        .value("k")
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .expect("put_parameter on moto");
    let gone = format!("{tag}/gone");
    let err = Secrets::resolve(&map_for(&url, &parameter, &gone), Some(&sdk))
        .await
        .expect_err("no such secret");
    assert_eq!(
        err.to_string(),
        format!(
            "action \"billing.charge\": header \"Authorization\": cannot read secretsmanager:{gone}: no such secret"
        )
    );

    // a map bound without its references resolved is refused too, naming them
    let err = bind(
        &mut ActionRegistry::with_stdlib(),
        &map_for(&url, &parameter, &secret),
        &Clients::new(None),
        |_| None,
        &Secrets::none(),
    )
    .expect_err("unresolved");
    assert!(
        err.to_string()
            .contains(&format!("reads ssm:{parameter}, which was not resolved")),
        "{err}"
    );
    // a function that runs no action (the sweeper) binds without reading them; were the
    // action called there, it would fail, saying so, and send nothing
    let mut registry = ActionRegistry::with_stdlib();
    bind(
        &mut registry,
        &map_for(&url, &parameter, &secret),
        &Clients::new(None),
        |_| None,
        &Secrets::unread(),
    )
    .expect("bound unread");
    let defn = harel_lang::load_str(MACHINE, Some("Billing"), "billing.stm").expect("machine");
    let runner = DurableRunner::new(MemoryStore::new(), [defn]).with_registry(registry);
    let exe = runner.create("Billing", None, None).await.expect("create");
    let shown = match runner.process(&exe.id, &Event::new("Pay")).await {
        Ok(after) => format!("{:?} {:?}", after.status, after.error),
        Err(e) => e.to_string(),
    };
    assert!(
        shown.starts_with("Failed") && shown.contains("did not read ssm:"),
        "{shown}"
    );
    // without AWS at all: the references are named
    let err = Secrets::resolve(&map_for(&url, &parameter, &secret), None)
        .await
        .expect_err("no aws");
    assert!(err.to_string().contains("no AWS configuration"), "{err}");
    assert!(seen.lock().expect("log").is_empty(), "nothing was called");
}
