//! `.stm` files broken in every way the grammar allows (one per rule that can be left
//! incomplete or wrong), beyond `shared/lang/tests/errors.rs`: each is reported as
//! `file:line:col: message`, the offending line, and a caret under that column.

/// (what is broken, the file, the line and column the error must point at)
const BROKEN: &[(&str, &str, usize, usize)] = &[
    ("import without a path", "import\nmachine M { initial A state A {} }\n", 2, 1),
    ("import alias without a name", "import \"x.stm\" as\n", 1, 18),
    ("bind without `=`", "bind { pay billing.pay }\n", 1, 12),
    ("empty bind block", "bind { }\n", 1, 8),
    ("guard without a predicate", "guard big =\nmachine M { initial A state A {} }\n", 2, 9),
    ("event field without a type", "event E { x: }\n", 1, 14),
    ("event field of an unknown type", "event E { x: money }\n", 1, 14),
    ("machine without a name", "machine { initial A state A {} }\n", 1, 9),
    ("machine without its block", "machine M\n", 1, 10),
    ("fragment parameter without a kind", "fragment F(x) { }\n", 1, 13),
    ("fragment parameter of an unknown kind", "fragment F(x: thing) { }\n", 1, 15),
    ("final without a verdict", "machine M {\n  initial A\n  final A\n}\n", 4, 1),
    ("initial without a state", "machine M {\n  initial\n  state A {}\n}\n", 3, 9),
    ("timeout without seconds", "machine M {\n  initial A\n  state A { timeout }\n}\n", 3, 21),
    ("timeout of a fraction", "machine M {\n  initial A\n  state A { timeout 1.5 }\n}\n", 3, 22),
    ("ttl without seconds", "machine M {\n  initial A\n  ttl\n  state A {}\n}\n", 4, 3),
    ("context field without a type", "machine M {\n  context { n = 1 }\n  initial A\n  state A {}\n}\n", 2, 15),
    ("context default that is not a value", "machine M {\n  context { n: int = }\n  initial A\n  state A {}\n}\n", 2, 22),
    ("carry without a name", "machine M {\n  initial A\n  state A { carry }\n}\n", 3, 19),
    ("defer with a trailing comma", "machine M {\n  initial A\n  state A { defer E, }\n}\n", 3, 22),
    ("`no` without `history`", "machine M {\n  initial A\n  state A { no }\n}\n", 3, 16),
    ("on without enter/exit/activity", "machine M {\n  initial A\n  state A { on start go }\n}\n", 3, 16),
    ("on enter without an action", "machine M {\n  initial A\n  state A { on enter }\n}\n", 3, 22),
    ("action input without a value", "machine M {\n  initial A\n  state A { on enter go(x: ) }\n}\n", 3, 28),
    ("action input without a colon", "machine M {\n  initial A\n  state A { on enter go(x 1) }\n}\n", 3, 27),
    ("unclosed action inputs", "machine M {\n  initial A\n  state A { on enter go(x: 1 }\n}\n", 3, 28),
    ("transition without a target", "machine M {\n  initial A\n  state A {}\n  from A to on Go\n}\n", 4, 16),
    ("trigger without an event", "machine M {\n  initial A\n  state A {}\n  from A to A on\n}\n", 5, 1),
    ("event alternatives ending in `|`", "machine M {\n  initial A\n  state A {}\n  from A to A on Go |\n}\n", 5, 1),
    ("where without a predicate", "machine M {\n  initial A\n  state A {}\n  from A to A on Go where\n}\n", 5, 1),
    ("comparison without an operator", "machine M {\n  initial A\n  state A {}\n  from A to A on Go where x 1\n}\n", 4, 29),
    ("dangling `and`", "machine M {\n  initial A\n  state A {}\n  from A to A on Go where x == 1 and\n}\n", 5, 1),
    // harel reads a bare `not` as a guard named `not`: unbound, reported at the machine
    ("`not` without an operand", "machine M {\n  initial A\n  state A {}\n  from A to A on Go where not\n}\n", 1, 1),
    ("unclosed parenthesis", "machine M {\n  initial A\n  state A {}\n  from A to A on Go where (x == 1\n}\n", 5, 1),
    ("unclosed list", "machine M {\n  initial A\n  state A {}\n  from A to A on Go where x in [1, 2\n}\n", 4, 36),
    ("set without an assignment", "machine M {\n  initial A\n  state A {}\n  from A to A on Go set\n}\n", 5, 1),
    ("assignment without `=`", "machine M {\n  initial A\n  state A {}\n  from A to A on Go set context.x 1\n}\n", 4, 35),
    ("assignment with two operators", "machine M {\n  initial A\n  state A {}\n  from A to A on Go set context.x = 1 + 2 + 3\n}\n", 4, 43),
    ("choose without branches", "machine M {\n  initial A\n  state A {}\n  from A choose on Go { }\n}\n", 4, 25),
    ("when without a target", "machine M {\n  initial A\n  state A {}\n  from A choose on Go { when x == 1 }\n}\n", 4, 37),
    ("choose else without `to`", "machine M {\n  initial A\n  state A {}\n  from A choose on Go { when x == 1 to A else A }\n}\n", 4, 47),
    ("select without branches", "machine M {\n  initial A\n  state A {}\n  from A select pick on Go { }\n}\n", 4, 30),
    ("select branch without a value", "machine M {\n  initial A\n  state A {}\n  from A select pick on Go { to A }\n}\n", 4, 30),
    ("returns without values", "machine M {\n  initial A\n  state A {}\n  from A select pick returns { } on Go { \"x\" to A }\n}\n", 4, 32),
    ("join without all or any", "machine M {\n  initial A\n  state A {}\n  from A join to A else to A\n}\n", 4, 15),
    ("join without its else", "machine M {\n  initial A\n  state A {}\n  from A join all to A\n}\n", 5, 1),
    ("use with an argument without a value", "fragment F(x: value) { }\nmachine M {\n  initial A\n  state A { use F(x = ) }\n}\n", 4, 23),
    ("use with an unclosed argument list", "fragment F(x: value) { }\nmachine M {\n  initial A\n  state A { use F(x = 1 }\n}\n", 4, 23),
    ("invoke for without `in`", "machine M {\n  initial A\n  state A { invoke Sub for item items }\n}\n", 3, 33),
    ("a number with two points", "machine M {\n  initial A\n  state A {}\n  from A to A on Go where x == 1.2.3\n}\n", 4, 35),
    ("a stray closing brace at the top", "machine M { initial A state A {} }\n}\n", 2, 1),
    ("text after the last machine", "machine M { initial A state A {} }\nhello\n", 2, 1),
    ("an empty file", "", 1, 1),
    ("only a comment", "# nothing here\n", 1, 15),
];

