//! Error-message snapshots: each broken file's whole rendered error.

fn rendered(text: &str, name: Option<&str>) -> String {
    match harel_lang::load_str(text, name, "broken.stm") {
        Ok(d) => panic!("{} loaded, expected an error", d.id),
        Err(e) => e.to_string(),
    }
}

#[test]
fn missing_brace() {
    let text = "machine M {\n  initial A\n  state A {}\n";
    let expected = "broken.stm:3:13: unexpected end of input (a `{` block is likely missing its closing `}`)\n      state A {}\n                ^\nexpected a state, a transition or `}`";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn unknown_keyword() {
    let text = "machine M {\n  initial A\n  stat A {}\n}\n";
    let expected = "broken.stm:3:3: unexpected `stat`\n      stat A {}\n      ^\nexpected a state, a transition or `}`";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn bad_arrow() {
    let text = "machine M {\n  initial A\n  state A {}\n  state B {}\n  from A -> B on Go\n}\n";
    let expected = "broken.stm:5:10: unexpected `->`\n      from A -> B on Go\n             ^\nexpected `to`, `choose`, `select` or `join`\nhint: transitions read `from A to B` — there is no `->` arrow";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn fat_arrow() {
    let text = "machine M {\n  initial A\n  state A {}\n  state B {}\n  from A select pick { \"x\" => B }\n}\n";
    let expected = "broken.stm:5:28: unexpected `=>`\n      from A select pick { \"x\" => B }\n                               ^\nexpected `to`\nhint: use `to` for a target and `select`/`{ ... }` for a selector — there is no `=>`";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn unterminated_string() {
    let text = "machine M {\n  initial A\n  state \"A {}\n}\n";
    let expected = "broken.stm:3:9: unterminated string (a string ends with `\"` on the same line)\n      state \"A {}\n            ^\nexpected a name or a string";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn incomplete_comparison() {
    let text = "machine M {\n  initial A\n  state A {}\n  from A to A on Go where x == \n}\n";
    let expected = "broken.stm:5:1: unexpected `}`\n    }\n    ^\nexpected a value (a string, a number, `true`, `false` or a list) or a dotted path (`event.x`, `pkg.fn`)";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn unknown_target() {
    let text = "machine M {\n  initial A\n  state A {}\n  from A to Nowhere on Go\n}\n";
    let expected = "broken.stm:4:3: cannot resolve transition target 'Nowhere' from scope ''\n      from A to Nowhere on Go\n      ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn duplicate_state() {
    let text =
        "machine M {\n  initial A\n  state A {}\n  state B {}\n  state A { on enter x.y }\n}\n";
    let expected = "broken.stm:5:3: duplicate state 'A': a state name must be unique among its siblings\n      state A { on enter x.y }\n      ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn unbound_handler() {
    let text = "machine M {\n  initial A\n  state A { on enter send }\n}\n";
    let expected = "broken.stm:1:1: unbound action handlers: send (add a `bind` or pass actions=)\n    machine M {\n    ^\nhint: declare it with `bind { send = pkg.mod.fn }`";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn unbound_guard() {
    let text = "machine M {\n  initial A\n  state A {}\n  from A to A on Go where ok\n}\n";
    let expected = "broken.stm:1:1: unbound guards: ok (add a `guard` decl, a use arg, or pass guards=)\n    machine M {\n    ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn ttl_on_a_state() {
    let text = "machine M {\n  initial A\n  state A { ttl 30 }\n}\n";
    let expected = "broken.stm:3:3: `ttl` is only allowed at the machine level, not on state A\n      state A { ttl 30 }\n      ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn default_and_optional() {
    let text = "machine M {\n  context { n: int? = 3 }\n  initial A\n  state A {}\n}\n";
    let expected = "broken.stm:2:13: context field 'n' has a default, so it can't also be optional (`?`): an execution always starts with it\n      context { n: int? = 3 }\n                ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn bad_namespace() {
    let text = "machine M {\n  initial A\n  state A {}\n  from A to A on Go where ctx.n == 1\n}\n";
    let expected = "broken.stm:4:27: unknown namespace 'ctx' in 'ctx.n': use `event.<field>` or `context.<field>`\n      from A to A on Go where ctx.n == 1\n                              ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn nested_ref() {
    let text =
        "machine M {\n  initial A\n  state A {}\n  from A to A on Go set context.a.b = 1\n}\n";
    let expected = "broken.stm:4:25: 'context.a.b': a reference names one field of `context`, not a nested path\n      from A to A on Go set context.a.b = 1\n                            ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn set_on_the_event() {
    let text = "machine M {\n  initial A\n  state A {}\n  from A to A on Go set event.x = 1\n}\n";
    let expected = "broken.stm:4:25: `set` writes the execution context: 'event.x' must be `context.<field>`\n      from A to A on Go set event.x = 1\n                            ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn unknown_machine_name() {
    let text = "machine M { initial A  state A {} }\nmachine N { initial A  state A {} }\n";
    let expected = "broken.stm: no machine named 'Q'";
    assert_eq!(rendered(text, Some("Q")), expected);
}

#[test]
fn several_machines_no_name() {
    let text = "machine M { initial A  state A {} }\nmachine N { initial A  state A {} }\n";
    let expected = "broken.stm: multiple machines (M, N); pass name=";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn no_machine() {
    let text = "event E {}\n";
    let expected = "broken.stm: no machine declared";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn machine_only_keyword_in_an_inline_invoke() {
    let text = "machine M {\n  initial A\n  state A { invoke { ttl 5 initial X state X {} } }\n}\n";
    let expected = "broken.stm:3:20: `ttl` is only allowed at the machine level, not on an inline `invoke` target, which always runs as a child\n      state A { invoke { ttl 5 initial X state X {} } }\n                       ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn empty_parentheses() {
    let text = "machine M {\n  initial A\n  state A { on enter pkg.f() }\n}\n";
    let expected = "broken.stm:3:22: `pkg.f()`: an action without inputs is written without parentheses (harel 0.9.0 cannot load `()`)\n      state A { on enter pkg.f() }\n                         ^";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn columns_count_characters_not_bytes() {
    let text = "machine M {\n  initial \"Été\"\n  state \"Été\" {} from A -> B\n}\n";
    let expected = "broken.stm:3:25: unexpected `->`\n      state \"Été\" {} from A -> B\n                            ^\nexpected `to`, `choose`, `select` or `join`\nhint: transitions read `from A to B` — there is no `->` arrow";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn use_argument_without_a_value() {
    let text = "fragment F(x: value) {\n  initial A\n  state A {}\n}\nmachine M {\n  initial U\n  use F(x = ) as U\n}\n";
    let expected = "broken.stm:7:13: unexpected `)`\n      use F(x = ) as U\n                ^\nexpected a value (a string, a number, `true`/`false` or a list), a parenthesised guard (`(context.n > 1)`), a dotted path (`event.x`, `pkg.fn`) or a name";
    assert_eq!(rendered(text, None), expected);
}

#[test]
fn end_of_input_where_no_brace_is_open() {
    let text = "machine M";
    let expected =
        "broken.stm:1:10: unexpected end of input\n    machine M\n             ^\nexpected `{`";
    assert_eq!(rendered(text, None), expected);
}
