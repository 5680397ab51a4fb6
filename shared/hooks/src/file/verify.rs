//! An entry's `verify`: the provider's signature scheme (`stripe`, `github`, or `hmac` and
//! its fields) and the secret's reference, each field checked against the scheme it applies to.

use serde::Deserialize;

use crate::secret::SecretSource;
use crate::signature::{Algorithm, Encoding, HmacScheme, Scheme, DEFAULT_TOLERANCE};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyRaw {
    scheme: String,
    secret: String,
    #[serde(default)]
    tolerance: Option<u64>,
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    algorithm: Option<Algorithm>,
    #[serde(default)]
    encoding: Option<Encoding>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    timestamp_header: Option<String>,
    #[serde(default)]
    payload: Option<String>,
}

/// `verify`: the scheme and the secret.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "VerifyRaw")]
pub struct Verify {
    /// How the provider signs (`stripe`, `github`, `hmac` and its fields).
    pub scheme: Scheme,
    /// The signing secret, as a reference (`env:`, `ssm:`, `secretsmanager:`) or text, read by
    /// `Hooks::resolve`.
    pub secret: SecretSource,
}

impl TryFrom<VerifyRaw> for Verify {
    type Error = String;

    fn try_from(raw: VerifyRaw) -> Result<Verify, String> {
        let secret = SecretSource::parse(&raw.secret).map_err(|e| format!("secret: {e}"))?;
        let only_hmac = [
            ("header", raw.header.is_some()),
            ("algorithm", raw.algorithm.is_some()),
            ("encoding", raw.encoding.is_some()),
            ("prefix", raw.prefix.is_some()),
            ("timestamp_header", raw.timestamp_header.is_some()),
            ("payload", raw.payload.is_some()),
        ];
        let refuse_hmac_fields = |scheme: &str| match only_hmac.iter().find(|(_, given)| *given) {
            Some((field, _)) => Err(format!(
                "`{field}` applies to the hmac scheme only, not {scheme}"
            )),
            None => Ok(()),
        };
        let scheme = match raw.scheme.as_str() {
            "stripe" => {
                refuse_hmac_fields("stripe")?;
                Scheme::Stripe {
                    tolerance: raw.tolerance.unwrap_or(DEFAULT_TOLERANCE),
                }
            }
            "github" => {
                refuse_hmac_fields("github")?;
                if raw.tolerance.is_some() {
                    return Err(
                        "`tolerance` does not apply to github (it signs no timestamp)".into(),
                    );
                }
                Scheme::Github
            }
            "hmac" => {
                let header = raw
                    .header
                    .ok_or("the hmac scheme needs `header` (the signature's header)")?;
                http::HeaderName::from_bytes(header.as_bytes())
                    .map_err(|_| format!("header {header:?} is not an HTTP header name"))?;
                if raw.timestamp_header.is_none()
                    && (raw.tolerance.is_some() || raw.payload.is_some())
                {
                    return Err("`tolerance` and `payload` need `timestamp_header`".into());
                }
                if let Some(p) = &raw.payload {
                    if !p.contains("{body}") || !p.contains("{timestamp}") {
                        return Err(format!(
                            "payload {p:?} must hold {{timestamp}} and {{body}}"
                        ));
                    }
                }
                Scheme::Hmac(HmacScheme {
                    header: header.to_ascii_lowercase(),
                    algorithm: raw.algorithm.unwrap_or(Algorithm::Sha256),
                    encoding: raw.encoding.unwrap_or(Encoding::Hex),
                    prefix: raw.prefix,
                    timestamp_header: raw.timestamp_header.map(|h| h.to_ascii_lowercase()),
                    tolerance: raw.tolerance.unwrap_or(DEFAULT_TOLERANCE),
                    payload: raw.payload,
                })
            }
            other => {
                return Err(format!(
                    "unknown scheme {other:?} (one of stripe, github, hmac)"
                ))
            }
        };
        Ok(Verify { scheme, secret })
    }
}
