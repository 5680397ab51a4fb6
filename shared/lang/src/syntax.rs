//! Syntax errors: a pest failure turned into a located `LangError` that says, in words,
//! what was expected (pest's rule names translated), plus harel's hints for the common
//! slips (`->` arrows, `=>`).

use pest::error::{Error, ErrorVariant, InputLocation};

use crate::error::{ErrorKind, LangError};
use crate::parser::Rule;

/// Keywords that open a state-body item: when all of them are expected, say "a state, a
/// transition" rather than listing fifteen keywords.
const ITEM_STARTS: [Rule; 16] = [
    Rule::kw_initial,
    Rule::kw_on,
    Rule::kw_timeout,
    Rule::kw_ttl,
    Rule::kw_context,
    Rule::kw_outcome,
    Rule::kw_carry,
    Rule::kw_defer,
    Rule::kw_no,
    Rule::kw_cancel_on_failure,
    Rule::kw_invoke,
    Rule::kw_with,
    Rule::kw_use,
    Rule::KIND,
    Rule::kw_final,
    Rule::kw_from,
];

/// Keywords that open a top-level declaration.
const STMT_STARTS: [Rule; 6] = [
    Rule::kw_machine,
    Rule::kw_event,
    Rule::kw_guard,
    Rule::kw_bind,
    Rule::kw_fragment,
    Rule::kw_import,
];

/// The rules that open a literal value.
const VALUE_STARTS: [Rule; 4] = [Rule::STRING, Rule::SIGNED_NUMBER, Rule::BOOL, Rule::list];

fn describe(rule: Rule) -> String {
    let name = format!("{rule:?}");
    if let Some(kw) = name.strip_prefix("kw_") {
        return format!("`{kw}`");
    }
    match rule {
        Rule::lbrace => "`{`".into(),
        Rule::rbrace => "`}`".into(),
        Rule::eq_sign => "`=`".into(),
        Rule::colon => "`:`".into(),
        Rule::OPTIONAL => "`?`".into(),
        Rule::NAME => "a name".into(),
        Rule::STRING => "a string".into(),
        Rule::DOTTED => "a dotted path (`event.x`, `pkg.fn`)".into(),
        Rule::SIGNED_NUMBER => "a number".into(),
        Rule::INT => "an integer".into(),
        Rule::BOOL => "`true` or `false`".into(),
        Rule::list => "a list".into(),
        Rule::TYPE => "a type (string, int, float, bool or any)".into(),
        Rule::KIND => "`state` or `orthogonal`".into(),
        Rule::PARAM_KIND => "a parameter kind (action, state, guard, value or event)".into(),
        Rule::OP => "a comparison (==, !=, <, <=, >, >=, in)".into(),
        Rule::ARITH => "an arithmetic operator (+, -, *, /)".into(),
        Rule::EOI => "the end of the file".into(),
        Rule::start => "a declaration (`machine`, `event`, `guard`, `bind`)".into(),
        Rule::comparison => "a comparison".into(),
        Rule::guard_atom => "a guard name".into(),
        Rule::action => "an action".into(),
        Rule::trigger => "`on`".into(),
        Rule::kinds => "an event name".into(),
        Rule::assign_clause => "`set`".into(),
        Rule::assignment => "an assignment (`context.x = ...`)".into(),
        Rule::branch => "a branch (`\"value\" to State`)".into(),
        Rule::when_branch => "a `when` branch".into(),
        Rule::state_decl => "a state".into(),
        Rule::transition | Rule::selector_trans | Rule::choice_trans => "a transition".into(),
        Rule::field_decl | Rule::context_field => "a field (`name: type`)".into(),
        Rule::binding => "a binding (`handler = pkg.fn`)".into(),
        Rule::a_value => "a value (a string, a number, `true`/`false` or a list)".into(),
        Rule::a_pred => "a parenthesised guard (`(context.n > 1)`)".into(),
        _ => format!("a {}", name.replace('_', " ")),
    }
}

