//! Webhook deliveries signed here as each provider signs them: good, wrong, missing, stale
//! and tampered; and what a verified delivery maps to.

use harel_hooks::signature::sign;
use harel_hooks::{Algorithm, Encoding, Format, Hooks, HooksFile, Outcome, Refusal};
use http::{HeaderMap, HeaderValue};
use serde_json::json;

const NOW: i64 = 1_765_000_000;
const STRIPE_SECRET: &str = "whsec_test_0123456789";
const GITHUB_SECRET: &str = "gh-hook-secret";
const HMAC_SECRET: &str = "shared-hmac-secret";

const FILE: &str = r#"
stripe:
  verify: {scheme: stripe, secret: "whsec_test_0123456789", tolerance: 300}
  dedupe: id
  execution: data.object.metadata.harel_order_id
  kind_from: type
  kinds:
    payment_intent.succeeded:
      kind: PaymentSucceeded
      data: "{payment_id: data.object.id, amount: data.object.amount_received}"
    payment_intent.payment_failed:
      kind: PaymentFailed
      data: "{reason: data.object.last_payment_error.message}"
  create: {machine: payment, context: "{amount: data.object.amount}", on: [PaymentSucceeded]}
github:
  verify: {scheme: github, secret: "gh-hook-secret"}
  execution: repository.full_name
  kind_from: "header:X-GitHub-Event"
  kinds: {push: Pushed}
  data: "{ref: ref}"
shop:
  verify:
    scheme: hmac
    secret: "shared-hmac-secret"
    header: X-Shop-Signature
    algorithm: sha512
    encoding: base64
    prefix: "v1="
    timestamp_header: X-Shop-Timestamp
    tolerance: 60
  execution: order
  kind_from: event
  kinds: {order.paid: Paid}
legacy:
  verify: {scheme: hmac, secret: "shared-hmac-secret", header: X-Legacy-Sig, algorithm: sha1}
  dedupe: delivery
  execution: order
  kind_from: event
  kinds: {order.paid: Paid}
"#;

async fn hooks() -> Hooks {
    let file = HooksFile::parse(FILE, Format::Yaml, "hooks.yaml").unwrap();
    Hooks::resolve(file, None).await.unwrap()
}

fn headers(pairs: &[(&str, String)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

fn stripe_body(kind: &str, event_id: &str, order: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": event_id,
        "type": kind,
        "data": {"object": {
            "id": "pi_1", "amount": 4999, "amount_received": 4999,
            "metadata": {"harel_order_id": order},
            "last_payment_error": {"message": "Your card was declined."}
        }}
    }))
    .unwrap()
}

fn stripe_headers(body: &[u8], t: i64) -> HeaderMap {
    headers(&[(
        "Stripe-Signature",
        sign::stripe(STRIPE_SECRET.as_bytes(), t, body),
    )])
}

#[tokio::test]
async fn stripe_good_signature_delivers_with_the_providers_event_id() {
    let hooks = hooks().await;
    let body = stripe_body("payment_intent.succeeded", "evt_1", "order-7");
    let out = hooks
        .handle("stripe", &stripe_headers(&body, NOW - 10), &body, NOW)
        .unwrap();
    let Outcome::CreateAndDeliver(create, delivery) = out else {
        panic!("expected create and deliver, got {out:?}")
    };
    assert_eq!(create.machine, "payment");
    assert_eq!(create.execution, "order-7");
    assert_eq!(json!(create.context), json!({"amount": 4999}));
    assert_eq!(delivery.execution, "order-7");
    assert_eq!(delivery.event.id, "evt_1");
    assert_eq!(delivery.event.kind, "PaymentSucceeded");
    assert_eq!(
        json!(delivery.event.data),
        json!({"payment_id": "pi_1", "amount": 4999})
    );
    // the failure is not in `create.on`: delivered to an existing execution only
    let body = stripe_body("payment_intent.payment_failed", "evt_2", "order-7");
    let out = hooks
        .handle("stripe", &stripe_headers(&body, NOW), &body, NOW)
        .unwrap();
    let Outcome::Deliver(delivery) = out else {
        panic!("{out:?}")
    };
    assert_eq!(delivery.event.kind, "PaymentFailed");
    assert_eq!(
        json!(delivery.event.data),
        json!({"reason": "Your card was declined."})
    );
}

