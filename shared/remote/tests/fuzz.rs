//! The action map (JSON, TOML, YAML) on input nobody wrote by hand: `ActionMap::parse`
//! never panics and never hangs (each case under `harel_fuzzing`'s deadline), and every
//! refusal names the map. Inputs: random bytes, each format's token soup, and real maps
//! mutated. The fast tier runs a few hundred cases per property; `scripts/fuzz.sh` more.

use harel_fuzzing::strategies::{mutated, random_bytes, token_soup, Bytes};
use harel_fuzzing::{check, within, CASE_DEADLINE};
use harel_remote::map::{ActionMap, Format};

const JSON: &str = r#"{
    "billing.charge": "lambda:charge-fn",
    "billing": {"refund": {"target": "https://x.example/refund?code=k", "timeout": 2.5, "attempts": 2,
                           "headers": {"Authorization": "env:TOKEN", "X-Key": "ssm:/team/key",
                                       "X-Secret": "secretsmanager:team/token", "Accept-Language": "en"}}},
    "route": "arn:aws:lambda:eu-west-1:123456789012:function:route"
}"#;

const TOML: &str = r#"
"billing.charge" = "lambda:charge-fn"
"billing.route"  = "https://api.example.com/route"

["billing.refund"]
target = "https://api.example.com/refund"
timeout = 5
attempts = 2
headers = { Authorization = "env:REFUND_TOKEN", "X-Api-Key" = "ssm:/billing/route-key" }

[ops]
page = { target = "lambda:pager", attempts = 1 }
"#;

const YAML: &str = "billing.charge: lambda:charge-fn\nbilling:\n  refund:\n    target: https://x.example/refund\n    timeout: 2.5\n    attempts: 2\n    headers: {Authorization: 'env:TOKEN', X-Key: \"ssm:/k\"}\n  route: [not, a, target]\n# a comment\nops: {page: {target: 'lambda:pager'}}\n";

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
    "? ",
    "# c",
    "&a",
    "*a",
    "!tag",
    "|",
    ">",
    "---",
    "...",
    "\"a.b\"",
    "a.b",
    "target",
    "timeout",
    "attempts",
    "headers",
    "\"lambda:f\"",
    "lambda:f",
    "\"https://h.example/x\"",
    "https://h.example/x",
    "env:T",
    "ssm:/p",
    "secretsmanager:s",
    "1",
    "0",
    "-1",
    "2.5",
    "1e999",
    "nan",
    "inf",
    "true",
    "null",
    "~",
    "[x]",
    "[[x]]",
    "x = 1",
    "\"\\u0000\"",
    "\\",
    "é",
    "\u{feff}",
];

fn format_of(i: usize) -> Format {
    [Format::Json, Format::Toml, Format::Yaml][i % 3]
}

/// Parse in every format: an answer either way, a refusal that names the map.
fn parse_all(text: String) -> Result<(), String> {
    for i in 0..3 {
        if let Err(e) = ActionMap::parse(&text, format_of(i), "fuzzed.map") {
            let shown = e.to_string();
            if !shown.starts_with("action map fuzzed.map: ") {
                return Err(format!("a refusal that does not name the map: {shown}"));
            }
        }
    }
    Ok(())
}

#[test]
fn random_bytes_are_refused_or_read() {
    check(
        "action map random bytes",
        300,
        random_bytes(200),
        |b: Bytes| parse_all(b.text()),
    );
}

#[test]
fn token_soup_is_refused_or_read() {
    check(
        "action map token soup",
        300,
        token_soup(TOKENS, 60),
        parse_all,
    );
}

#[test]
fn mutated_maps_are_refused_or_read() {
    let seeds = vec![JSON.into(), TOML.into(), YAML.into()];
    check(
        "action map mutated maps",
        300,
        mutated(seeds, TOKENS, 6, 32),
        |b: Bytes| parse_all(b.text()),
    );
}

/// Found by this file's predecessor: YAML flow collections nested thousands deep took
/// libyaml time quadratic in the depth before serde_yaml_ng's recursion limit refused them
/// (8,000 levels, 16 KB: 1.6 s; 100,000: minutes). Refused by a linear scan first now, with
/// the place; JSON, which serde_json refused at 128 on its own, says the same.
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
    ];
    for (format, text) in cases {
        let shown = within(CASE_DEADLINE, move || {
            ActionMap::parse(&text, format, "deep.map").map(|_| ())
        })
        .unwrap_or_else(|f| panic!("{format:?}: {f}"))
        .expect_err("refused")
        .to_string();
        assert!(
            shown.starts_with(
                "action map deep.map: nested more than 128 levels deep at line 1, column"
            ),
            "{shown}"
        );
    }
    // a real map nested a little is read as before
    let nested = "a:\n  b:\n    c: {d: [1]}\n    e: lambda:f\n";
    let e = ActionMap::parse(nested, Format::Yaml, "m.yaml").expect_err("d is not a target");
    assert!(e.to_string().contains("action \"a.b.c.d\""), "{e}");
}
