//! A function's configuration from a table of settings, read exactly as the functions read
//! their environment (`Config::from_lookup`).

use harel_lambda::{Config, Role};

/// `role`'s configuration from `settings` (name, value); a setting that is not listed is
/// unset.
pub fn config_from(role: Role, settings: &[(&str, &str)]) -> Config {
    Config::from_lookup(role, |name| {
        settings
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    })
    .unwrap_or_else(|e| panic!("the test's configuration is invalid: {e}"))
}