#[tokio::test]
async fn stripe_accepts_any_v1_of_a_rolled_secret() {
    let hooks = hooks().await;
    let body = stripe_body("payment_intent.succeeded", "evt_1", "o");
    let good = sign::stripe(STRIPE_SECRET.as_bytes(), NOW, &body);
    let old = sign::stripe(b"whsec_old", NOW, &body);
    let v1_old = old.split(',').nth(1).unwrap();
    let both = format!("{good},{v1_old}");
    let reversed = format!("t={NOW},{v1_old},{}", good.split(',').nth(1).unwrap());
    for value in [both, reversed] {
        let h = headers(&[("Stripe-Signature", value)]);
        assert!(hooks.handle("stripe", &h, &body, NOW).is_ok());
    }
}

#[tokio::test]
async fn stripe_refusals() {
    let hooks = hooks().await;
    let body = stripe_body("payment_intent.succeeded", "evt_1", "o");
    // missing
    let e = hooks
        .handle("stripe", &HeaderMap::new(), &body, NOW)
        .unwrap_err();
    assert_eq!(e, Refusal::MissingSignature("stripe-signature".into()));
    assert_eq!(e.status(), 401);
    // wrong secret
    let h = headers(&[("Stripe-Signature", sign::stripe(b"whsec_other", NOW, &body))]);
    let e = hooks.handle("stripe", &h, &body, NOW).unwrap_err();
    assert!(matches!(e, Refusal::BadSignature(_)), "{e:?}");
    assert_eq!(e.status(), 401);
    // stale: signed 301 s ago (tolerance 300), and one from the future
    for t in [NOW - 301, NOW + 301] {
        let e = hooks
            .handle("stripe", &stripe_headers(&body, t), &body, NOW)
            .unwrap_err();
        assert_eq!(e.code(), "stale_signature");
        assert_eq!(e.status(), 401);
    }
    assert!(hooks
        .handle("stripe", &stripe_headers(&body, NOW - 300), &body, NOW)
        .is_ok());
    // tampered body: signed one amount, sent another
    let h = stripe_headers(&body, NOW);
    let tampered = String::from_utf8(body.clone())
        .unwrap()
        .replace("4999", "1");
    let e = hooks
        .handle("stripe", &h, tampered.as_bytes(), NOW)
        .unwrap_err();
    assert!(matches!(e, Refusal::BadSignature(_)), "{e:?}");
    // a timestamp changed after signing (to dodge the tolerance) breaks the signature
    let sig = sign::stripe(STRIPE_SECRET.as_bytes(), NOW - 1000, &body);
    let moved = sig.replace(&format!("t={}", NOW - 1000), &format!("t={NOW}"));
    let e = hooks
        .handle(
            "stripe",
            &headers(&[("Stripe-Signature", moved)]),
            &body,
            NOW,
        )
        .unwrap_err();
    assert!(matches!(e, Refusal::BadSignature(_)), "{e:?}");
    // malformed headers
    for bad in ["v1=abc", &format!("t={NOW}"), "garbage"] {
        let e = hooks
            .handle(
                "stripe",
                &headers(&[("Stripe-Signature", bad.to_string())]),
                &body,
                NOW,
            )
            .unwrap_err();
        assert_eq!(e.status(), 401, "{bad}: {e:?}");
    }
    // an unknown hook
    let e = hooks
        .handle("paypal", &HeaderMap::new(), &body, NOW)
        .unwrap_err();
    assert_eq!(e.status(), 404);
}

