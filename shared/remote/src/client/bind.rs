//! The action map bound into the action registry at cold start: one [`RemoteAction`] per
//! entry, its header values read now (`env:`, or the AWS references [`Secrets::resolve`]
//! read), so a missing or invalid one fails here and not at the first call.

use std::sync::Arc;

use harel_runtime::ActionRegistry;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::{Clients, RemoteAction};
use crate::map::{ActionMap, Binding, HeaderSource};
use crate::secrets::Secrets;

/// Why the action map cannot be bound at cold start; each names the action (and header) at fault.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The map binds a name that is already an action: a Rust action or one of `harel.lib`.
    #[error("action {action:?} is bound twice: in the action map ({origin}) and already (a Rust action or harel.lib)")]
    Twice {
        /// The action's name.
        action: String,
        /// The action map's file.
        origin: String,
    },
    /// A header's `env:NAME` names an environment variable that is not set.
    #[error("action {action:?} ({target}): header {header:?} reads environment variable {var}, which is not set")]
    MissingEnv {
        /// The action's name.
        action: String,
        /// The action's target, as shown (an HTTP query elided).
        target: String,
        /// The header's name.
        header: String,
        /// The environment variable.
        var: String,
    },
    /// A header's name, or the value its source gave, is not valid in HTTP.
    #[error("action {action:?}: header {header:?}: the value of {source_name} is not a valid header value")]
    BadHeader {
        /// The action's name.
        action: String,
        /// The header's name.
        header: String,
        /// Where the value came from (`env:NAME`, `ssm:...`, or `its text`); the value itself is
        /// never shown.
        source_name: String,
    },
    /// The map needs AWS clients (Lambda targets, `ssm:` or `secretsmanager:` headers, named here)
    /// and none were given.
    #[error("the action map needs AWS ({0}) but no AWS configuration was given")]
    NoAws(String),
    /// An `ssm:` or `secretsmanager:` reference could not be read.
    #[error("action {action:?}: header {header:?}: cannot read {reference}: {message}")]
    Reference {
        /// The action's name.
        action: String,
        /// The header's name.
        header: String,
        /// The reference (`ssm:/path`, `secretsmanager:name`).
        reference: String,
        /// The service's error (a missing parameter, a denied read).
        message: String,
    },
    /// A header reads an AWS reference that [`Secrets::resolve`] did not read before binding.
    #[error("action {action:?}: header {header:?} reads {reference}, which was not resolved (harel_remote::Secrets::resolve reads it at cold start)")]
    Unresolved {
        /// The action's name.
        action: String,
        /// The header's name.
        header: String,
        /// The reference (`ssm:/path`, `secretsmanager:name`).
        reference: String,
    },
}

/// Bind every action of `map` in `registry` as a remote action over `clients`. Header values
/// are read now (`env:NAME` from `env`, `ssm:`/`secretsmanager:` from `secrets`, which
/// [`Secrets::resolve`] read); a name already bound (a Rust action) is an error.
pub fn bind(
    registry: &mut ActionRegistry,
    map: &ActionMap,
    clients: &Clients,
    env: impl Fn(&str) -> Option<String>,
    secrets: &Secrets,
) -> Result<(), BindError> {
    let lambdas: Vec<&str> = map.lambda_targets().collect();
    if !lambdas.is_empty() && clients.lambda.is_none() {
        return Err(BindError::NoAws(format!(
            "Lambda functions: {}",
            lambdas.join(", ")
        )));
    }
    for binding in &map.bindings {
        if registry.contains(&binding.action) {
            return Err(BindError::Twice {
                action: binding.action.clone(),
                origin: map.origin.clone(),
            });
        }
        let action = RemoteAction::new(binding.clone(), clients.clone(), &env, secrets)?;
        registry.register_action(binding.action.clone(), Arc::new(action));
    }
    Ok(())
}

impl RemoteAction {
    /// Binds one action: reads its headers' values now (`env` for `env:`, `secrets` for AWS
    /// references), so a missing or invalid one fails here, at cold start, not at the first call.
    pub fn new(
        binding: Binding,
        clients: Clients,
        env: impl Fn(&str) -> Option<String>,
        secrets: &Secrets,
    ) -> Result<RemoteAction, BindError> {
        let mut headers = HeaderMap::new();
        let mut unread = None;
        for (name, source) in &binding.headers {
            if source.is_aws() && secrets.is_unread() {
                unread = unread.or_else(|| source.reference());
                continue;
            }
            let (value, source_name) = match source {
                HeaderSource::Env(var) => (
                    env(var).ok_or_else(|| BindError::MissingEnv {
                        action: binding.action.clone(),
                        target: binding.target.to_string(),
                        header: name.clone(),
                        var: var.clone(),
                    })?,
                    format!("env:{var}"),
                ),
                HeaderSource::Ssm(_) | HeaderSource::Secret(_) => {
                    let reference = source.reference().unwrap_or_default();
                    match secrets.get(source) {
                        Some(value) => (value.to_string(), reference),
                        None => {
                            return Err(BindError::Unresolved {
                                action: binding.action.clone(),
                                header: name.clone(),
                                reference,
                            })
                        }
                    }
                }
                HeaderSource::Literal(text) => (text.clone(), "its text".to_string()),
            };
            let bad = || BindError::BadHeader {
                action: binding.action.clone(),
                header: name.clone(),
                source_name: source_name.clone(),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| bad())?;
            value.set_sensitive(true);
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            headers.insert(name, value);
        }
        Ok(RemoteAction {
            binding,
            headers,
            unread,
            clients,
        })
    }
}
