//! Static validation against harel's: for every machine of the validation corpus (one
//! file per family of rules), the corpus and the examples, our issues print exactly as
//! harel's `validate` prints them, in the same order.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::{json, Map, Value};

mod common;
use common::{for_each_machine, harel_on_snippets, run_harel_script, KNOWN_DEVIATIONS};

fn harel_issues(file: &Path, machine: &str) -> Vec<String> {
    run_harel_script("validate_dump.py", &[file.as_os_str(), OsStr::new(machine)])
        .lines()
        .map(str::to_string)
        .collect()
}

/// harel gathers the fields behind `unknown_event_field` in a Python set, whose order
/// follows string hashing: a run of those issues is compared as a set.
fn set_ordered(mut lines: Vec<String>) -> Vec<String> {
    let mut i = 0;
    while i < lines.len() {
        let run = lines[i..]
            .iter()
            .take_while(|l| l.contains("] unknown_event_field at "))
            .count();
        lines[i..i + run].sort();
        i += run.max(1);
    }
    lines
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn issues_match_harels_validate() {
    let dirs = [
        "tests/validate",
        "tests/corpus",
        "tests/fragments",
        "../../examples",
    ];
    let mut codes = std::collections::BTreeSet::new();
    let mut compared = 0;
    for_each_machine(&dirs, |file, name, defn| {
        let issues = harel_lang::validate(&defn);
        codes.extend(issues.iter().map(|i| i.code));
        let ours: Vec<String> = issues.iter().map(ToString::to_string).collect();
        assert_eq!(
            set_ordered(ours),
            set_ordered(harel_issues(file, name)),
            "{} machine {name}",
            file.display()
        );
        compared += 1;
    });
    assert!(compared >= 10, "only {compared} machines compared");
    // every rule the language can trigger is exercised
    for code in [
        "invoke_on_composite",
        "invoke_automatic_exit",
        "with_without_children",
        "selector_target_unresolved",
        "selector_phantom_branch",
        "selector_non_exhaustive",
        "missing_initial",
        "initial_unresolved",
        "timeout_invalid",
        "timeout_malformed",
        "timeout_unhandled",
        "outcome_on_composite",
        "outcome_on_nonterminal",
        "nondeterministic_automatic",
        "unreachable",
        "unknown_event",
        "unknown_event_field",
        "op_type_mismatch",
        "unknown_context_field",
        "compare_type_mismatch",
        "event_ref_without_event",
        "assign_type_mismatch",
        "default_type_mismatch",
        "cancel_target_not_terminal",
        "expired_target_not_terminal",
        "choose_can_hang",
        "ttl_not_positive",
        "expired_without_ttl",
        "terminal_missing_outcome",
    ] {
        assert!(codes.contains(code), "no corpus file triggers {code}");
    }
}

/// Snippet-level: every snippet harel parses (`tests/snippets.txt`, or `HAREL_SNIPPETS`,
/// e.g. mutated ones from `support/mutate_snippets.py`) loads where harel's loads, fails
/// where harel's fails, and validates to the same issues.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn snippets_validate_as_harel_does() {
    let mut failures = Vec::new();
    for (i, (line, theirs)) in harel_on_snippets("validate_snippets.py").iter().enumerate() {
        let Value::Object(theirs) = theirs else {
            continue; // harel refuses it; the parse parity test covers that
        };
        if KNOWN_DEVIATIONS.contains(&line.as_str()) {
            continue;
        }
        let source = line.replace('⏎', "\n");
        let mut ours = Map::new();
        for name in theirs.keys() {
            let outcome = match harel_lang::load_str(&source, Some(name), "snippet.stm") {
                Ok(defn) => json!(set_ordered(
                    harel_lang::validate(&defn)
                        .iter()
                        .map(ToString::to_string)
                        .collect()
                )),
                Err(e) => json!({"error": e.message}),
            };
            ours.insert(name.clone(), outcome);
        }
        // a load failure is compared as a failure; its wording is the builder's own
        for (name, t) in theirs {
            let detail = match (t, &ours[name]) {
                (Value::Object(_), Value::Object(_)) => None,
                (Value::Array(t), Value::Array(o)) => {
                    let t: Vec<String> = t
                        .iter()
                        .map(|v| v.as_str().unwrap_or("").to_string())
                        .collect();
                    let o: Vec<String> = o
                        .iter()
                        .map(|v| v.as_str().unwrap_or("").to_string())
                        .collect();
                    let t = set_ordered(t);
                    let first = t.iter().zip(&o).position(|(a, b)| a != b);
                    match first {
                        None if t.len() == o.len() => None,
                        None => Some(format!("lengths {} (harel) vs {} (ours)", t.len(), o.len())),
                        Some(k) => Some(format!("issue {k}\n  ours:  {}\n  harel: {}", o[k], t[k])),
                    }
                }
                (t, o) => Some(format!("\n  ours:  {o}\n  harel: {t}")),
            };
            if let Some(detail) = detail {
                failures.push(format!(
                    "snippet {} machine {name}: {line}\n{detail}",
                    i + 1
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
