//! Secrets for signatures: written as text, `env:NAME`, `ssm:/path` or `secretsmanager:ID`
//! (the forms remote actions' headers take, parsed and read by `harel-remote`), read once at
//! cold start. A [`Secret`] never shows its value: its `Debug` prints the reference.

use harel_remote::{AwsReader, HeaderSource};

/// Where a secret comes from, as written.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretSource(pub(crate) HeaderSource);

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl SecretSource {
    /// `env:NAME`, `ssm:NAME`, `secretsmanager:ID`, or the secret itself.
    pub fn parse(text: &str) -> Result<SecretSource, String> {
        if text.is_empty() {
            return Err("a secret cannot be empty".into());
        }
        HeaderSource::parse(text).map(SecretSource)
    }

    /// How it is shown: the reference, or `<literal>` for a secret written in the file.
    pub fn shown(&self) -> String {
        self.0.reference().unwrap_or_else(|| "<literal>".into())
    }

    /// Whether reading it needs AWS.
    pub fn is_aws(&self) -> bool {
        self.0.is_aws()
    }

    /// The value: the environment's, AWS's through `reader` (None: no AWS configured, an
    /// error for an AWS reference), or the text itself.
    pub async fn read(&self, reader: Option<&AwsReader>) -> Result<Secret, SecretError> {
        let failed = |message: String| SecretError {
            reference: self.shown(),
            message,
        };
        let value = match &self.0 {
            HeaderSource::Literal(text) => text.clone(),
            HeaderSource::Env(var) => {
                std::env::var(var).map_err(|_| failed(format!("the variable {var} is not set")))?
            }
            aws => {
                let reader =
                    reader.ok_or_else(|| failed("no AWS configuration to read it".into()))?;
                reader
                    .read(aws)
                    .await
                    .map_err(failed)?
                    .ok_or_else(|| failed("not an AWS reference".into()))?
            }
        };
        if value.is_empty() {
            return Err(failed("the secret is empty".into()));
        }
        Ok(Secret {
            value: value.into_bytes(),
            source: self.shown(),
        })
    }
}

/// A secret that could not be read; names the reference, never a value.
#[derive(Debug, thiserror::Error)]
#[error("secret {reference}: {message}")]
pub struct SecretError {
    /// The reference as shown (`ssm:/path`, `env:NAME`; `<literal>` for a secret written in the
    /// file).
    pub reference: String,
    /// Why it could not be read (unset, empty, missing, denied).
    pub message: String,
}

/// A secret's value. `Debug` shows where it came from, never the value.
#[derive(Clone)]
pub struct Secret {
    value: Vec<u8>,
    source: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({}: <redacted>)", self.source)
    }
}

impl Secret {
    /// A secret given in code (tests, a local server's flag).
    pub fn new(value: impl Into<Vec<u8>>, source: impl Into<String>) -> Secret {
        Secret {
            value: value.into(),
            source: source.into(),
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sources_are_read_and_never_shown() {
        std::env::set_var("HAREL_HOOKS_TEST_SECRET", "whsec_from_env");
        let env = SecretSource::parse("env:HAREL_HOOKS_TEST_SECRET").unwrap();
        let secret = env.read(None).await.unwrap();
        assert_eq!(secret.bytes(), b"whsec_from_env");
        let shown = format!("{secret:?} {env:?}");
        assert!(!shown.contains("whsec_from_env"), "{shown}");
        assert!(shown.contains("env:HAREL_HOOKS_TEST_SECRET"), "{shown}");

        let literal = SecretSource::parse("plain-text").unwrap();
        assert_eq!(literal.read(None).await.unwrap().bytes(), b"plain-text");
        assert_eq!(format!("{literal:?}"), "<literal>");

        let missing = SecretSource::parse("env:HAREL_HOOKS_TEST_NOT_SET").unwrap();
        let e = missing.read(None).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "secret env:HAREL_HOOKS_TEST_NOT_SET: the variable HAREL_HOOKS_TEST_NOT_SET is not set"
        );
        let ssm = SecretSource::parse("ssm:/stripe/whsec").unwrap();
        assert!(ssm.is_aws());
        assert_eq!(
            ssm.read(None).await.unwrap_err().to_string(),
            "secret ssm:/stripe/whsec: no AWS configuration to read it"
        );
        assert!(SecretSource::parse("ssm:").is_err());
        assert!(SecretSource::parse("").is_err());
    }
}
