//! Signature schemes: how a provider signs a delivery, and checking it. Every scheme is an
//! HMAC of the raw body (with a timestamp for those that bound replays) under the hook's
//! secret; signatures are compared in constant time.

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use subtle::ConstantTimeEq;

use crate::refusal::Refusal;

/// Stripe's default replay window, seconds.
pub const DEFAULT_TOLERANCE: u64 = 300;

/// A digest for HMAC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// HMAC-SHA256, the default.
    Sha256,
    /// HMAC-SHA1, for providers that still sign with it.
    Sha1,
    /// HMAC-SHA512.
    Sha512,
}

/// How the signature is written in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Lowercase or uppercase hex, the default.
    Hex,
    /// Standard base64.
    Base64,
}

/// The generic scheme: `header` holds `prefix` + the encoded HMAC of the signed payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HmacScheme {
    /// The header holding the signature, lowercased.
    pub header: String,
    /// The HMAC's digest.
    pub algorithm: Algorithm,
    /// How the signature is written.
    pub encoding: Encoding,
    /// Text before the signature in the header (`sha256=`), if any.
    pub prefix: Option<String>,
    /// A header with the delivery's epoch seconds; then the payload signed is
    /// `payload` with `{timestamp}` and `{body}` replaced (default `{timestamp}.{body}`).
    pub timestamp_header: Option<String>,
    /// The replay window, seconds, when signed with a timestamp (default 300).
    pub tolerance: u64,
    /// The signed text's template, with `{timestamp}` and `{body}` (None: `{timestamp}.{body}`).
    pub payload: Option<String>,
}

/// A provider's way of signing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `Stripe-Signature: t=…,v1=…[,v1=…]`: HMAC-SHA256 over `{t}.{body}`, hex; any `v1`
    /// may match (Stripe sends one per active secret while one is rolled).
    Stripe {
        /// The replay window, seconds: `t` further from now than this is refused (default 300).
        tolerance: u64,
    },
    /// `X-Hub-Signature-256: sha256=…`: HMAC-SHA256 of the body, hex; the delivery id is
    /// `X-GitHub-Delivery`.
    Github,
    /// Any other provider: a configurable HMAC of the body (see [`HmacScheme`]).
    Hmac(HmacScheme),
}

/// What a good signature tells besides itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verified {
    /// The provider's id of this delivery, when the scheme carries one (GitHub).
    pub delivery_id: Option<String>,
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<&'h str, Refusal> {
    let value = headers
        .get(name)
        .ok_or_else(|| Refusal::MissingSignature(name.to_string()))?;
    value
        .to_str()
        .map_err(|_| Refusal::BadSignature(format!("{name} is not text")))
}

/// HMAC of `parts` (concatenated) under `key`.
pub fn mac(algorithm: Algorithm, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    fn run<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        // HMAC takes a key of any length: new_from_slice cannot fail for it
        let mut m = <M as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().to_vec()
    }
    match algorithm {
        Algorithm::Sha256 => run::<Hmac<sha2_11::Sha256>>(key, parts),
        Algorithm::Sha1 => run::<Hmac<sha1::Sha1>>(key, parts),
        Algorithm::Sha512 => run::<Hmac<sha2_11::Sha512>>(key, parts),
    }
}

/// Equal in constant time (lengths are not secret).
fn same(expected: &[u8], given: &[u8]) -> bool {
    expected.len() == given.len() && bool::from(expected.ct_eq(given))
}

fn decode(encoding: Encoding, text: &str) -> Option<Vec<u8>> {
    match encoding {
        Encoding::Hex => hex::decode(text.trim()).ok(),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .ok(),
    }
}

fn fresh(timestamp: &str, now: i64, tolerance: u64) -> Result<(), Refusal> {
    let t: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| Refusal::BadSignature(format!("timestamp {timestamp:?} is not a number")))?;
    let age = now.saturating_sub(t);
    // a timestamp far in the future is refused too: it would stretch the replay window
    if age.unsigned_abs() > tolerance {
        return Err(Refusal::StaleSignature { age, tolerance });
    }
    Ok(())
}

