//! DynamoDB attribute values written the way harel's boto3 `TypeSerializer` writes them, and
//! read back the way its `TypeDeserializer` + `int()`/`float()` read them.
//!
//! The numbers matter: harel stores `fire_at` as `Decimal(str(x))`, which boto3 sends as
//! `str(Decimal)`; the `delete_timer` guard compares against the same text, so both sides
//! must produce it identically.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use harel_model::pyrepr::py_float_repr;

/// An item or key in DynamoDB's typed form.
pub type Item = HashMap<String, AttributeValue>;

/// An attribute that does not read as the store expects: the item was not written by harel's store,
/// or was damaged.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CodecError {
    /// The item has no attribute of this name.
    #[error("item has no attribute {0:?}")]
    Missing(&'static str),
    /// The attribute (first) is of another type than the one named (second: `S`, `N`, ...).
    #[error("attribute {0:?} has the wrong type (expected {1})")]
    WrongType(&'static str, &'static str),
    /// A number attribute whose text is not a number of the expected kind (an integer where one is
    /// needed).
    #[error("attribute {name:?} is not a valid number: {text:?}")]
    BadNumber {
        /// The attribute's name.
        name: &'static str,
        /// The number's text, as stored.
        text: String,
    },
    /// DynamoDB has no NaN or infinity; boto3 refuses them too.
    #[error("{0} cannot be stored in DynamoDB (no NaN or infinity)")]
    NotFinite(f64),
}

/// A string attribute (`S`), as boto3 writes a `str`.
pub fn s(text: impl Into<String>) -> AttributeValue {
    AttributeValue::S(text.into())
}

/// An integer number attribute (`N`), its decimal text as boto3 writes an `int`.
pub fn n_int(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A float as boto3 writes `Decimal(str(x))`: Python's `repr` of the float, then
/// `str(Decimal)` of that text.
pub fn n_float(value: f64) -> Result<AttributeValue, CodecError> {
    Ok(AttributeValue::N(py_decimal_str(value)?))
}

/// `str(Decimal(str(x)))` for a finite float `x`.
pub fn py_decimal_str(x: f64) -> Result<String, CodecError> {
    if !x.is_finite() {
        return Err(CodecError::NotFinite(x));
    }
    let repr = py_float_repr(x);
    let (sign, body) = match repr.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", repr.as_str()),
    };
    let (mantissa, exp) = match body.split_once('e') {
        Some((m, e)) => (m, e.parse::<i64>().expect("repr exponents are integers")),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // Decimal keeps every digit it was given (trailing zeros included): coefficient + exponent
    let mut digits = format!("{int}{frac}");
    let mut exp = exp - frac.len() as i64;
    // leading zeros are not part of the coefficient ("0.001" is 1E-3), but "0" stays "0"
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        digits = "0".into();
    } else {
        digits = trimmed.to_string();
    }
    if digits == "0" && exp > 0 {
        exp = 0;
    }
    Ok(format!("{sign}{}", decimal_to_sci_string(&digits, exp)))
}

/// Python's `Decimal.__str__` (the General Decimal Arithmetic to-scientific-string).
fn decimal_to_sci_string(digits: &str, exp: i64) -> String {
    let len = digits.len() as i64;
    let leftdigits = exp + len;
    let dotplace = if exp <= 0 && leftdigits > -6 {
        leftdigits
    } else {
        1
    };
    let (intpart, fracpart) = if dotplace <= 0 {
        (
            "0".to_string(),
            format!(".{}{}", "0".repeat((-dotplace) as usize), digits),
        )
    } else if dotplace >= len {
        (
            format!("{digits}{}", "0".repeat((dotplace - len) as usize)),
            String::new(),
        )
    } else {
        let (i, f) = digits.split_at(dotplace as usize);
        (i.to_string(), format!(".{f}"))
    };
    let exp_part = if leftdigits == dotplace {
        String::new()
    } else {
        format!("E{:+}", leftdigits - dotplace)
    };
    format!("{intpart}{fracpart}{exp_part}")
}

