//! Rendering against harel's: every machine of the corpora renders to the same PlantUML
//! and Mermaid text as harel's `viz` modules; where harel cannot render (an assertion),
//! neither do we.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{manifest_dir, python, stm_files, KNOWN_DEVIATIONS};

#[test]
fn diagrams_match_harels() {
    let mut files = stm_files(&manifest_dir().join("tests/corpus"));
    files.extend(stm_files(&manifest_dir().join("tests/validate")));
    files.extend(stm_files(&manifest_dir().join("tests/fragments")));
    files.extend(stm_files(&manifest_dir().join("../../examples")));
    let mut rendered = 0;
    for file in files {
        let program = harel_lang::parse_file(&file).unwrap_or_else(|e| panic!("{e}"));
        for name in program.machines.keys() {
            let defn = harel_lang::loader::load_file_with(&file, Some(name), &Default::default())
                .unwrap_or_else(|e| panic!("{e}"))
                .definition;
            let out = Command::new(python())
                .arg(manifest_dir().join("tests/support/render_dump.py"))
                .arg(&file)
                .arg(name)
                .output()
                .expect("run harel's python");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let theirs: Value = serde_json::from_slice(&out.stdout).expect("harel's JSON");
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
        }
    }
    assert!(rendered >= 20, "only {rendered} diagrams compared");
}

/// Snippet-level: every snippet harel loads (`tests/snippets.txt`, or `HAREL_SNIPPETS`,
/// e.g. from `support/random_machines.py`) draws the same diagrams.
#[test]
fn snippets_render_as_harel_does() {
    let snippets = std::env::var_os("HAREL_SNIPPETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("tests/snippets.txt"));
    let out = Command::new(python())
        .arg(manifest_dir().join("tests/support/render_snippets.py"))
        .arg(&snippets)
        .output()
        .expect("run harel's python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("harel's JSON"))
        .collect();
    let text = std::fs::read_to_string(&snippets).expect("snippets");
    let mut compared = 0;
    for (i, (line, theirs)) in text.lines().zip(&theirs).enumerate() {
        let Value::Object(machines) = theirs else {
            continue;
        };
        if KNOWN_DEVIATIONS.contains(&line) {
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
