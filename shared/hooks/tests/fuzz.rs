//! The hooks file (JSON, TOML, YAML) on input nobody wrote by hand: `HooksFile::parse` never
//! panics and never hangs (each case under `harel_fuzzing`'s deadline), every refusal names
//! the file and says why, and a text the format itself cannot read is refused with the line
//! and column its parser gives. Inputs: random bytes, each format's token soup, and real
//! hooks files mutated. The fast tier runs a few hundred cases per property;
//! `scripts/fuzz.sh` more.

use harel_fuzzing::strategies::{mutated, random_bytes, token_soup, Bytes};
use harel_fuzzing::{check, within, CASE_DEADLINE};
use harel_hooks::{Format, HooksFile};

const YAML: &str = include_str!("../../../examples/webhook_payment/hooks.yaml");

const YAML_HMAC: &str = r#"
acme:
  verify:
    scheme: hmac
    secret: "ssm:/acme/hook"
    header: X-Acme-Signature
    algorithm: sha1
    encoding: base64
    prefix: "sha1="
    timestamp_header: X-Acme-Time
    tolerance: 120
    payload: "{timestamp}.{body}"
  dedupe: header:X-Acme-Delivery
  execution: order.id
  kind_from: header:X-Acme-Event
  kinds: {paid: Paid, "order.failed": {kind: Failed, data: "{why: reason}"}}
  create: {machine: payment, context: "{amount: order.amount}", on: [Paid]}
github:
  verify: {scheme: github, secret: "env:GH"}
  execution: "pull_request.head.ref"
  kind_from: header:X-GitHub-Event
  kinds: {push: Pushed}
"#;

const JSON: &str = r#"{"stripe": {
  "verify": {"scheme": "stripe", "secret": "secretsmanager:stripe-webhook", "tolerance": 300},
  "machine": "payment",
  "dedupe": "id",
  "execution": "data.object.metadata.harel_order_id",
  "kind_from": "type",
  "kinds": {"payment_intent.succeeded": {"kind": "PaymentSucceeded", "data": "{id: data.object.id}"},
            "payment_intent.payment_failed": "PaymentFailed"},
  "data": "data.object"}}"#;

const TOML: &str = r#"
[stripe]
verify = {scheme = "stripe", secret = "env:STRIPE_WHSEC", tolerance = 300}
dedupe = "id"
execution = "data.object.metadata.harel_order_id"
kind_from = "type"
data = "data.object"

[stripe.kinds]
"payment_intent.succeeded" = "PaymentSucceeded"
"payment_intent.payment_failed" = { kind = "PaymentFailed", data = "{r: data.object.last_payment_error.message}" }

[stripe.create]
machine = "payment"
on = ["PaymentSucceeded"]
"#;

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "=",
    "\"",
    "'",
    "\n",
    "  ",
    "- ",
    "# c",
    "&a",
    "*a",
    "!tag",
    "|",
    "---",
    "[stripe]",
    "[[x]]",
    "stripe",
    "verify",
    "scheme",
    "stripe",
    "github",
    "hmac",
    "secret",
    "\"env:S\"",
    "ssm:/p",
    "secretsmanager:s",
    "tolerance",
    "header",
    "header:X-Id",
    "header:bad header",
    "algorithm",
    "sha256",
    "sha1",
    "encoding",
    "base64",
    "hex",
    "prefix",
    "timestamp_header",
    "payload",
    "\"{timestamp}.{body}\"",
    "dedupe",
    "execution",
    "kind_from",
    "kinds",
    "kind",
    "data",
    "create",
    "machine",
    "context",
    "on",
    "a.b",
    "a[0]",
    "`x`",
    "@",
    "||",
    "&&",
    "!",
    "{x: y}",
    "[*]",
    "1",
    "-1",
    "300",
    "18446744073709551616",
    "1e999",
    "true",
    "null",
    "~",
    "\"\\u0000\"",
    "\\",
    "é",
    "\u{feff}",
];

fn format_of(i: usize) -> Format {
    [Format::Json, Format::Toml, Format::Yaml][i % 3]
}

