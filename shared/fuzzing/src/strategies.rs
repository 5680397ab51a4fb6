//! Inputs: random bytes, token soup, and real inputs mutated.
//!
//! Random bytes rarely get past a parser's first token; soup made of the grammar's own
//! tokens reaches the rules, and a real input with a few mutations reaches the checks after
//! parsing (the loader's, the validator's). Every strategy shrinks: fewer mutations, shorter
//! soups, smaller indices.

use std::fmt;
use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};

/// Bytes that print as text (`b"..."`, escaped) when a failure shows them.
#[derive(Clone, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl Bytes {
    /// The bytes as text, invalid UTF-8 replaced (what a `&str` API is given).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let escaped: String = self
            .0
            .iter()
            .flat_map(|b| std::ascii::escape_default(*b))
            .map(char::from)
            .collect();
        write!(f, "b\"{escaped}\" ({} bytes)", self.0.len())
    }
}

/// Any bytes, up to `max_len`.
pub fn random_bytes(max_len: usize) -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..=max_len).prop_map(Bytes)
}

/// Any text (any chars, control and non-ASCII included), up to `max_chars`.
pub fn random_text(max_chars: usize) -> impl Strategy<Value = String> {
    vec(any::<char>(), 0..=max_chars).prop_map(|chars| chars.into_iter().collect())
}

/// What goes between two tokens of a soup: nothing, blanks, line breaks.
const SEPARATORS: &[&str] = &[" ", " ", " ", "\n", "", "\t", "\r\n", "\n\n  "];

/// Up to `max_tokens` of `tokens`, in any order, with any separators.
pub fn token_soup(tokens: &[&str], max_tokens: usize) -> impl Strategy<Value = String> {
    let tokens: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
    vec((select(tokens), select(SEPARATORS)), 0..=max_tokens).prop_map(|pairs| {
        pairs
            .into_iter()
            .flat_map(|(token, sep)| [token, sep.to_string()])
            .collect()
    })
}

/// One change to an input. Positions are [`Index`]es, resolved against the input as it
/// is when the change applies (so they shrink toward the start).
#[derive(Clone, Debug)]
pub(crate) enum Mutation {
    /// Flip one bit of a byte.
    Flip { at: Index, bit: u8 },
    /// Overwrite a byte.
    Set { at: Index, byte: u8 },
    /// Remove a range.
    Delete { at: Index, len: usize },
    /// Copy a range to another place.
    Duplicate { at: Index, len: usize, to: Index },
    /// Insert a range of another input (or the same).
    Splice {
        from: Index,
        at: Index,
        len: usize,
        to: Index,
    },
    /// Insert one of the grammar's tokens.
    Token { token: Index, to: Index },
    /// Cut the input short.
    Truncate { at: Index },
}

fn mutation(max_len: usize) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        3 => (any::<Index>(), 1..=max_len).prop_map(|(at, len)| Mutation::Delete { at, len }),
        2 => (any::<Index>(), 1..=max_len, any::<Index>())
            .prop_map(|(at, len, to)| Mutation::Duplicate { at, len, to }),
        2 => (any::<Index>(), any::<Index>(), 1..=max_len, any::<Index>())
            .prop_map(|(from, at, len, to)| Mutation::Splice { from, at, len, to }),
        3 => (any::<Index>(), any::<Index>()).prop_map(|(token, to)| Mutation::Token { token, to }),
        1 => any::<Index>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

/// A position in `input` (0..=len); `Index` needs a non-empty range.
fn position(at: &Index, input: &[u8]) -> usize {
    at.index(input.len() + 1)
}

