//! Header values kept in AWS: `ssm:NAME` (SSM Parameter Store, a SecureString decrypted) and
//! `secretsmanager:ID` (Secrets Manager, the secret's `SecretString`). They are read once,
//! when the map is bound (a function's cold start), each reference once however many
//! actions use it, and only the references are ever shown: never a value.

use std::collections::BTreeMap;

use crate::client::BindError;
use crate::map::{ActionMap, HeaderSource};

/// The values of an action map's `ssm:` and `secretsmanager:` references, by reference
/// (`ssm:/p`, `secretsmanager:s`). Its `Debug` shows the references only.
#[derive(Clone, Default)]
pub struct Secrets {
    values: BTreeMap<String, String>,
    /// [`Secrets::unread`]: the references are known not to be read in this process.
    unread: bool,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.unread {
            return f.write_str("<unread>");
        }
        f.debug_set().entries(self.values.keys()).finish()
    }
}

impl Secrets {
    /// No references resolved (a map without `ssm:` or `secretsmanager:` headers).
    pub fn none() -> Secrets {
        Secrets::default()
    }

    /// For a function that binds the map but never runs an action (the sweeper, which
    /// needs no `ssm:GetParameter` grant): nothing is read, and an action whose headers
    /// read AWS fails when called, saying so.
    pub fn unread() -> Secrets {
        Secrets {
            values: BTreeMap::new(),
            unread: true,
        }
    }

    /// Whether this is [`Secrets::unread`].
    pub fn is_unread(&self) -> bool {
        self.unread
    }

    /// Read every `ssm:` and `secretsmanager:` header value of `map` through `sdk` (its
    /// region, credentials and `AWS_ENDPOINT_URL`). The first reference that cannot be read
    /// is an error naming the action, the header and the reference.
    pub async fn resolve(
        map: &ActionMap,
        sdk: Option<&aws_config::SdkConfig>,
    ) -> Result<Secrets, BindError> {
        let mut values = BTreeMap::new();
        let wanted: Vec<(&str, &str, &HeaderSource)> = map
            .bindings
            .iter()
            .flat_map(|b| {
                b.headers
                    .iter()
                    .filter(|(_, source)| source.is_aws())
                    .map(move |(header, source)| (b.action.as_str(), header.as_str(), source))
            })
            .collect();
        if wanted.is_empty() {
            return Ok(Secrets::default());
        }
        let Some(sdk) = sdk else {
            let refs: Vec<String> = wanted
                .iter()
                .filter_map(|(_, _, s)| s.reference())
                .collect();
            return Err(BindError::NoAws(format!(
                "header values from AWS: {}",
                refs.join(", ")
            )));
        };
        let reader = AwsReader::new(sdk);
        for (action, header, source) in wanted {
            let reference = source.reference().unwrap_or_default();
            if values.contains_key(&reference) {
                continue;
            }
            let Some(value) = reader.read(source).await.transpose() else {
                continue;
            };
            let value = value.map_err(|message| BindError::Reference {
                action: action.to_string(),
                header: header.to_string(),
                reference: reference.clone(),
                message,
            })?;
            values.insert(reference, value);
        }
        Ok(Secrets {
            values,
            unread: false,
        })
    }

    /// The value read for `source` (None: not an AWS reference, or not resolved).
    pub fn get(&self, source: &HeaderSource) -> Option<&str> {
        let reference = source.reference()?;
        self.values.get(&reference).map(String::as_str)
    }

    /// The references resolved.
    pub fn references(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }
}

/// Reads `ssm:` and `secretsmanager:` values through the AWS SDK: the one place this
/// project turns such a reference into its value (action map headers here, webhook and
/// callback secrets in `harel-hooks`).
#[derive(Clone, Debug)]
pub struct AwsReader {
    ssm: aws_sdk_ssm::Client,
    secrets: aws_sdk_secretsmanager::Client,
}

impl AwsReader {
    /// Clients over `sdk` (its region, credentials and `AWS_ENDPOINT_URL`).
    pub fn new(sdk: &aws_config::SdkConfig) -> AwsReader {
        AwsReader {
            ssm: aws_sdk_ssm::Client::new(sdk),
            secrets: aws_sdk_secretsmanager::Client::new(sdk),
        }
    }

    /// The value of an `ssm:` (decrypted) or `secretsmanager:` (its `SecretString`) source;
    /// None for any other source (not kept in AWS). The error says why, never a value.
    pub async fn read(&self, source: &HeaderSource) -> Result<Option<String>, String> {
        match source {
            HeaderSource::Ssm(name) => {
                let out = self
                    .ssm
                    .get_parameter()
                    .name(name)
                    .with_decryption(true)
                    .send()
                    .await
                    .map_err(|e| match e.as_service_error() {
                        Some(s) if s.is_parameter_not_found() => "no such parameter".to_string(),
                        _ => aws_sdk_ssm::error::DisplayErrorContext(&e).to_string(),
                    })?;
                out.parameter
                    .and_then(|p| p.value)
                    .map(Some)
                    .ok_or_else(|| "the parameter has no value".into())
            }
            HeaderSource::Secret(id) => {
                let out = self
                    .secrets
                    .get_secret_value()
                    .secret_id(id)
                    .send()
                    .await
                    .map_err(|e| match e.as_service_error() {
                        Some(s) if s.is_resource_not_found_exception() => {
                            "no such secret".to_string()
                        }
                        _ => aws_sdk_secretsmanager::error::DisplayErrorContext(&e).to_string(),
                    })?;
                out.secret_string.map(Some).ok_or_else(|| {
                    "the secret has no SecretString (a binary secret cannot be used as text)".into()
                })
            }
            HeaderSource::Env(_) | HeaderSource::Literal(_) => Ok(None),
        }
    }
}
