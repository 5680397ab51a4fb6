//! DynamoDB's item size, by its documented rules, to refuse a result that cannot be stored
//! before DynamoDB does (and to count write units in the benchmark).

use aws_sdk_dynamodb::types::AttributeValue;

use crate::client::Item;

/// DynamoDB's item size limit, 400 KB.
pub const MAX_ITEM_SIZE: usize = 400 * 1024;

/// Bytes DynamoDB bills for an item: each attribute's name plus its value.
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

/// DynamoDB write units for a write touching an item of `bytes` (1 KB each, at least 1).
pub fn write_units(bytes: usize) -> usize {
    bytes.div_ceil(1024).max(1)
}

fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(items) => items.iter().map(String::len).sum(),
        AttributeValue::Ns(items) => items.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(items) => items.iter().map(|b| b.as_ref().len()).sum(),
        // a container costs 3 bytes plus 1 per element on top of its elements
        AttributeValue::L(items) => 3 + items.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        _ => 0,
    }
}

/// One byte per two significant digits, plus one.
fn number_size(text: &str) -> usize {
    let digits: String = text
        .chars()
        .take_while(|c| *c != 'e' && *c != 'E')
        .filter(char::is_ascii_digit)
        .collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    significant.div_ceil(2) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let mut item = Item::new();
        item.insert("id".into(), AttributeValue::S("abc".into()));
        item.insert("expiration".into(), AttributeValue::N("1700000000".into()));
        // 2 + 3, 10 + (2 significant digits -> 1 byte + 1)
        assert_eq!(item_size(&item), 5 + 12);
        assert_eq!(write_units(0), 1);
        assert_eq!(write_units(1025), 2);
    }
}
