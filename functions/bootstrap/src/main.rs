//! Every function of the stack in one binary, the one `sam build` deploys: the template gives
//! the Worker, Relay, Sweeper and Api functions this same binary and each its own `Handler`
//! (`worker`, `relay`, `sweeper`, `api`), which Lambda hands a custom runtime's bootstrap as
//! `_HANDLER`.
//!
//! Why one binary: what makes a function's build slow is the link, fat LTO over the whole AWS
//! SDK, and `sam build` builds the functions one after another, so four binaries were four of
//! those links; one binary is one link, and one artifact that every function's upload shares.
//! The price is that each function carries the others' code (a few MB of the same SDK); a cold
//! start reads only what it runs. Each function's own binary (`worker`, `relay`, ...) stays for
//! `cargo lambda watch` and the tests, running the same `run`.

use std::process::ExitCode;

/// The functions this binary runs, by the `Handler` the template gives each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Function {
    Worker,
    Relay,
    Sweeper,
    Api,
}

/// The `Handler` names, in the order a refusal lists them.
const HANDLERS: [(&str, Function); 4] = [
    ("worker", Function::Worker),
    ("relay", Function::Relay),
    ("sweeper", Function::Sweeper),
    ("api", Function::Api),
];

/// The function `_HANDLER` names, or why none: a function deployed with another `Handler`
/// must fail its cold start saying so, not run as some default.
fn named(handler: Option<&str>) -> Result<Function, String> {
    let expected = HANDLERS.map(|(name, _)| name).join(", ");
    match handler {
        Some(name) => HANDLERS
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, function)| *function)
            .ok_or_else(|| {
                format!("_HANDLER={name:?} names no harel function: expected one of {expected} (the template's Handler)")
            }),
        None => Err(format!(
            "_HANDLER is not set: Lambda sets it to the function's Handler, one of {expected}"
        )),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let handler = std::env::var("_HANDLER").ok();
    let ran = match named(handler.as_deref()) {
        Ok(Function::Worker) => harel_worker::run().await,
        Ok(Function::Relay) => harel_relay::run().await,
        Ok(Function::Sweeper) => harel_sweeper::run().await,
        Ok(Function::Api) => harel_api_function::run().await,
        Err(refused) => Err(refused.into()),
    };
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_handler_names_its_function() {
        assert_eq!(named(Some("worker")), Ok(Function::Worker));
        assert_eq!(named(Some("relay")), Ok(Function::Relay));
        assert_eq!(named(Some("sweeper")), Ok(Function::Sweeper));
        assert_eq!(named(Some("api")), Ok(Function::Api));
    }

    #[test]
    fn another_handler_is_refused_with_the_names_it_could_have_been() {
        let refused = named(Some("bootstrap")).unwrap_err();
        assert_eq!(
            refused,
            "_HANDLER=\"bootstrap\" names no harel function: expected one of worker, relay, sweeper, api (the template's Handler)"
        );
        assert!(named(Some("Worker")).is_err(), "the names are exact");
        let unset = named(None).unwrap_err();
        assert!(unset.starts_with("_HANDLER is not set"), "{unset}");
    }
}
