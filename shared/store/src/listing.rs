//! The order and cursor every backend lists by: newest first by `created_at`, ties broken by
//! id, paged by the last sort key returned. The DynamoDB store keeps this key on the item
//! (`list_sk`, the sort key of its status indexes); the in-memory store computes it, so both
//! page the same way.

use base64::Engine as _;
use harel_model::{Execution, ExecutionPage, ExecutionSummary, Status};
use serde_json::json;

use crate::{StoreError, StoreResult};

/// The version a cursor carries, so a cursor of another format is told apart.
const CURSOR_VERSION: u64 = 1;

/// `created_at` in microseconds, zero-padded to 16 digits (epoch microseconds stay below
/// 10^16 until the year 2286), then `#` and the id: unique, and its text order is the time
/// order. An execution never stamped (harel's writers always stamp) sorts oldest.
pub fn sort_key(exe: &Execution) -> String {
    let micros = exe
        .created_at
        .filter(|t| t.is_finite() && *t > 0.0)
        .map_or(0, |t| (t * 1e6).round() as u64);
    format!("{micros:016}#{}", exe.id)
}

/// The status partition of the listing indexes: `RUNNING` for a root, `RUNNING#child` for a
/// child (so `--roots` reads one partition and a full listing two).
pub fn status_key(status: Status, child: bool) -> String {
    if child {
        format!("{}#child", status.as_str())
    } else {
        status.as_str().to_string()
    }
}

/// The per-machine partition: `{definition_id}#{status_key}`.
pub fn machine_status_key(definition_id: &str, status: Status, child: bool) -> String {
    format!("{definition_id}#{}", status_key(status, child))
}

/// Where a listing continues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cursor {
    /// After this sort key (the index listing).
    After(String),
    /// After this many matches (the `--scan` listing, which reads everything anyway).
    Offset(usize),
}

impl Cursor {
    /// The cursor as a page's opaque `next_cursor` (URL-safe base64 of a versioned JSON); read
    /// back by [`Cursor::decode`].
    pub fn encode(&self) -> String {
        let body = match self {
            Cursor::After(sk) => json!({"v": CURSOR_VERSION, "after": sk}),
            Cursor::Offset(n) => json!({"v": CURSOR_VERSION, "offset": n}),
        };
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(body.to_string())
    }

    /// A cursor that is not one of ours is refused: a mistake must never restart a listing
    /// silently. The bare offsets of earlier releases are named as such.
    pub fn decode(cursor: &str) -> StoreResult<Cursor> {
        let refuse = |why: &str| {
            StoreError::other(format!(
                "invalid list cursor {cursor:?}: {why}; pass the next_cursor of a previous page"
            ))
        };
        let trimmed = cursor.trim_end_matches('=');
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(trimmed)
            .map_err(|_| refuse("not base64"))?;
        let text = String::from_utf8(bytes).map_err(|_| refuse("not text"))?;
        if text.parse::<u64>().is_ok() {
            return Err(refuse(
                "it is an offset cursor of an earlier release (listings are now newest first); start the listing again without a cursor",
            ));
        }
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|_| refuse("not a listing cursor"))?;
        if value.get("v").and_then(|v| v.as_u64()) != Some(CURSOR_VERSION) {
            return Err(refuse("unknown cursor version"));
        }
        if let Some(sk) = value.get("after").and_then(|v| v.as_str()) {
            return Ok(Cursor::After(sk.to_string()));
        }
        if let Some(n) = value.get("offset").and_then(|v| v.as_u64()) {
            return Ok(Cursor::Offset(n as usize));
        }
        Err(refuse("not a listing cursor"))
    }

    /// The sort key to continue after, refusing a `--scan` cursor on an index listing.
    pub fn after(cursor: Option<&str>, scan: bool) -> StoreResult<Option<Cursor>> {
        let Some(c) = cursor else { return Ok(None) };
        let decoded = Cursor::decode(c)?;
        match (&decoded, scan) {
            (Cursor::After(_), false) | (Cursor::Offset(_), true) => Ok(Some(decoded)),
            (Cursor::Offset(_), false) => Err(StoreError::other(format!(
                "list cursor {c:?} belongs to a --scan listing: repeat with --scan, or start without a cursor"
            ))),
            (Cursor::After(_), true) => Err(StoreError::other(format!(
                "list cursor {c:?} belongs to an index listing: repeat without --scan, or start without a cursor"
            ))),
        }
    }
}

/// One page of matches already sorted newest first. Over a full read (the memory store, a
/// DynamoDB `--scan`) the offset and sort-key cursors walk the same pages.
pub fn page_of(
    sorted: Vec<(String, ExecutionSummary)>,
    cursor: Option<Cursor>,
    limit: usize,
    scan: bool,
) -> ExecutionPage {
    let skip = match &cursor {
        None => 0,
        Some(Cursor::Offset(n)) => *n,
        Some(Cursor::After(sk)) => sorted.iter().take_while(|(k, _)| k >= sk).count(),
    };
    let more = sorted.len() > skip + limit;
    let rows: Vec<(String, ExecutionSummary)> = sorted.into_iter().skip(skip).take(limit).collect();
    let next_cursor = match rows.last() {
        Some(_) if more && scan => Some(Cursor::Offset(skip + limit)),
        Some((last, _)) if more => Some(Cursor::After(last.clone())),
        _ => None,
    };
    ExecutionPage {
        items: rows.into_iter().map(|(_, s)| s).collect(),
        next_cursor: next_cursor.map(|c| c.encode()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys_order_by_time_then_id() {
        let mut a = Execution::new("m").with_id("b");
        a.created_at = Some(9.5);
        let mut b = Execution::new("m").with_id("a");
        b.created_at = Some(10.0);
        let mut c = Execution::new("m").with_id("c");
        c.created_at = Some(10.0);
        let (ka, kb, kc) = (sort_key(&a), sort_key(&b), sort_key(&c));
        assert_eq!(ka, "0000000009500000#b");
        assert!(ka < kb && kb < kc);
        let mut now = Execution::new("m").with_id("x");
        now.created_at = Some(1_764_600_000.123_456);
        assert_eq!(sort_key(&now), "1764600000123456#x");
        assert_eq!(
            sort_key(&Execution::new("m").with_id("y")),
            "0000000000000000#y"
        );
    }

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        for c in [Cursor::After("0001#x".into()), Cursor::Offset(7)] {
            assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
        }
        let old = base64::engine::general_purpose::URL_SAFE.encode("50");
        let err = Cursor::decode(&old).unwrap_err().to_string();
        assert!(err.contains("earlier release"), "{err}");
        let v2 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"v":2,"after":"x"}"#);
        assert!(Cursor::decode(&v2)
            .unwrap_err()
            .to_string()
            .contains("version"));
        assert!(Cursor::decode("not a cursor!").is_err());
        let scan = Cursor::Offset(3).encode();
        assert!(Cursor::after(Some(&scan), false)
            .unwrap_err()
            .to_string()
            .contains("--scan"));
        assert!(Cursor::after(Some(&scan), true).is_ok());
        let index = Cursor::After("k".into()).encode();
        assert!(Cursor::after(Some(&index), true).is_err());
    }
}
