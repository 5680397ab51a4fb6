//! Rendering against harel's: every machine of the corpora renders to the same PlantUML
//! and Mermaid text as harel's `viz` modules; where harel cannot render (an assertion),
//! neither do we.

use std::ffi::OsStr;

use serde_json::Value;

mod common;
use common::{for_each_machine, harel_on_snippets, run_harel_script, KNOWN_DEVIATIONS};

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn diagrams_match_harels() {
    let dirs = [
        "tests/corpus",
        "tests/validate",
        "tests/fragments",
        "../../examples",
    ];
    let mut rendered = 0;
    for_each_machine(&dirs, |file, name, defn| {
        let out = run_harel_script("render_dump.py", &[file.as_os_str(), OsStr::new(name)]);
        let theirs: Value = serde_json::from_str(&out).expect("harel's JSON");
        for (key, ours) in [
            ("plantuml", harel_lang::render::plantuml::render(&defn)),
            ("mermaid", harel_lang::render::mermaid::render(&defn)),
        ] {
            let what = format!("{key} of {name} in {}", file.display());
            match (&theirs[key], ours) {
                (Value::String(t), Ok(o)) => {
                    assert_eq!(&o, t, "{what}");
                    rendered += 1;
                }
                (Value::Null, Err(_)) => {}
                (t, o) => panic!("{what}: harel gave {t}, we gave {o:?}"),
            }
        }
    });
    assert!(rendered >= 20, "only {rendered} diagrams compared");
}

/// Snippet-level: every snippet harel loads (`tests/snippets.txt`, or `HAREL_SNIPPETS`,
/// e.g. from `support/random_machines.py`) draws the same diagrams.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn snippets_render_as_harel_does() {
    let mut compared = 0;
    for (i, (line, theirs)) in harel_on_snippets("render_snippets.py").iter().enumerate() {
        let Value::Object(machines) = theirs else {
            continue;
        };
        if KNOWN_DEVIATIONS.contains(&line.as_str()) {
            continue;
        }
        let source = line.replace('⏎', "\n");
        for (name, diagrams) in machines {
            let defn = harel_lang::load_str(&source, Some(name), "snippet.stm")
                .unwrap_or_else(|e| panic!("snippet {}: harel loads it, we fail: {e}", i + 1));
            for (key, ours) in [
                ("plantuml", harel_lang::render::plantuml::render(&defn)),
                ("mermaid", harel_lang::render::mermaid::render(&defn)),
            ] {
                match (&diagrams[key], ours) {
                    (Value::String(t), Ok(o)) => {
                        assert_eq!(&o, t, "{key} of snippet {}: {line}", i + 1);
                        compared += 1;
                    }
                    (Value::Null, Err(_)) => {}
                    (t, o) => panic!("{key} of snippet {}: harel gave {t}, we gave {o:?}", i + 1),
                }
            }
        }
    }
    assert!(compared > 0);
}