/// A required string attribute; `Missing` or `WrongType` (NULL included) otherwise.
pub fn get_s<'a>(item: &'a Item, name: &'static str) -> Result<&'a str, CodecError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v),
        Some(_) => Err(CodecError::WrongType(name, "S")),
        None => Err(CodecError::Missing(name)),
    }
}

/// A string attribute that may be absent or NULL (boto3 writes Python's None as NULL).
pub fn get_opt_s(item: &Item, name: &'static str) -> Result<Option<String>, CodecError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        Some(AttributeValue::Null(_)) | None => Ok(None),
        Some(_) => Err(CodecError::WrongType(name, "S or NULL")),
    }
}

fn get_n<'a>(item: &'a Item, name: &'static str) -> Result<&'a str, CodecError> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => Ok(v),
        Some(_) => Err(CodecError::WrongType(name, "N")),
        None => Err(CodecError::Missing(name)),
    }
}

/// An integer attribute (`int(Decimal)` in harel: an integral value in any notation).
pub fn get_u64(item: &Item, name: &'static str) -> Result<u64, CodecError> {
    let text = get_n(item, name)?;
    parse_u64(text).ok_or_else(|| CodecError::BadNumber {
        name,
        text: text.to_string(),
    })
}

fn parse_u64(text: &str) -> Option<u64> {
    if let Ok(v) = text.parse::<u64>() {
        return Some(v);
    }
    // DynamoDB may hand back an integral number in another spelling ("1E+3", "5.0")
    let f: f64 = text.parse().ok()?;
    (f.fract() == 0.0 && f >= 0.0 && f < u64::MAX as f64).then_some(f as u64)
}

/// A number attribute as a float (`float(Decimal)` in harel), e.g. a timer's `fire_at`.
pub fn get_f64(item: &Item, name: &'static str) -> Result<f64, CodecError> {
    let text = get_n(item, name)?;
    text.parse().map_err(|_| CodecError::BadNumber {
        name,
        text: text.to_string(),
    })
}

/// The size DynamoDB bills and limits an item by: attribute names plus values (UTF-8 bytes
/// for strings, about one byte per two significant digits plus one for numbers).
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::L(items) => 3 + items.iter().map(|i| 1 + value_size(i)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, i)| 1 + k.len() + value_size(i))
                .sum::<usize>()
        }
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        _ => 1,
    }
}

fn number_size(n: &str) -> usize {
    let mantissa = n.split(['e', 'E']).next().unwrap_or(n);
    let significant = mantissa
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>();
    let significant = significant.trim_start_matches('0').trim_end_matches('0');
    significant.len().div_ceil(2) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_written_as_boto3_writes_decimal_of_str() {
        // expected values printed by Python: str(Decimal(str(x)))
        let cases = [
            (1700000000.5, "1700000000.5"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (0.30000000000000004, "0.30000000000000004"),
            (1e16, "1E+16"),
            (1.2345678901234568e17, "1.2345678901234568E+17"),
            (1e-7, "1E-7"),
            (1.5e-7, "1.5E-7"),
            (1e-5, "0.00001"),
            (0.0001, "0.0001"),
            (0.0, "0.0"),
            (-2.5, "-2.5"),
            (123456789.0, "123456789.0"),
            (1e22, "1E+22"),
        ];
        for (x, want) in cases {
            assert_eq!(py_decimal_str(x).unwrap(), want, "{x}");
        }
        assert!(matches!(
            py_decimal_str(f64::NAN),
            Err(CodecError::NotFinite(_))
        ));
        assert!(py_decimal_str(f64::INFINITY).is_err());
    }

    #[test]
    fn integral_numbers_in_any_spelling_read_as_ints() {
        let mut item = Item::new();
        item.insert("a".into(), AttributeValue::N("12".into()));
        item.insert("b".into(), AttributeValue::N("1E+3".into()));
        item.insert("c".into(), AttributeValue::N("1.5".into()));
        assert_eq!(get_u64(&item, "a"), Ok(12));
        assert_eq!(get_u64(&item, "b"), Ok(1000));
        assert!(get_u64(&item, "c").is_err());
        assert_eq!(get_u64(&item, "zz"), Err(CodecError::Missing("zz")));
    }
}