impl Scheme {
    /// Check `body`'s signature in `headers` under `secret` at `now` (epoch seconds).
    pub fn verify(
        &self,
        secret: &[u8],
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<Verified, Refusal> {
        match self {
            Scheme::Stripe { tolerance } => {
                let value = header(headers, "stripe-signature")?;
                let mut timestamp = None;
                let mut signatures = Vec::new();
                for item in value.split(',') {
                    match item.trim().split_once('=') {
                        Some(("t", t)) => timestamp = Some(t),
                        Some(("v1", s)) => signatures.push(s),
                        _ => {}
                    }
                }
                let t = timestamp.ok_or_else(|| {
                    Refusal::BadSignature("Stripe-Signature has no timestamp (t=)".into())
                })?;
                if signatures.is_empty() {
                    return Err(Refusal::BadSignature(
                        "Stripe-Signature has no v1 signature".into(),
                    ));
                }
                let expected = mac(Algorithm::Sha256, secret, &[t.as_bytes(), b".", body]);
                let matched = signatures
                    .iter()
                    .filter_map(|s| decode(Encoding::Hex, s))
                    .any(|s| same(&expected, &s));
                if !matched {
                    return Err(Refusal::BadSignature(
                        "no v1 signature matches the payload".into(),
                    ));
                }
                // the timestamp is trusted only once the signature covering it matched
                fresh(t, now, *tolerance)?;
                Ok(Verified::default())
            }
            Scheme::Github => {
                let value = header(headers, "x-hub-signature-256")?;
                let given = value
                    .strip_prefix("sha256=")
                    .and_then(|s| decode(Encoding::Hex, s))
                    .ok_or_else(|| {
                        Refusal::BadSignature("X-Hub-Signature-256 is not sha256=<hex>".into())
                    })?;
                if !same(&mac(Algorithm::Sha256, secret, &[body]), &given) {
                    return Err(Refusal::BadSignature(
                        "the signature does not match the payload".into(),
                    ));
                }
                let delivery_id = headers
                    .get("x-github-delivery")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                Ok(Verified { delivery_id })
            }
            Scheme::Hmac(h) => {
                let value = header(headers, &h.header)?;
                let encoded = match &h.prefix {
                    Some(p) => value.strip_prefix(p.as_str()).ok_or_else(|| {
                        Refusal::BadSignature(format!("{} does not start with {p:?}", h.header))
                    })?,
                    None => value,
                };
                let given = decode(h.encoding, encoded).ok_or_else(|| {
                    Refusal::BadSignature(format!("{} is not {:?}", h.header, h.encoding))
                })?;
                let expected = match &h.timestamp_header {
                    None => mac(h.algorithm, secret, &[body]),
                    Some(name) => {
                        let t = header(headers, name)?;
                        let template = h.payload.as_deref().unwrap_or("{timestamp}.{body}");
                        let (before, after) =
                            template.split_once("{body}").unwrap_or((template, ""));
                        let before = before.replace("{timestamp}", t);
                        let after = after.replace("{timestamp}", t);
                        mac(
                            h.algorithm,
                            secret,
                            &[before.as_bytes(), body, after.as_bytes()],
                        )
                    }
                };
                if !same(&expected, &given) {
                    return Err(Refusal::BadSignature(
                        "the signature does not match the payload".into(),
                    ));
                }
                if let Some(name) = &h.timestamp_header {
                    fresh(header(headers, name)?, now, h.tolerance)?;
                }
                Ok(Verified::default())
            }
        }
    }
}

/// Signing as providers do: what tests and the simulators use to make deliveries.
pub mod sign {
    use super::*;

    /// A `Stripe-Signature` value for `body` sent at `t`.
    pub fn stripe(secret: &[u8], t: i64, body: &[u8]) -> String {
        let t = t.to_string();
        let sig = mac(Algorithm::Sha256, secret, &[t.as_bytes(), b".", body]);
        format!("t={t},v1={}", hex::encode(sig))
    }

    /// An `X-Hub-Signature-256` value for `body`.
    pub fn github(secret: &[u8], body: &[u8]) -> String {
        format!(
            "sha256={}",
            hex::encode(mac(Algorithm::Sha256, secret, &[body]))
        )
    }

    /// An encoded HMAC of `payload`.
    pub fn hmac(algorithm: Algorithm, encoding: Encoding, secret: &[u8], payload: &[u8]) -> String {
        let m = mac(algorithm, secret, &[payload]);
        match encoding {
            Encoding::Hex => hex::encode(m),
            Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(m),
        }
    }
}
