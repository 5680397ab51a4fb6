//! The parser and loader against harel itself: harel's `parse` (and its loader's resolved
//! config) of each corpus file, dumped by `support/dump_program.py`, must equal ours, key
//! order included.
//!
//! Needs harel's Python: `HAREL_PYTHON`, else `/work/main/.venv/bin/python`-style
//! `.venv/bin/python` at the workspace root (created by `scripts/python-env.sh`).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

mod common;
use common::{harel_on_snippets, json_lines, run_harel_script, stm_files_in, KNOWN_DEVIATIONS};

fn harel_dump(file: &Path, machine: Option<&str>) -> Vec<Value> {
    let mut args = vec![file.as_os_str()];
    args.extend(machine.map(std::ffi::OsStr::new));
    json_lines(&run_harel_script("dump_program.py", &args))
}

/// Equal JSON texts, or a panic showing the first line that differs.
fn assert_same(ours: &Value, theirs: &Value, what: &str) {
    let a = serde_json::to_string_pretty(ours).expect("json");
    let b = serde_json::to_string_pretty(theirs).expect("json");
    if a == b {
        return;
    }
    let (i, (x, y)) = a
        .lines()
        .zip(b.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .unwrap_or((0, ("<length>", "<length>")));
    let context: Vec<&str> = a.lines().skip(i.saturating_sub(12)).take(13).collect();
    panic!(
        "{what}: line {i} differs\n ours:  {x}\n harel: {y}\ncontext (ours):\n{}",
        context.join("\n")
    );
}

fn objects<V: Clone + Into<Value>>(m: &indexmap::IndexMap<String, V>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect::<Map<_, _>>(),
    )
}

fn corpus() -> Vec<PathBuf> {
    // fragments and imports: their `lib/` files are imported, not loaded on their own
    stm_files_in(&["tests/corpus", "tests/fragments", "../../examples"])
}

fn program_json(prog: &harel_lang::Program) -> Value {
    let objs = |m: &indexmap::IndexMap<String, Map<String, Value>>| {
        objects(
            &m.iter()
                .map(|(k, v)| (k.clone(), Value::Object(v.clone())))
                .collect(),
        )
    };
    json!({
        "bindings": objects(&prog.bindings),
        "guards": objs(&prog.guards),
        "events": objs(&prog.events),
        "machines": objs(&prog.machines),
        "fragments": objs(&prog.fragments),
    })
}

/// `tests/support/mutate_snippets.py` writes mutated variants of the corpus for a fuzz run
/// through the same comparison (`HAREL_SNIPPETS=FILE`); the only divergences it has found
/// are of the keyword-glue kind above (`... or thogonal` read from `orthogonal`).
///
/// Ninety-odd one-line snippets (`tests/snippets.txt`, `⏎` for a newline) at the edges of
/// the grammar: harel accepts exactly the ones we accept, and parses them the same.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn snippets_are_accepted_and_parsed_as_harel_does() {
    // HAREL_SNIPPETS points the comparison at another snippet file (e.g. mutated ones)
    let mut failures = Vec::new();
    for (i, (line, theirs)) in harel_on_snippets("accept_dump.py").iter().enumerate() {
        let line = line.as_str();
        if KNOWN_DEVIATIONS.contains(&line) {
            assert!(theirs.is_object(), "harel now refuses {line}");
            assert!(
                harel_lang::parse(line, "snippet.stm").is_err(),
                "we now accept {line}"
            );
            continue;
        }
        let source = line.replace('⏎', "\n");
        let ours = harel_lang::parse(&source, "snippet.stm");
        let agree = match (&ours, theirs) {
            (Ok(prog), Value::Object(_)) => &program_json(prog) == theirs,
            (Err(_), Value::Null | Value::String(_)) => true,
            _ => false,
        };
        if !agree {
            let ours = match ours {
                Ok(p) => program_json(&p).to_string(),
                Err(e) => e.to_string(),
            };
            failures.push(format!(
                "snippet {}: {line}\n  ours:  {ours}\n  harel: {theirs}",
                i + 1
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn programs_match_harels_parse() {
    let files = corpus();
    assert!(files.len() >= 3);
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let prog = harel_lang::parse(&text, &file.display().to_string()).expect("parses");
        let ours = program_json(&prog);
        let theirs = harel_dump(&file, None).remove(0);
        assert_same(&ours, &theirs, &format!("parse of {}", file.display()));
        for name in prog.machines.keys() {
            let loaded =
                harel_lang::load_file_with(&file, Some(name), &harel_lang::LoadOptions::default())
                    .unwrap_or_else(|e| panic!("{e}"));
            let theirs = harel_dump(&file, Some(name)).remove(1);
            assert_same(
                &loaded.config,
                &theirs,
                &format!("resolved config of {name} in {}", file.display()),
            );
        }
    }
}
