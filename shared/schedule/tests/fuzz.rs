//! The schedules file (JSON, TOML, YAML) on input nobody wrote by hand: `parse` never panics
//! and never hangs (each case under `harel_fuzzing`'s deadline), every refusal names the
//! file and says why, and a text the format itself cannot read is refused with the line its
//! parser gives. The entries are checked against a machine (its context schema), as the
//! sweeper checks them. Inputs: random bytes, each format's token soup, and real schedules
//! files mutated. The fast tier runs a few hundred cases per property; `scripts/fuzz.sh` more.

use std::sync::{Arc, LazyLock};

use harel_fuzzing::strategies::{mutated, random_bytes, token_soup, Bytes};
use harel_fuzzing::{check, within, CASE_DEADLINE};
use harel_model::Definition;
use harel_schedule::{parse, FileError};

const REPORT: &str = r#"
machine Report {
  context {
    kind: string = "daily"
    n: int = 0
    flag: bool = false
  }
  initial Working
  state Working {}
  final Done success
  from Working to Done on Finish
}
"#;

static MACHINE: LazyLock<Arc<Definition>> = LazyLock::new(|| {
    Arc::new(harel_lang::load_str(REPORT, Some("Report"), "report.stm").expect("the machine"))
});

const YAML: &str = include_str!("../../../examples/schedules.yaml");

const YAML_REPORT: &str = "nightly-report:\n  machine: Report\n  cron: \"0 3 * * MON-FRI\"\n  timezone: Europe/Madrid\n  context: {kind: nightly, n: 3, flag: true}\n  id: \"nightly-{date}-{schedule}\"\n  overlap: allow\n  catch_up: skip\nquarter:\n  machine: Report\n  rate: 15 minutes\n";

const TOML: &str = "[nightly-report]\nmachine = \"Report\"\ncron = \"*/5 1-3 1,15 JAN-JUN *\"\ntimezone = \"America/New_York\"\ncontext = { kind = \"nightly\", n = 2 }\nid = \"nightly-{utc}\"\noverlap = \"allow\"\ncatch_up = \"skip\"\n\n[hourly]\nmachine = \"Report\"\nrate = \"1 hour\"\n";

const JSON: &str = r#"{"nightly-report": {"machine": "Report", "cron": "@daily", "timezone": "UTC", "context": {"kind": "nightly"}, "id": "r-{utc}", "overlap": "skip", "catch_up": "once"}, "days": {"machine": "Report", "rate": "2 days"}}"#;

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
    "---",
    "[r]",
    "[[r]]",
    "machine",
    "Report",
    "Nope",
    "cron",
    "rate",
    "timezone",
    "context",
    "id",
    "overlap",
    "catch_up",
    "skip",
    "allow",
    "once",
    "\"0 3 * * *\"",
    "\"*/0 * * * *\"",
    "\"0 0 30 2 *\"",
    "\"@hourly\"",
    "\"L W #\"",
    "\"15 minutes\"",
    "\"0 days\"",
    "\"99999999999 days\"",
    "Europe/Madrid",
    "Mars/Base",
    "{date}",
    "{utc}",
    "{schedule}",
    "{machine}",
    "{nope}",
    "{",
    "kind",
    "n",
    "flag",
    "1",
    "-1",
    "1e999",
    "18446744073709551616",
    "true",
    "null",
    "~",
    "\"\\u0000\"",
    "\\",
    "é",
    "\u{feff}",
];

const FILES: [&str; 3] = ["fuzzed.json", "fuzzed.toml", "fuzzed.yaml"];

/// Whether the format's own parser refuses `text` and says where.
fn located_syntax_error(text: &str, file: &str) -> bool {
    if file.ends_with(".json") {
        serde_json::from_str::<serde_json::Value>(text).is_err_and(|e| e.line() > 0)
    } else if file.ends_with(".toml") {
        toml::from_str::<toml::Table>(text).is_err_and(|e| e.span().is_some())
    } else {
        serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text).is_err_and(|e| e.location().is_some())
    }
}