/// Apply `mutation` to `input`; `seeds` are what a splice copies from, `tokens` what a
/// token insertion inserts.
pub(crate) fn apply(
    mutation: &Mutation,
    input: &mut Vec<u8>,
    seeds: &[Vec<u8>],
    tokens: &[String],
) {
    match mutation {
        Mutation::Flip { at, bit } if !input.is_empty() => {
            let i = at.index(input.len());
            input[i] ^= 1 << bit;
        }
        Mutation::Set { at, byte } if !input.is_empty() => {
            let i = at.index(input.len());
            input[i] = *byte;
        }
        Mutation::Delete { at, len } => {
            let start = position(at, input);
            let end = (start + len).min(input.len());
            input.drain(start..end);
        }
        Mutation::Duplicate { at, len, to } => {
            let start = position(at, input);
            let end = (start + len).min(input.len());
            let chunk = input[start..end].to_vec();
            let to = position(to, input);
            input.splice(to..to, chunk);
        }
        Mutation::Splice { from, at, len, to } if !seeds.is_empty() => {
            let source = &seeds[from.index(seeds.len())];
            let start = position(at, source);
            let end = (start + len).min(source.len());
            let to = position(to, input);
            input.splice(to..to, source[start..end].iter().copied());
        }
        Mutation::Token { token, to } if !tokens.is_empty() => {
            let token = tokens[token.index(tokens.len())].as_bytes();
            let to = position(to, input);
            input.splice(to..to, token.iter().copied());
        }
        Mutation::Truncate { at } => {
            let end = position(at, input);
            input.truncate(end);
        }
        // a change that needs bytes (or seeds, or tokens) where there are none
        _ => {}
    }
}

/// One of `seeds` with 1 to `max_mutations` mutations (ranges up to `max_len` bytes;
/// tokens from `tokens`).
pub fn mutated(
    seeds: Vec<Vec<u8>>,
    tokens: &[&str],
    max_mutations: usize,
    max_len: usize,
) -> impl Strategy<Value = Bytes> {
    assert!(!seeds.is_empty(), "mutating needs at least one seed");
    let tokens: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
    (
        any::<Index>(),
        vec(mutation(max_len.max(1)), 1..=max_mutations.max(1)),
    )
        .prop_map(move |(seed, mutations)| {
            let mut input = seeds[seed.index(seeds.len())].clone();
            for m in &mutations {
                apply(m, &mut input, &seeds, &tokens);
            }
            Bytes(input)
        })
}

/// The files of `dir` whose name ends with `suffix`, read (sorted by name), as seeds.
pub fn seeds_in(dir: &Path, suffix: &str) -> Vec<Vec<u8>> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.to_str().is_some_and(|s| s.ends_with(suffix)))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    fn index(strategy_pick: usize) -> Index {
        // an Index that resolves to `strategy_pick` of a large range, proportionally
        let mut runner = TestRunner::deterministic();
        loop {
            let i = any::<Index>()
                .new_tree(&mut runner)
                .expect("an index")
                .current();
            if i.index(100) == strategy_pick {
                return i;
            }
        }
    }

    #[test]
    fn mutations_change_the_input_as_named() {
        let seeds = vec![b"WXYZ".to_vec()];
        let tokens = vec!["state".to_string()];
        let mut input = b"0123456789".to_vec();
        // positions are proportional: 50 of 100 is the middle
        apply(
            &Mutation::Delete {
                at: index(50),
                len: 2,
            },
            &mut input,
            &seeds,
            &tokens,
        );
        assert_eq!(input, b"01234789");
        apply(
            &Mutation::Token {
                token: index(0),
                to: index(0),
            },
            &mut input,
            &seeds,
            &tokens,
        );
        assert_eq!(input, b"state01234789");
        apply(
            &Mutation::Truncate { at: index(50) },
            &mut input,
            &seeds,
            &tokens,
        );
        assert_eq!(input, b"state01");
        apply(
            &Mutation::Flip {
                at: index(0),
                bit: 5,
            },
            &mut input,
            &seeds,
            &tokens,
        );
        assert_eq!(input, b"State01");
    }

    #[test]
    fn a_mutated_seed_differs_from_it_and_shows_as_text() {
        let seed = b"machine M { state A {} }".to_vec();
        let mut runner = TestRunner::deterministic();
        let strategy = mutated(vec![seed.clone()], &["{", "}"], 4, 8);
        let changed = (0..50)
            .map(|_| strategy.new_tree(&mut runner).expect("a value").current())
            .filter(|b| b.0 != seed)
            .count();
        assert!(changed > 40, "only {changed} of 50 differ from the seed");
        assert_eq!(
            format!("{:?}", Bytes(b"a\n\xff".to_vec())),
            "b\"a\\n\\xff\" (3 bytes)"
        );
    }
}
