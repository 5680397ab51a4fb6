//! The loader's seams: bindings (file and programmatic), named guards, unbound handlers
//! kept under `allow_unbound_actions`, machine selection.

use harel_lang::{load_str, load_str_with, ErrorKind, LoadOptions};
use serde_json::json;

const TEXT: &str = r#"
event Go { n: int }
bind { send = pkg.mail.send }
guard big = n > 10
guard huge = big and n > 100
machine M {
  initial A
  state A { on enter send(to: "ops")  on exit audit }
  final B ok
  from A to B on Go where huge or n == 1
  from A select pick { "x" to B }
}
"#;

#[test]
fn unbound_handlers_fail_by_default_and_are_kept_when_allowed() {
    let err = load_str(TEXT, None, "m.stm").expect_err("audit and pick are unbound");
    assert_eq!(err.kind, ErrorKind::Semantic);
    assert_eq!(
        err.message,
        "unbound action handlers: audit, pick (add a `bind` or pass actions=)"
    );
    assert_eq!(err.pos, Some((6, 1)));

    let options = LoadOptions {
        allow_unbound_actions: true,
        ..Default::default()
    };
    let loaded = load_str_with(TEXT, None, "m.stm", &options).expect("loads");
    assert_eq!(loaded.unbound_actions, vec!["audit", "pick"]);
    assert_eq!(
        loaded.bindings.get("send").map(String::as_str),
        Some("pkg.mail.send")
    );
    let a = loaded.definition.at("A");
    let on_enter = a.on_enter.as_ref().expect("on enter");
    assert_eq!(on_enter.function, "pkg.mail.send");
    assert_eq!(json!(on_enter.inputs), json!({"to": "ops"}));
    assert_eq!(a.on_exit.as_ref().expect("on exit").function, "audit");
    let root = loaded.definition.node(loaded.definition.root);
    let sel = root.transitions[1].selector.as_ref().expect("selector");
    assert_eq!(sel.action.function, "pick");
}

#[test]
fn programmatic_bindings_win_over_the_file() {
    let mut options = LoadOptions::default();
    options.bindings.insert("send".into(), "other.send".into());
    options.bindings.insert("audit".into(), "pkg.audit".into());
    options.bindings.insert("pick".into(), "pkg.pick".into());
    let loaded = load_str_with(TEXT, Some("M"), "m.stm", &options).expect("loads");
    assert!(loaded.unbound_actions.is_empty());
    let a = loaded.definition.at("A");
    assert_eq!(
        a.on_enter.as_ref().expect("on enter").function,
        "other.send"
    );
    // named guards are substituted, composition included
    assert_eq!(
        loaded.config["transitions"][0]["on_event"],
        json!({"type": "Go", "any": [{"all": [{"n__gt": 10}, {"n__gt": 100}]}, {"n__eq": 1}]})
    );
}

#[test]
fn guards_can_be_given_programmatically_and_unknown_ones_fail() {
    let text = "event Go {}\nmachine M { initial A  state A {}  final B ok  from A to B on Go where vip }\n";
    let err = load_str(text, None, "g.stm").expect_err("vip is unbound");
    assert_eq!(
        err.to_string(),
        "g.stm:2:1: unbound guards: vip (add a `guard` decl, a use arg, or pass guards=)\n    machine M { initial A  state A {}  final B ok  from A to B on Go where vip }\n    ^"
    );
    let mut options = LoadOptions::default();
    let pred = json!({"tier__eq": "gold"});
    options
        .guards
        .insert("vip".into(), pred.as_object().expect("object").clone());
    let loaded = load_str_with(text, None, "g.stm", &options).expect("loads");
    assert_eq!(
        loaded.config["transitions"][0]["on_event"],
        json!({"type": "Go", "tier__eq": "gold"})
    );
}

#[test]
fn a_guard_that_refers_to_itself_is_refused() {
    let text = "guard a = b\nguard b = a and x == 1\nevent Go { x: int }\nmachine M { initial A  state A {}  final B ok  from A to B on Go where a }\n";
    let err = load_str(text, None, "c.stm").expect_err("a cycle");
    assert_eq!(err.message, "guard 'a' refers to itself");
}

#[test]
fn positions_index_every_state() {
    let options = LoadOptions {
        allow_unbound_actions: true,
        ..Default::default()
    };
    let loaded = load_str_with(TEXT, None, "m.stm", &options).expect("loads");
    assert_eq!(loaded.positions.get(""), Some(&(6, 1)));
    assert_eq!(loaded.positions.get("A"), Some(&(8, 3)));
    assert_eq!(loaded.positions.get("B"), Some(&(9, 3)));
    assert_eq!(loaded.name, "M");
    assert_eq!(loaded.definition.id, "M");
    let t = &loaded.definition.node(loaded.definition.root).transitions[0];
    assert_eq!(t.pos, Some((10, 3)));
    let issue = harel_lang::Issue {
        code: "unreachable",
        severity: harel_lang::Severity::Warning,
        path: "B".into(),
        message: String::new(),
    };
    assert_eq!(loaded.issue_pos(&issue), Some((9, 3)));
}