#[tokio::test]
async fn a_signed_body_that_is_not_json_is_400_and_an_unrouted_event_is_ignored() {
    let hooks = hooks().await;
    let body = b"not json".to_vec();
    let e = hooks
        .handle("stripe", &stripe_headers(&body, NOW), &body, NOW)
        .unwrap_err();
    assert_eq!(e.status(), 400);
    assert_eq!(e.code(), "bad_body");

    let body = stripe_body("charge.refunded", "evt_9", "o");
    let out = hooks
        .handle("stripe", &stripe_headers(&body, NOW), &body, NOW)
        .unwrap();
    assert_eq!(
        out,
        Outcome::Ignored {
            hook: "stripe".into(),
            provider_kind: Some("charge.refunded".into()),
            reason: "\"charge.refunded\" is not routed by hook \"stripe\"".into(),
        }
    );
    // routed, but no execution id in it: nothing to deliver to
    let body = serde_json::to_vec(
        &json!({"id": "evt_3", "type": "payment_intent.succeeded", "data": {"object": {}}}),
    )
    .unwrap();
    let out = hooks
        .handle("stripe", &stripe_headers(&body, NOW), &body, NOW)
        .unwrap();
    let Outcome::Ignored { reason, .. } = out else {
        panic!("{out:?}")
    };
    assert_eq!(
        reason,
        "no execution id at `data.object.metadata.harel_order_id`"
    );
    // routed, but no event id: without one a retry could not be told apart
    let body = serde_json::to_vec(&json!({"type": "payment_intent.succeeded", "data": {"object": {"metadata": {"harel_order_id": "o"}}}})).unwrap();
    let e = hooks
        .handle("stripe", &stripe_headers(&body, NOW), &body, NOW)
        .unwrap_err();
    assert_eq!(e, Refusal::BadBody("no event id at `id`".into()));
}

#[tokio::test]
async fn github_signatures_and_the_delivery_id() {
    let hooks = hooks().await;
    let body = serde_json::to_vec(
        &json!({"ref": "refs/heads/main", "repository": {"full_name": "acme/app"}}),
    )
    .unwrap();
    let good = headers(&[
        (
            "X-Hub-Signature-256",
            sign::github(GITHUB_SECRET.as_bytes(), &body),
        ),
        ("X-GitHub-Event", "push".into()),
        (
            "X-GitHub-Delivery",
            "72d3162e-cc78-11e3-81ab-4c9367dc0958".into(),
        ),
    ]);
    let Outcome::Deliver(d) = hooks.handle("github", &good, &body, NOW).unwrap() else {
        panic!()
    };
    assert_eq!(d.execution, "acme/app");
    assert_eq!(d.event.kind, "Pushed");
    assert_eq!(d.event.id, "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    assert_eq!(json!(d.event.data), json!({"ref": "refs/heads/main"}));
    // github signs no timestamp: an old delivery redelivered still verifies
    assert!(hooks.handle("github", &good, &body, NOW + 86_400).is_ok());

    let wrong = headers(&[
        ("X-Hub-Signature-256", sign::github(b"other", &body)),
        ("X-GitHub-Event", "push".into()),
    ]);
    assert_eq!(
        hooks
            .handle("github", &wrong, &body, NOW)
            .unwrap_err()
            .code(),
        "bad_signature"
    );
    let missing = headers(&[("X-GitHub-Event", "push".into())]);
    assert_eq!(
        hooks.handle("github", &missing, &body, NOW).unwrap_err(),
        Refusal::MissingSignature("x-hub-signature-256".into())
    );
    let no_prefix = headers(&[(
        "X-Hub-Signature-256",
        sign::github(GITHUB_SECRET.as_bytes(), &body).replace("sha256=", ""),
    )]);
    assert_eq!(
        hooks
            .handle("github", &no_prefix, &body, NOW)
            .unwrap_err()
            .status(),
        401
    );
    let mut tampered = body.clone();
    tampered.extend_from_slice(b" ");
    assert_eq!(
        hooks
            .handle("github", &good, &tampered, NOW)
            .unwrap_err()
            .code(),
        "bad_signature"
    );
    // an event type the file does not route (a ping) is acknowledged
    let ping = headers(&[
        (
            "X-Hub-Signature-256",
            sign::github(GITHUB_SECRET.as_bytes(), &body),
        ),
        ("X-GitHub-Event", "ping".into()),
    ]);
    assert!(matches!(
        hooks.handle("github", &ping, &body, NOW).unwrap(),
        Outcome::Ignored { .. }
    ));
}

#[tokio::test]
async fn generic_hmac_with_timestamp_prefix_and_base64() {
    let hooks = hooks().await;
    let body = serde_json::to_vec(&json!({"event": "order.paid", "order": "o-1"})).unwrap();
    let signed = |t: i64, secret: &str, body: &[u8]| {
        let mut payload = format!("{t}.").into_bytes();
        payload.extend_from_slice(body);
        headers(&[
            (
                "X-Shop-Signature",
                format!(
                    "v1={}",
                    sign::hmac(
                        Algorithm::Sha512,
                        Encoding::Base64,
                        secret.as_bytes(),
                        &payload
                    )
                ),
            ),
            ("X-Shop-Timestamp", t.to_string()),
        ])
    };
    let Outcome::Deliver(d) = hooks
        .handle("shop", &signed(NOW - 5, HMAC_SECRET, &body), &body, NOW)
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (d.execution.as_str(), d.event.kind.as_str()),
        ("o-1", "Paid")
    );
    // no dedupe expression and no delivery header: the id is a digest of the body, so the
    // same delivery twice has the same id and another delivery another
    assert!(d.event.id.starts_with("shop:"));
    let Outcome::Deliver(again) = hooks
        .handle("shop", &signed(NOW, HMAC_SECRET, &body), &body, NOW)
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(again.event.id, d.event.id);

    let refuse = |h: HeaderMap, b: &[u8]| hooks.handle("shop", &h, b, NOW).unwrap_err();
    assert_eq!(
        refuse(signed(NOW, "wrong", &body), &body).code(),
        "bad_signature"
    );
    assert_eq!(
        refuse(signed(NOW - 61, HMAC_SECRET, &body), &body).code(),
        "stale_signature"
    );
    assert_eq!(
        refuse(signed(NOW, HMAC_SECRET, &body), b"{}").code(),
        "bad_signature"
    );
    assert_eq!(
        refuse(HeaderMap::new(), &body),
        Refusal::MissingSignature("x-shop-signature".into())
    );
    // the signature without its timestamp header
    let mut h = signed(NOW, HMAC_SECRET, &body);
    h.remove("x-shop-timestamp");
    assert_eq!(
        refuse(h, &body),
        Refusal::MissingSignature("x-shop-timestamp".into())
    );
    // the prefix is required
    let mut h = signed(NOW, HMAC_SECRET, &body);
    let bare = h["x-shop-signature"].to_str().unwrap().replace("v1=", "");
    h.insert("x-shop-signature", HeaderValue::from_str(&bare).unwrap());
    assert_eq!(refuse(h, &body).code(), "bad_signature");
}