/// Parse as each format, the entries checked against the machine: an answer either way; a
/// refusal names the file, says why, and has the line where the format's parser gives one.
fn parse_all(text: String) -> Result<(), String> {
    let machine = MACHINE.clone();
    let machines = move |name: &str| (name == "Report").then(|| machine.clone());
    for file in FILES {
        let Err(e) = parse(file, &text, Some(&machines)) else {
            continue;
        };
        let shown = e.to_string();
        let (named, reason) = match &e {
            FileError::File { file: f, reason }
            | FileError::Entry {
                file: f, reason, ..
            } => (f == file, reason),
        };
        if !named || !shown.starts_with(&format!("schedules file {file}")) {
            return Err(format!(
                "{file}: a refusal that does not name the file: {shown}"
            ));
        }
        if reason.trim().is_empty() {
            return Err(format!("{file}: a refusal without a reason: {shown}"));
        }
        if located_syntax_error(&text, file) && !reason.contains("line") {
            return Err(format!(
                "{file}: the text does not parse and its parser says where, the refusal does not: {shown}"
            ));
        }
    }
    Ok(())
}

#[test]
fn random_bytes_are_refused_or_read() {
    check(
        "schedules file random bytes",
        300,
        random_bytes(200),
        |b: Bytes| parse_all(b.text()),
    );
}

#[test]
fn token_soup_is_refused_or_read() {
    check(
        "schedules file token soup",
        300,
        token_soup(TOKENS, 60),
        parse_all,
    );
}

#[test]
fn mutated_schedules_files_are_refused_or_read() {
    let machine = MACHINE.clone();
    let machines = move |name: &str| (name == "Report").then(|| machine.clone());
    for (file, seed) in [
        ("seed.yaml", YAML_REPORT),
        ("seed.toml", TOML),
        ("seed.json", JSON),
    ] {
        parse(file, seed, Some(&machines)).unwrap_or_else(|e| panic!("a seed that reads: {e}"));
    }
    parse("example.yaml", YAML, None).expect("the example reads");
    let seeds = vec![YAML.into(), YAML_REPORT.into(), TOML.into(), JSON.into()];
    check(
        "schedules file mutated files",
        300,
        mutated(seeds, TOKENS, 6, 32),
        |b: Bytes| parse_all(b.text()),
    );
}

/// Nesting thousands deep, which libyaml scans in time quadratic in the depth (the action
/// map's fuzzer found it: `shared/remote/tests/fuzz.rs`), and which a recursive parser could
/// overflow its stack on: refused at once, with the place, in every format.
#[test]
fn deep_nesting_is_refused_at_once_with_the_place() {
    let n = 100_000;
    let cases = [
        (
            "deep.yaml",
            format!(
                "a: {{machine: Report, context: {{x: {}1{}}}}}",
                "[".repeat(n),
                "]".repeat(n)
            ),
        ),
        (
            "deep.yaml",
            format!("a: {}1{}", "{a: ".repeat(n), "}".repeat(n)),
        ),
        (
            "deep.json",
            format!("{{\"a\": {}1{}}}", "[".repeat(n), "]".repeat(n)),
        ),
        (
            "deep.toml",
            format!("a = {}1{}", "[".repeat(n), "]".repeat(n)),
        ),
        (
            "deep.toml",
            format!("a = {}1{}", "{b = ".repeat(n), "}".repeat(n)),
        ),
    ];
    for (file, text) in cases {
        let e = within(CASE_DEADLINE, move || parse(file, &text, None).map(|_| ()))
            .unwrap_or_else(|f| panic!("{file}: {f}"))
            .expect_err("refused");
        let shown = e.to_string();
        assert!(shown.contains("line"), "{file}: no place: {shown}");
        assert!(
            shown.contains("nest") || shown.contains("recursion"),
            "{file}: {shown}"
        );
    }
}
