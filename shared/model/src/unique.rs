//! Maps read from a file a person wrote refuse a key written twice. serde's maps keep the last
//! value under a repeated key, so a second `nightly:` entry in a schedules file, or a provider
//! event type listed twice under a hook's `kinds`, would silently replace the first; the
//! parsers (serde_json, serde_yaml_ng) place the refusal at the repeated key.

use std::fmt;
use std::marker::PhantomData;

use indexmap::IndexMap;
use serde::de::{Error, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// An insertion-ordered map of string keys, each written once: for
/// `#[serde(deserialize_with = "harel_model::unique::keys")]`.
pub fn keys<'de, D, V>(deserializer: D) -> Result<IndexMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    deserializer
        .deserialize_map(UniqueKeys(PhantomData))
        .map(|Unique(map)| map)
}

/// The same map as a type, for a document whose top level is the map.
#[derive(Debug, Clone, PartialEq)]
pub struct Unique<V>(pub IndexMap<String, V>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Unique<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(UniqueKeys(PhantomData))
    }
}

struct UniqueKeys<V>(PhantomData<V>);

impl<'de, V: Deserialize<'de>> Visitor<'de> for UniqueKeys<V> {
    type Value = Unique<V>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Unique<V>, A::Error> {
        let mut map = IndexMap::with_capacity(access.size_hint().unwrap_or(0).min(64));
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(A::Error::custom(format!(
                    "duplicate key \"{key}\" (a second one would replace the first)"
                )));
            }
            let value = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Unique(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_refused_where_it_is_written() {
        let err = serde_json::from_str::<Unique<u8>>("{\"a\": 1,\n \"b\": 2,\n \"a\": 3}")
            .expect_err("a repeated key");
        let said = err.to_string();
        assert!(said.contains("duplicate key \"a\""), "{said}");
        assert_eq!(err.line(), 3, "{said}");
    }

    #[test]
    fn keys_keep_their_order() {
        let read: Unique<u8> = serde_json::from_str(r#"{"b": 1, "a": 2}"#).unwrap();
        assert_eq!(read.0.keys().collect::<Vec<_>>(), ["b", "a"]);
    }
}

/// Where a block map that starts at `line`:`column` (1-based, as YAML parsers report a map's
/// start) writes `key` the second time: the second line at that map's indentation that opens
/// with the key (plain or quoted) and a colon. YAML readers place a repeated key at the map's
/// start; this finds the repeat itself when the map is in block style (`None` otherwise, a
/// flow map `{a: 1, a: 2}` for one).
pub fn repeated_block_key(
    text: &str,
    key: &str,
    line: usize,
    column: usize,
) -> Option<(usize, usize)> {
    let indent = column.saturating_sub(1);
    let spellings = [key.to_string(), format!("\"{key}\""), format!("'{key}'")];
    let mut seen = 0;
    for (n, text_line) in text.lines().enumerate().skip(line.saturating_sub(1)) {
        let Some(rest) = text_line.get(indent..) else {
            continue;
        };
        let opened = text_line[..indent].chars().all(|c| c == ' ' || c == '-');
        if !opened || rest.starts_with(' ') {
            continue;
        }
        let keyed = spellings.iter().any(|k| {
            rest.strip_prefix(k.as_str())
                .is_some_and(|after| after.trim_start().starts_with(':'))
        });
        if keyed {
            seen += 1;
            if seen == 2 {
                return Some((n + 1, column));
            }
        }
    }
    None
}

/// A YAML `Value` reader's refusal of a repeated key (`duplicate entry with key "a"`, placed
/// at the map's start `line`:`column`), as the key and the place of the repeat (or of the
/// map, for a flow map): `None` for any other message.
pub fn yaml_repeated_key(
    text: &str,
    message: &str,
    line: usize,
    column: usize,
) -> Option<(String, (usize, usize))> {
    // after the path of the map, when it is not the top (`stripe.kinds: duplicate entry ...`)
    const SAID: &str = "duplicate entry with key ";
    let key = &message[message.find(SAID)? + SAID.len()..];
    let key = key.split(" at line ").next().unwrap_or(key);
    let key = serde_json::from_str::<String>(key).unwrap_or_else(|_| key.to_string());
    let at = repeated_block_key(text, &key, line, column).unwrap_or((line, column));
    Some((key, at))
}

#[cfg(test)]
mod block_tests {
    use super::repeated_block_key;

    #[test]
    fn the_second_key_at_the_maps_indentation_is_found() {
        let text = "a:\n  x: 1\n  a: 2\n  x: 3\nb: 4\n";
        assert_eq!(repeated_block_key(text, "x", 2, 3), Some((4, 3)));
        assert_eq!(
            repeated_block_key("a: 1\n\"a\": 2\n", "a", 1, 1),
            Some((2, 1))
        );
        assert_eq!(repeated_block_key("{a: 1, a: 2}", "a", 1, 1), None);
    }
}