/// "a, b or c"
fn words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn expected(positives: &[Rule]) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    let push = |s: String, out: &mut Vec<String>| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    let items = positives.contains(&Rule::KIND) && positives.contains(&Rule::kw_from);
    let stmts = STMT_STARTS.iter().filter(|r| positives.contains(r)).count() > 1;
    if items {
        push("a state".into(), &mut out);
        push("a transition".into(), &mut out);
    }
    if stmts {
        push(
            "a declaration (`machine`, `event`, `guard`, `bind`)".into(),
            &mut out,
        );
    }
    let values = VALUE_STARTS.iter().all(|r| positives.contains(r));
    if values {
        push(
            "a value (a string, a number, `true`, `false` or a list)".into(),
            &mut out,
        );
    }
    for rule in positives {
        if (items && ITEM_STARTS.contains(rule))
            || (stmts && STMT_STARTS.contains(rule))
            || (values && VALUE_STARTS.contains(rule))
        {
            continue;
        }
        push(describe(*rule), &mut out);
    }
    (!out.is_empty()).then(|| words(&out))
}

/// harel's `_syntax_hint`: suggestions keyed off the offending line.
fn hint(line: &str) -> Option<String> {
    if line.contains("->") {
        return Some("transitions read `from A to B` — there is no `->` arrow".into());
    }
    if line.contains("=>") {
        return Some(
            "use `to` for a target and `select`/`{ ... }` for a selector — there is no `=>`".into(),
        );
    }
    None
}

/// The token at `offset`, for "unexpected `...`": a word, or a run of punctuation.
fn token_at(text: &str, offset: usize) -> String {
    let rest = &text[offset..];
    let first = rest.chars().next().unwrap_or(' ');
    if first == '"' {
        // a string literal, up to its closing quote on this line
        let body: String = rest[1..]
            .chars()
            .take_while(|c| *c != '"' && *c != '\n')
            .collect();
        return format!("\"{body}\"");
    }
    let tok: String = if first.is_alphanumeric() || first == '_' {
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    } else {
        rest.chars()
            .take_while(|c| !c.is_whitespace() && !c.is_alphanumeric() && *c != '"' && *c != '_')
            .take(3)
            .collect()
    };
    tok
}

pub(crate) fn error(text: &str, origin: &str, e: Error<Rule>) -> LangError {
    let offset = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let positives = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => positives.clone(),
        ErrorVariant::CustomError { .. } => Vec::new(),
    };
    let expected = expected(&positives);
    let rest = &text[offset.min(text.len())..];
    if only_trivia(rest) {
        // point at the end of the source, as harel does
        let lines: Vec<&str> = text.lines().collect();
        let line = lines.len().max(1);
        let col = lines.last().map_or(0, |l| l.chars().count()) + 1;
        // the brace hint only where a `}` would have been accepted: a file that stops at
        // `machine M` or `import "x" as` is not missing one
        let message = if positives.contains(&Rule::rbrace) {
            "unexpected end of input (a `{` block is likely missing its closing `}`)"
        } else {
            "unexpected end of input"
        };
        return LangError::at(ErrorKind::Syntax, origin, text, (line, col), message)
            .with_expected(expected);
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    let src_line = text.lines().nth(line - 1).unwrap_or("");
    let message = if rest.starts_with('"') && !rest[1..].lines().next().unwrap_or("").contains('"')
    {
        "unterminated string (a string ends with `\"` on the same line)".to_string()
    } else {
        format!("unexpected `{}`", token_at(text, offset))
    };
    LangError::at(ErrorKind::Syntax, origin, text, (line, col), message)
        .with_expected(expected)
        .with_hint(hint(src_line))
}

/// Whether `rest` holds only whitespace and comments.
fn only_trivia(rest: &str) -> bool {
    rest.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#') || t.starts_with("//")
    })
}
