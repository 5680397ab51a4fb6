//! `harel lsp` spoken to over stdio, as an editor does: the built binary, JSON-RPC with
//! Content-Length framing; diagnostics, hover, definition across an import, completion
//! and the outline.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
}

/// Messages from the server, one JSON value each, read on a thread so a server that
/// hangs fails the test (`recv_timeout`) instead of blocking it.
fn read_messages(stdout: impl Read + Send + 'static) -> Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut length = None;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 {
                    return;
                }
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                if let Some(n) = header.strip_prefix("Content-Length: ") {
                    length = n.parse::<usize>().ok();
                }
            }
            let mut body = vec![0; length.expect("a Content-Length header")];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            let value = serde_json::from_slice(&body).expect("JSON from the server");
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    rx
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_harel"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start harel lsp");
        let stdin = child.stdin.take().expect("stdin");
        let incoming = read_messages(child.stdout.take().expect("stdout"));
        let mut client = Client {
            child,
            stdin,
            incoming,
            next_id: 0,
        };
        let caps = client.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": {}}),
        );
        let caps = &caps["capabilities"];
        assert_eq!(caps["hoverProvider"], json!(true), "{caps}");
        assert_eq!(caps["definitionProvider"], json!(true), "{caps}");
        assert_eq!(caps["documentSymbolProvider"], json!(true), "{caps}");
        assert!(caps["completionProvider"].is_object(), "{caps}");
        client.notify("initialized", json!({}));
        client
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn next(&self) -> Value {
        self.incoming
            .recv_timeout(Duration::from_secs(30))
            .expect("the server answers within 30s")
    }

    /// The result of a request (notifications arriving first are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self.next();
            if msg["id"] == json!(id) {
                assert!(msg.get("error").is_none(), "{method} failed: {msg}");
                return msg["result"].clone();
            }
        }
    }

    /// The next diagnostics published for `uri`.
    fn diagnostics(&self, uri: &str) -> Vec<Value> {
        loop {
            let msg = self.next();
            if msg["method"] == "textDocument/publishDiagnostics" && msg["params"]["uri"] == uri {
                return msg["params"]["diagnostics"]
                    .as_array()
                    .expect("a list")
                    .clone();
            }
        }
    }

    fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "stm", "version": 1, "text": text}}),
        );
        self.diagnostics(uri)
    }

    fn at(&mut self, method: &str, uri: &str, (line, character): (usize, usize)) -> Value {
        self.request(
            method,
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        )
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let status = self.child.wait().expect("the server exits");
        assert!(status.success(), "{status}");
    }
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-lsp-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(dir.join("lib")).expect("scratch dir");
    std::fs::canonicalize(dir).expect("canonical")
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// 0-based (line, column) of the first `needle` in `text`, plus `offset` columns.
fn cursor(text: &str, needle: &str, offset: usize) -> (usize, usize) {
    text.lines()
        .enumerate()
        .find_map(|(i, l)| l.find(needle).map(|c| (i, c + offset)))
        .unwrap_or_else(|| panic!("`{needle}` not in the text"))
}

const LIB: &str = "\
event Approve { by: string }
bind { stamp = pkg.audit.stamp }

fragment Gate(pass: state) {
  initial Wait
  state Wait { on enter stamp }
  from Wait to pass on Approve
}
";

const MAIN: &str = "\
import \"lib/shared.stm\"

event Submit {}

machine Order {
  initial Draft
  state Draft {}
  final Done ok
  from Draft to Review on Submit
  use Gate(pass = Done) as Review
}
";

#[test]
fn a_broken_file_gets_the_parsers_located_diagnostic_and_a_fix_clears_it() {
    let dir = scratch();
    let path = dir.join("broken.stm");
    let broken = "machine M {\n  initial A\n  final A ok { on enter }\n}\n";
    std::fs::write(&path, broken).expect("write");
    let err = harel_lang::parse(broken, "broken.stm").expect_err("does not parse");
    let (line, col) = err.pos.expect("located");

    let mut client = Client::start();
    let doc = uri(&path);
    let diags = client.open(&doc, broken);
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(
        d["range"]["start"],
        json!({"line": line - 1, "character": col - 1})
    );
    assert_eq!(d["severity"], json!(1));
    assert_eq!(d["source"], json!("harel"));
    assert!(
        d["message"].as_str().unwrap().starts_with(&err.message),
        "{d}"
    );

    // an edit that fixes it publishes an empty list
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": doc, "version": 2},
               "contentChanges": [{"text": "machine M {\n  initial A\n  final A ok\n}\n"}]}),
    );
    assert_eq!(client.diagnostics(&doc), Vec::<Value>::new());
    client.stop();
}

