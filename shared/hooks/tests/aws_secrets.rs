//! Webhook and callback secrets from SSM Parameter Store and Secrets Manager, read once on
//! the moto server `scripts/with-moto.sh` starts; each reference is read once however many
//! hooks use it, and a reference that cannot be read stops the load, naming it.
//!
//! `scripts/with-moto.sh cargo test -p harel-hooks --test aws_secrets`

use harel_hooks::signature::sign;
use harel_hooks::{callback, CallbackKey, Format, Hooks, HooksFile, Outcome};
use harel_remote::AwsReader;
use http::{HeaderMap, HeaderValue};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a moto server: scripts/test.sh runs it"]
async fn secrets_come_from_ssm_and_secrets_manager() {
    let sdk = harel_testwire::sdk_config().await;
    let tag = harel_testwire::unique_prefix("hooks");
    let parameter = format!("/{tag}/github");
    let secret = format!("{tag}/stripe-webhook");
    aws_sdk_ssm::Client::new(&sdk)
        .put_parameter()
        .name(&parameter)
        .value("gh-from-ssm")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .send()
        .await
        .expect("put_parameter on moto");
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(&secret)
        .secret_string("whsec_from_secrets_manager")
        .send()
        .await
        .expect("create_secret on moto");

    let text = format!(
        r#"
stripe:
  verify: {{scheme: stripe, secret: "secretsmanager:{secret}"}}
  dedupe: id
  execution: order
  kind_from: type
  kinds: {{paid: Paid}}
github:
  verify: {{scheme: github, secret: "ssm:{parameter}"}}
  execution: repo
  kind_from: "header:X-GitHub-Event"
  kinds: {{push: Pushed}}
"#
    );
    let file = HooksFile::parse(&text, Format::Yaml, "hooks.yaml").unwrap();
    let reader = AwsReader::new(&sdk);
    let hooks = Hooks::resolve(file.clone(), Some(&reader)).await.unwrap();
    let shown = format!("{hooks:?}");
    assert!(
        !shown.contains("whsec_from") && !shown.contains("gh-from-ssm"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("secretsmanager:{secret}")),
        "{shown}"
    );

    let now = 1_765_000_000;
    let body = json!({"id": "evt_1", "type": "paid", "order": "o-1"}).to_string();
    let mut h = HeaderMap::new();
    h.insert(
        "stripe-signature",
        HeaderValue::from_str(&sign::stripe(
            b"whsec_from_secrets_manager",
            now,
            body.as_bytes(),
        ))
        .unwrap(),
    );
    assert!(matches!(
        hooks.handle("stripe", &h, body.as_bytes(), now).unwrap(),
        Outcome::Deliver(_)
    ));
    let body = json!({"repo": "r"}).to_string();
    let mut h = HeaderMap::new();
    h.insert(
        "x-hub-signature-256",
        HeaderValue::from_str(&sign::github(b"gh-from-ssm", body.as_bytes())).unwrap(),
    );
    h.insert("x-github-event", HeaderValue::from_static("push"));
    assert!(matches!(
        hooks.handle("github", &h, body.as_bytes(), now).unwrap(),
        Outcome::Deliver(_)
    ));

    // the callback secret too, by reference in HAREL_CALLBACK_SECRET
    let long = format!("{tag}/callbacks");
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(&long)
        .secret_string("a-stack-callback-secret-of-40-bytes-long!")
        .send()
        .await
        .unwrap();
    std::env::set_var(callback::SECRET_VAR, format!("secretsmanager:{long}"));
    let key = CallbackKey::from_env(Some(&reader)).await.unwrap().unwrap();
    std::env::remove_var(callback::SECRET_VAR);
    assert!(!format!("{key:?}").contains("a-stack-callback"));

    // a reference that does not exist stops the load, named
    let missing = text.replace(&parameter, &format!("/{tag}/nothing"));
    let file = HooksFile::parse(&missing, Format::Yaml, "hooks.yaml").unwrap();
    let e = Hooks::resolve(file, Some(&reader)).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("secret ssm:/{tag}/nothing: no such parameter")
    );
}