#[tokio::test]
async fn generic_hmac_sha1_hex_without_timestamp() {
    let hooks = hooks().await;
    let body =
        serde_json::to_vec(&json!({"event": "order.paid", "order": "o-2", "delivery": "d-1"}))
            .unwrap();
    let sig = sign::hmac(
        Algorithm::Sha1,
        Encoding::Hex,
        HMAC_SECRET.as_bytes(),
        &body,
    );
    assert_eq!(sig.len(), 40);
    let Outcome::Deliver(d) = hooks
        .handle(
            "legacy",
            &headers(&[("X-Legacy-Sig", sig.clone())]),
            &body,
            NOW,
        )
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(d.event.id, "d-1");
    let sha256 = sign::hmac(
        Algorithm::Sha256,
        Encoding::Hex,
        HMAC_SECRET.as_bytes(),
        &body,
    );
    assert_eq!(
        hooks
            .handle("legacy", &headers(&[("X-Legacy-Sig", sha256)]), &body, NOW)
            .unwrap_err()
            .code(),
        "bad_signature"
    );
}

/// A known vector: RFC 4231 test case 2 (HMAC-SHA-256 and -512, key "Jefe").
#[test]
fn hmac_matches_rfc_4231() {
    let data = b"what do ya want for nothing?";
    assert_eq!(
        sign::hmac(Algorithm::Sha256, Encoding::Hex, b"Jefe", data),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    assert!(sign::hmac(Algorithm::Sha512, Encoding::Hex, b"Jefe", data)
        .starts_with("164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"));
    // RFC 2202 test case 2 (HMAC-SHA-1)
    assert_eq!(
        sign::hmac(Algorithm::Sha1, Encoding::Hex, b"Jefe", data),
        "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
    );
}