#[test]
fn validation_issues_carry_validates_code_at_their_state() {
    let dir = scratch();
    let path = dir.join("v.stm");
    let text = "event Go {}\nmachine V {\n  initial A\n  state A {}\n  state Island {}\n  from A to A on Go\n}\n";
    std::fs::write(&path, text).expect("write");
    let defn = harel_lang::load_file(&path, None).expect("loads");
    let issues = harel_lang::validate(&defn);
    assert!(!issues.is_empty());

    let mut client = Client::start();
    let diags = client.open(&uri(&path), text);
    assert_eq!(diags.len(), issues.len(), "{diags:?}");
    for (d, issue) in diags.iter().zip(&issues) {
        assert_eq!(d["code"], json!(issue.code));
        let want = format!("{}: {} (at {})", issue.code, issue.message, issue.path);
        assert_eq!(d["message"], json!(want));
    }
    let island = diags
        .iter()
        .find(|d| d["message"].as_str().unwrap().ends_with("(at Island)"))
        .expect("an issue on Island");
    // at the declaration, as harel's server puts it
    let (line, col) = cursor(text, "state Island", 0);
    assert_eq!(
        island["range"]["start"],
        json!({"line": line, "character": col})
    );
    client.stop();
}

#[test]
fn hover_definition_and_completion_across_an_import() {
    let dir = scratch();
    let lib = dir.join("lib/shared.stm");
    std::fs::write(&lib, LIB).expect("write lib");
    let main = dir.join("main.stm");
    std::fs::write(&main, MAIN).expect("write main");
    let (doc, lib_uri) = (uri(&main), uri(&lib));

    let mut client = Client::start();
    assert_eq!(client.open(&doc, MAIN), Vec::<Value>::new());

    // hover on a state reference, an event, a fragment
    let hover = client.at("textDocument/hover", &doc, cursor(MAIN, "Draft to", 1));
    let text = hover["contents"]["value"].as_str().expect("markdown");
    assert!(text.starts_with("**state Draft** (State)"), "{hover}");
    assert_eq!(hover["range"]["start"], json!({"line": 8, "character": 7}));
    let hover = client.at("textDocument/hover", &doc, cursor(MAIN, "on Submit", 4));
    assert_eq!(hover["contents"]["value"], json!("**event Submit**"));

    // definition of a fragment declared in the imported file
    let def = client.at("textDocument/definition", &doc, cursor(MAIN, "Gate", 1));
    assert_eq!(def["uri"], json!(lib_uri), "{def}");
    assert_eq!(
        def["range"]["start"],
        json!({"line": 3, "character": 9}),
        "{def}"
    );
    // ... of a local event
    let def = client.at(
        "textDocument/definition",
        &doc,
        cursor(MAIN, "on Submit", 4),
    );
    assert_eq!(def["uri"], json!(doc));
    assert_eq!(def["range"]["start"], json!({"line": 2, "character": 6}));
    // ... of a state a `use` splices in: the fragment it comes from
    let def = client.at(
        "textDocument/definition",
        &doc,
        cursor(MAIN, "Review on", 1),
    );
    assert_eq!(def["uri"], json!(lib_uri), "{def}");
    assert_eq!(def["range"]["start"]["line"], json!(3), "{def}");
    // ... of the import's path: the file itself
    let def = client.at(
        "textDocument/definition",
        &doc,
        cursor(MAIN, "lib/shared", 2),
    );
    assert_eq!(def["uri"], json!(lib_uri));

    // completion after `on `: the events, the imported one included
    let edited = MAIN.replace("  use Gate", "  from Done to Draft on \n  use Gate");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": doc, "version": 2}, "contentChanges": [{"text": edited}]}),
    );
    client.diagnostics(&doc);
    let (line, col) = cursor(&edited, "Draft on ", 9);
    let list = client.at("textDocument/completion", &doc, (line, col));
    let labels: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["label"].as_str().expect("label"))
        .collect();
    assert_eq!(labels, ["Approve", "Submit"], "{list}");

    // and after `on enter `: the actions, bound in the imported file
    let edited = MAIN.replace("  final Done ok", "  final Done ok { on enter  }");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": doc, "version": 3}, "contentChanges": [{"text": edited}]}),
    );
    client.diagnostics(&doc);
    let list = client.at(
        "textDocument/completion",
        &doc,
        cursor(&edited, "enter  }", 6),
    );
    let items = list["items"].as_array().expect("items");
    assert_eq!(items[0]["label"], json!("stamp"), "{list}");
    assert_eq!(items[0]["detail"], json!("action"));
    assert!(
        items.iter().all(|i| i["kind"] == json!(3)),
        "only functions: {list}"
    );
    client.stop();
}

#[test]
fn the_outline_lists_declarations_with_the_machines_states_nested() {
    let dir = scratch();
    std::fs::write(dir.join("lib/shared.stm"), LIB).expect("write lib");
    let main = dir.join("main.stm");
    std::fs::write(&main, MAIN).expect("write main");
    let doc = uri(&main);
    let mut client = Client::start();
    client.open(&doc, MAIN);
    let symbols = client.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": doc}}),
    );
    let names: Vec<&str> = symbols
        .as_array()
        .expect("symbols")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["Submit", "Order"], "{symbols}");
    let states: Vec<&str> = symbols[1]["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    // a state spliced in by a `use` is declared in the fragment's file, not here
    assert_eq!(states, ["Draft", "Done"], "{symbols}");
    client.stop();
}
