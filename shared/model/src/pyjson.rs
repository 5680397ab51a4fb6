//! The text of CPython's `json.dumps(value)` / `json.dumps(value, sort_keys=True)`, byte for
//! byte.
//!
//! harel stores spawn contexts and trace entries as `json.dumps` text, and Powertools hashes
//! `json.dumps(payload, sort_keys=True)` into idempotency keys; a Python and a Rust process
//! agree on those only if both print identically: `", "` and `": "` separators, non-ASCII
//! escaped as `\uXXXX` (surrogate pairs above the BMP, `ensure_ascii=True`) and floats in
//! Python's `repr` layout.

use std::fmt::Write as _;

use serde_json::Value;

use crate::pyrepr::py_float_repr;

/// `json.dumps(value, sort_keys=sort_keys)` with Python's other defaults. Without `sort_keys`
/// objects keep their insertion order, as a Python dict does.
pub fn json_dumps(value: &Value, sort_keys: bool) -> String {
    let mut out = String::new();
    let style = Style {
        sort_keys,
        item_sep: ", ",
        key_sep: ": ",
        ensure_ascii: true,
    };
    write_value(value, &style, &mut out);
    out
}

/// `json.dumps(value, separators=(",", ":"), ensure_ascii=False)`: the line harel's
/// `JsonlArchive` writes.
pub fn json_dumps_compact_utf8(value: &Value) -> String {
    let mut out = String::new();
    let style = Style {
        sort_keys: false,
        item_sep: ",",
        key_sep: ":",
        ensure_ascii: false,
    };
    write_value(value, &style, &mut out);
    out
}

struct Style {
    sort_keys: bool,
    item_sep: &'static str,
    key_sep: &'static str,
    ensure_ascii: bool,
}

fn write_value(value: &Value, style: &Style, out: &mut String) {
    let sort_keys = style.sort_keys;
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => write_float(f, out),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(s, style.ensure_ascii, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item_sep);
                }
                write_value(item, style, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if sort_keys {
                // str ordering in Rust is UTF-8 byte order, which is code point order: Python's
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item_sep);
                }
                write_string(key, style.ensure_ascii, out);
                out.push_str(style.key_sep);
                write_value(item, style, out);
            }
            out.push('}');
        }
    }
}

/// json.dumps writes floats with `float.__repr__`, but non-finite ones under their JavaScript
/// names (`allow_nan=True`), not repr's `nan`/`inf`.
fn write_float(x: f64, out: &mut String) {
    if x.is_nan() {
        out.push_str("NaN");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        out.push_str(&py_float_repr(x));
    }
}

/// `ensure_ascii` escaping: only printable ASCII (`' '..='~'`) is written as is, so DEL
/// (0x7f) is escaped too, as CPython's encoder does.
/// Without `ensure_ascii`, CPython still escapes the control characters below 0x20 (and only
/// those: DEL and everything non-ASCII is written as is).
fn write_string(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c if !ensure_ascii && c >= ' ' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(out, "\\u{unit:04x}").expect("writing to a String cannot fail");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Every expected text below was printed by CPython 3.11's json.dumps.

    #[test]
    fn sorted_keys_nested_unicode_and_floats() {
        // json.dumps({"b": [1, 2.0, 1e16, 0.0001, True, None], "a": "é😀\n\"", "A": {}},
        //            sort_keys=True)
        let v = json!({"b": [1, 2.0, 1e16, 0.0001, true, null], "a": "é\u{1F600}\n\"", "A": {}});
        assert_eq!(
            json_dumps(&v, true),
            r#"{"A": {}, "a": "\u00e9\ud83d\ude00\n\"", "b": [1, 2.0, 1e+16, 0.0001, true, null]}"#
        );
    }

    #[test]
    fn compact_utf8_as_jsonl_archive_writes_it() {
        // json.dumps({"a": [1, 2.5, 1e-07, None], "é": "😀\x7f\x01\n"}, separators=(",", ":"),
        //            ensure_ascii=False)
        let v = json!({"a": [1, 2.5, 1e-7, null], "é": "\u{1F600}\u{7f}\u{1}\n"});
        assert_eq!(
            json_dumps_compact_utf8(&v),
            "{\"a\":[1,2.5,1e-07,null],\"é\":\"\u{1F600}\u{7f}\\u0001\\n\"}"
        );
    }

    #[test]
    fn unsorted_keeps_insertion_order() {
        // json.dumps({"a": 1, "b": [1.0, "é", None, True], "c": {"d": 1e16}, "q": "\"\n",
        //             "emoji": "😀"})
        let v = json!({"a": 1, "b": [1.0, "é", null, true], "c": {"d": 1e16}, "q": "\"\n", "emoji": "😀"});
        assert_eq!(
            json_dumps(&v, false),
            r#"{"a": 1, "b": [1.0, "\u00e9", null, true], "c": {"d": 1e+16}, "q": "\"\n", "emoji": "\ud83d\ude00"}"#
        );
    }

    #[test]
    fn negative_zero_small_and_large_floats_and_non_ascii_keys() {
        let v = json!({
            "z": -0.0,
            "y": [1e-7, 1.5e300, {"é": "\t\u{8}\u{c}\r\\\\"}],
            "x": -5,
            "é": 1,
            "Z": 0.30000000000000004
        });
        assert_eq!(
            json_dumps(&v, true),
            r#"{"Z": 0.30000000000000004, "x": -5, "y": [1e-07, 1.5e+300, {"\u00e9": "\t\b\f\r\\\\"}], "z": -0.0, "\u00e9": 1}"#
        );
        assert_eq!(
            json_dumps(&v, false),
            r#"{"z": -0.0, "y": [1e-07, 1.5e+300, {"\u00e9": "\t\b\f\r\\\\"}], "x": -5, "\u00e9": 1, "Z": 0.30000000000000004}"#
        );
    }

    #[test]
    fn escapes_control_and_delete() {
        assert_eq!(
            json_dumps(&json!("\u{1}\u{7f}/"), false),
            r#""\u0001\u007f/""#
        );
    }

    #[test]
    fn non_finite_floats_use_javascript_names() {
        // serde_json cannot hold NaN or infinity in a Value, so the float writer is tested alone
        for (x, want) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            let mut out = String::new();
            write_float(x, &mut out);
            assert_eq!(out, want);
        }
    }
}