/// The line and column (or just whether there is a place) the format's own parser gives for
/// `text`, when `text` is not a document of that format at all.
fn syntax_error_place(text: &str, format: Format) -> Option<bool> {
    match format {
        Format::Json => serde_json::from_str::<serde_json::Value>(text)
            .err()
            .map(|e| e.line() > 0),
        Format::Toml => toml::from_str::<toml::Table>(text)
            .err()
            .map(|e| e.span().is_some()),
        Format::Yaml => serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
            .err()
            .map(|e| e.location().is_some()),
    }
}

/// Parse in every format: an answer either way; a refusal names the file, says why, and
/// has a place where the format's parser gives one.
fn parse_all(text: String) -> Result<(), String> {
    for i in 0..3 {
        let format = format_of(i);
        let Err(e) = HooksFile::parse(&text, format, "fuzzed.hooks") else {
            continue;
        };
        let shown = e.to_string();
        if e.file != "fuzzed.hooks" || !shown.starts_with("hooks file fuzzed.hooks") {
            return Err(format!(
                "{format:?}: a refusal that does not name the file: {shown}"
            ));
        }
        if e.message.trim().is_empty() {
            return Err(format!("{format:?}: a refusal without a reason: {shown}"));
        }
        if let Some((line, column)) = e.position {
            // lines as the format counts them: YAML breaks a line at `\r` too (`\r\n` is one
            // break), JSON at `\n` only
            let lines = match format {
                Format::Yaml => text.replace("\r\n", "\n").split(['\n', '\r']).count(),
                _ => text.split('\n').count(),
            };
            if line == 0 || column == 0 || line > lines + 1 {
                return Err(format!(
                    "{format:?}: a place outside the text ({line}:{column}, {lines} lines): {shown}"
                ));
            }
        }
        if syntax_error_place(&text, format) == Some(true) && e.position.is_none() {
            return Err(format!(
                "{format:?}: the text is no {format:?} and its parser says where, the refusal does not: {shown}"
            ));
        }
    }
    Ok(())
}

#[test]
fn random_bytes_are_refused_or_read() {
    check(
        "hooks file random bytes",
        300,
        random_bytes(200),
        |b: Bytes| parse_all(b.text()),
    );
}

#[test]
fn token_soup_is_refused_or_read() {
    check(
        "hooks file token soup",
        300,
        token_soup(TOKENS, 60),
        parse_all,
    );
}

#[test]
fn mutated_hooks_files_are_refused_or_read() {
    let seeds = vec![YAML.into(), YAML_HMAC.into(), JSON.into(), TOML.into()];
    for seed in [YAML, YAML_HMAC] {
        HooksFile::parse(seed, Format::Yaml, "seed.yaml").expect("a seed that reads");
    }
    HooksFile::parse(JSON, Format::Json, "seed.json").expect("a seed that reads");
    HooksFile::parse(TOML, Format::Toml, "seed.toml").expect("a seed that reads");
    check(
        "hooks file mutated files",
        300,
        mutated(seeds, TOKENS, 6, 32),
        |b: Bytes| parse_all(b.text()),
    );
}

/// Nesting thousands deep, which libyaml scans in time quadratic in the depth (the action
/// map's fuzzer found it: `shared/remote/tests/fuzz.rs`), and which a recursive parser
/// could overflow its stack on: refused at once, with the place, in every format.
#[test]
fn deep_nesting_is_refused_at_once_with_the_place() {
    let n = 100_000;
    let cases = [
        (
            Format::Yaml,
            format!("a: {}1{}", "[".repeat(n), "]".repeat(n)),
        ),
        (
            Format::Yaml,
            format!("a: {}1{}", "{a: ".repeat(n), "}".repeat(n)),
        ),
        (
            Format::Json,
            format!("{{\"a\": {}1{}}}", "[".repeat(n), "]".repeat(n)),
        ),
        (
            Format::Toml,
            format!("a = {}1{}", "[".repeat(n), "]".repeat(n)),
        ),
        (
            Format::Toml,
            format!("a = {}1{}", "{b = ".repeat(n), "}".repeat(n)),
        ),
    ];
    for (format, text) in cases {
        let e = within(CASE_DEADLINE, move || {
            HooksFile::parse(&text, format, "deep.hooks").map(|_| ())
        })
        .unwrap_or_else(|f| panic!("{format:?}: {f}"))
        .expect_err("refused");
        assert!(e.position.is_some(), "{format:?}: no place: {e}");
        assert!(
            e.message.contains("nest") || e.message.contains("recursion"),
            "{format:?}: {e}"
        );
    }
}
