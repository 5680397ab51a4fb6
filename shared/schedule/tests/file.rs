//! The schedules file: the three formats, and every bad file refused with its file, entry,
//! field and reason.

use std::sync::Arc;

use harel_model::Definition;
use harel_schedule::{parse, CatchUp, FileError, Overlap};

const REPORT: &str = r#"
machine Report {
  context {
    kind: string = "daily"
    n: int = 0
  }
  initial Working
  state Working {}
  final Done success
  from Working to Done on Finish
}
"#;

fn report() -> Arc<Definition> {
    Arc::new(harel_lang::load_str(REPORT, Some("Report"), "report.stm").expect("the machine"))
}

fn check(file: &str, text: &str) -> Result<harel_schedule::Schedules, FileError> {
    let defn = report();
    let machines = move |name: &str| (name == "Report").then(|| defn.clone());
    parse(file, text, Some(&machines))
}

#[test]
fn the_three_formats_read_the_same_entry() {
    let yaml = "nightly-report:\n  machine: Report\n  cron: \"0 3 * * *\"\n  timezone: Europe/Madrid\n  context: {kind: nightly}\n  id: \"nightly-{date}\"\n  overlap: allow\n  catch_up: skip\n";
    let toml = "[nightly-report]\nmachine = \"Report\"\ncron = \"0 3 * * *\"\ntimezone = \"Europe/Madrid\"\ncontext = { kind = \"nightly\" }\nid = \"nightly-{date}\"\noverlap = \"allow\"\ncatch_up = \"skip\"\n";
    let json = r#"{"nightly-report": {"machine": "Report", "cron": "0 3 * * *", "timezone": "Europe/Madrid", "context": {"kind": "nightly"}, "id": "nightly-{date}", "overlap": "allow", "catch_up": "skip"}}"#;
    for (file, text) in [
        ("s.yaml", yaml),
        ("s.yml", yaml),
        ("s.toml", toml),
        ("s.json", json),
    ] {
        let s = check(file, text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let e = &s.entries[0];
        assert_eq!(e.name, "nightly-report", "{file}");
        assert_eq!(e.machine, "Report");
        assert_eq!(e.when.describe(), "cron 0 3 * * *");
        assert_eq!(e.zone.name(), "Europe/Madrid");
        assert_eq!(
            serde_json::Value::Object(e.context.clone()),
            serde_json::json!({"kind": "nightly"})
        );
        assert_eq!(e.id.as_str(), "nightly-{date}");
        assert_eq!((e.overlap, e.catch_up), (Overlap::Allow, CatchUp::Skip));
    }
    // the defaults: UTC, an empty context, {schedule}-{utc}, overlap skip, catch up once
    let s = check("s.yaml", "r:\n  machine: Report\n  rate: 15 minutes\n").unwrap();
    let e = &s.entries[0];
    assert_eq!(e.zone.name(), "UTC");
    assert!(e.context.is_empty());
    assert_eq!(e.id.as_str(), "{schedule}-{utc}");
    assert_eq!((e.overlap, e.catch_up), (Overlap::Skip, CatchUp::Once));
}

#[test]
fn every_bad_file_is_refused_with_its_entry_field_and_reason() {
    let entry = |body: &str| format!("nightly:\n  machine: Report\n{body}");
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "s.yaml",
            entry("  cron: \"0 3 * *\"\n"),
            &[
                "entry \"nightly\", cron",
                "invalid cron expression \"0 3 * *\"",
            ],
        ),
        (
            "s.yaml",
            entry("  cron: \"0 0 30 2 *\"\n"),
            &["cron", "never fires"],
        ),
        (
            "s.yaml",
            entry("  rate: \"15 weeks\"\n"),
            &["entry \"nightly\", rate", "invalid rate"],
        ),
        (
            "s.yaml",
            entry("  cron: \"0 3 * * *\"\n  rate: 1 hour\n"),
            &["cron", "either cron or rate, not both"],
        ),
        (
            "s.yaml",
            entry("  timezone: UTC\n"),
            &["cron", "missing: give cron"],
        ),
        (
            "s.yaml",
            entry("  cron: \"0 3 * * *\"\n  timezone: Europe/Madird\n"),
            &["timezone", "unknown time zone \"Europe/Madird\""],
        ),
        (
            "s.yaml",
            entry("  cron: \"0 3 * * *\"\n  id: \"n-{when}\"\n"),
            &["entry \"nightly\", id", "unknown placeholder {when}"],
        ),
        (
            "s.yaml",
            entry("  cron: \"0 3 * * *\"\n  id: nightly\n"),
            &["id", "no time placeholder"],
        ),
        (
            "s.yaml",
            entry("  rate: 1 hour\n  id: \"n-{date}\"\n"),
            &["id", "the same id \"n-2026-01-01\""],
        ),
        (
            "s.yaml",
            entry("  cron: \"0 3 * * *\"\n  id: \"n {utc}\"\n"),
            &["id", "printable ASCII"],
        ),
        (
            "s.yaml",
            "nightly:\n  machine: Reprot\n  cron: \"0 3 * * *\"\n".into(),
            &["entry \"nightly\", machine", "unknown machine \"Reprot\""],
        ),
        (
            "s.yaml",
            entry("  cron: \"0 3 * * *\"\n  context: {n: many}\n"),
            &[
                "entry \"nightly\", context",
                "machine Report refuses it",
                "n",
            ],
        ),
        (
            "s.yaml",
            "bad name:\n  machine: Report\n  cron: \"0 3 * * *\"\n".into(),
            &["entry \"bad name\", name"],
        ),
        // the parsers' own errors, at their line and column
        (
            "s.yaml",
            entry("  cron: \"0 3 * * *\"\n  crn: x\n"),
            &[
                "schedules file s.yaml, entry \"nightly\"",
                "unknown field `crn`",
                "line 4 column",
            ],
        ),
        (
            "s.yaml",
            entry("  cron: \"0 3 * * *\"\n  overlap: sometimes\n"),
            &[
                "entry \"nightly\", overlap",
                "unknown variant `sometimes`",
                "line 4",
            ],
        ),
        (
            "s.yaml",
            "nightly: [1, 2\n".into(),
            &["schedules file s.yaml", "line"],
        ),
        // libyaml's own syntax errors say nothing of the place in their text; found by
        // tests/fuzz.rs, the place is added
        (
            "s.yaml",
            "} ".into(),
            &[
                "schedules file s.yaml: did not find expected node content",
                "at line 1 column 1",
            ],
        ),
        (
            "s.yaml",
            "nightly:\n  machine: \u{e}\n".into(),
            &["control characters are not allowed at line 2 column 12"],
        ),
        // nested past serde's limit: refused before libyaml's quadratic scan (tests/fuzz.rs)
        (
            "s.yaml",
            format!("a: {}", "[".repeat(129)),
            &["schedules file s.yaml: nested more than 128 levels deep at line 1, column 132"],
        ),
        (
            "s.json",
            r#"{"nightly": {"machine": "Report", "cron": "0 3 * * *", "retries": 2}}"#.into(),
            &[
                "entry \"nightly\"",
                "unknown field `retries`",
                "line 1 column",
            ],
        ),
        (
            "s.json",
            r#"{"nightly": {"machine": 3}}"#.into(),
            &[
                "entry \"nightly\", machine",
                "invalid type",
                "line 1 column",
            ],
        ),
        (
            "s.toml",
            "[nightly]\nmachine = \"Report\"\ncron = \"0 3 * * *\"\ncatch_up = \"always\"\n".into(),
            &[
                "entry \"nightly\", catch_up",
                "unknown variant `always`",
                "line 4",
            ],
        ),
        (
            "s.toml",
            "[nightly\n".into(),
            &["schedules file s.toml", "line 1"],
        ),
        (
            "s.ini",
            "x".into(),
            &["schedules file s.ini", "the extension must tell the format"],
        ),
    ];
    for (file, text, needles) in cases {
        let err = check(file, &text).expect_err(&text).to_string();
        for needle in needles {
            assert!(
                err.contains(needle),
                "{text:?}\n  gave: {err}\n  missing: {needle}"
            );
        }
        assert!(err.starts_with(&format!("schedules file {file}")), "{err}");
    }
}

