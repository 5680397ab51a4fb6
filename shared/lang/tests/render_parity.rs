//! Rendering against harel's: every machine of the corpora renders to the same PlantUML
//! and Mermaid text as harel's `viz` modules; where harel cannot render (an assertion),
//! neither do we.

use std::process::Command;

use serde_json::Value;

mod common;
use common::{manifest_dir, python, stm_files};

#[test]
fn diagrams_match_harels() {
    let mut files = stm_files(&manifest_dir().join("tests/corpus"));
    files.extend(stm_files(&manifest_dir().join("tests/validate")));
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
