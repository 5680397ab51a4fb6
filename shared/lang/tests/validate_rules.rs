//! Validation rules without Python: each `tests/validate/FILE.MACHINE.expected` holds
//! harel's `validate` output for that machine (recorded from harel 0.9.0; the parity test
//! re-checks it live), and our issues must print the same.

mod common;
use common::manifest_dir;

#[test]
fn each_rule_family_reports_harels_issues() {
    let dir = manifest_dir().join("tests/validate");
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("validate dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "expected"))
        .collect();
    entries.sort();
    for expected_path in entries {
        let stem = expected_path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let (file, machine) = stem.split_once('.').expect("FILE.MACHINE.expected");
        let stm = dir.join(format!("{file}.stm"));
        let defn = harel_lang::load_file(&stm, Some(machine)).unwrap_or_else(|e| panic!("{e}"));
        let ours: Vec<String> = harel_lang::validate(&defn)
            .iter()
            .map(ToString::to_string)
            .collect();
        let expected: Vec<String> = std::fs::read_to_string(&expected_path)
            .expect("expected file")
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(ours, expected, "{file}.stm machine {machine}");
        checked += 1;
    }
    assert_eq!(checked, 8);
}

#[test]
fn validate_or_raise_lists_the_errors_only() {
    let text = "event Go {}\nmachine M { ttl 0  initial A  state A { timeout 5 }  final B ok  from A to B on Go }\n";
    let defn = harel_lang::load_str(text, None, "t.stm").expect("loads");
    let err = harel_lang::validate_or_raise(&defn).expect_err("ttl 0 is an error");
    assert_eq!(
        err.to_string(),
        "invalid Definition:\n  [error] ttl_not_positive at <root>: `ttl` must be positive, got 0"
    );
    assert_eq!(err.issues.len(), 2, "the warning is kept in the list");

    let ok = "event Go {}\nmachine M { initial A  state A { timeout 5 }  final B ok  from A to B on Go }\n";
    let defn = harel_lang::load_str(ok, None, "t.stm").expect("loads");
    let issues = harel_lang::validate_or_raise(&defn).expect("warnings only");
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].code, "timeout_unhandled");
}