#[test]
fn without_machines_the_machine_and_context_go_unchecked() {
    let s = parse(
        "s.yaml",
        "x:\n  machine: Anything\n  rate: 1 day\n  context: {n: many}\n",
        None,
    )
    .expect("nothing to check against");
    assert_eq!(s.entries[0].machine, "Anything");
}

#[test]
fn a_missing_file_is_named() {
    let e = harel_schedule::load(std::path::Path::new("/nonexistent/s.yaml"), None).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("schedules file /nonexistent/s.yaml: cannot read it"),
        "{e}"
    );
}

/// Found by the fuzzer: JSON with a second document after the first was read up to the
/// first one's end, and refused (or taken) for what that one held, with no place named.
#[test]
fn json_with_text_after_the_document_is_refused_where_it_starts() {
    let text = r#"{"a": {"machine": "Report", "cron": "0 3 * * *"}}{"b": 1}"#;
    let err = check("s.json", text).expect_err("trailing text is a broken file");
    let said = err.to_string();
    assert!(
        said.contains("s.json") && said.contains("trailing characters at line 1 column"),
        "{said}"
    );
}

/// Found by the fuzzer: an entry named twice was read as the second alone (serde's maps keep
/// the last value), so the first schedule vanished without a word.
#[test]
fn an_entry_named_twice_is_refused_where_the_second_is_written() {
    for (file, at, text) in [
        (
            "s.yaml",
            "line 4 column 1",
            "a:\n  machine: Report\n  cron: \"0 3 * * *\"\na:\n  machine: Report\n  rate: 15 minutes\n",
        ),
        (
            "s.json",
            "line 2 column",
            "{\"a\": {\"machine\": \"Report\", \"cron\": \"0 3 * * *\"},\n \"a\": {\"machine\": \"Report\", \"rate\": \"15 minutes\"}}",
        ),
    ] {
        let err = check(file, text).expect_err("a repeated entry is a broken file");
        let said = err.to_string();
        assert!(
            said.contains(file) && said.contains("duplicate key \"a\"") && said.contains(at),
            "{said}"
        );
    }
}