#[test]
fn every_broken_file_is_located_with_a_caret() {
    let mut failures = Vec::new();
    for (what, text, line, col) in BROKEN {
        let err = match harel_lang::load_str(text, None, "broken.stm") {
            Ok(d) => {
                failures.push(format!(
                    "{what}: loaded machine {}, expected an error",
                    d.id
                ));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let prefix = format!("broken.stm:{line}:{col}: ");
        if !err.starts_with(&prefix) {
            failures.push(format!("{what}: expected {prefix}..., got:\n{err}"));
            continue;
        }
        if text.lines().count() < *line {
            // nothing to show (an empty file): the location alone
            continue;
        }
        let lines: Vec<&str> = err.lines().collect();
        // the offending line, indented by four, then the caret under the column
        let source_line = text.lines().nth(line - 1).unwrap_or("");
        let shown = lines.get(1).copied().unwrap_or("");
        let caret = lines.get(2).copied().unwrap_or("");
        if shown.trim_end() != format!("    {source_line}").trim_end() {
            failures.push(format!("{what}: source line not shown:\n{err}"));
        } else if caret != format!("{}^", " ".repeat(4 + col - 1)) {
            failures.push(format!("{what}: caret not under column {col}:\n{err}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        BROKEN.len(),
        failures.join("\n\n")
    );
}
