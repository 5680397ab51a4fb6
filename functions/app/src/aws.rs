//! Cold start: the configuration, the clients and the engine, built once per process. Any
//! failure here stops the function before its first event, with the reason.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use harel_dynamodb::DynamoDbStore;
use harel_idempotency::{DynamoDbPersistenceLayer, Idempotency, IdempotencyConfig};
use harel_lambda::{Config, LambdaWaker, Role, Waker, Worker};
use harel_runtime::Driver;
use harel_sqs::SqsTransport;

use crate::machines;
use crate::Application;

/// Why a function would not start: every variant names what to fix (a variable, a machine
/// file, an action, a table), and the function takes no event until it is fixed.
#[derive(thiserror::Error)]
pub enum BootError {
    /// A `HAREL_*` variable is missing or malformed.
    #[error("configuration: {0}")]
    Config(#[from] harel_lambda::ConfigError),
    /// A compiled-in machine or one of the machines folder does not load.
    #[error(transparent)]
    Machine(#[from] machines::MachineError),
    #[error("actions named by the machines but bound nowhere (no Rust action, no entry in the action map): {0}")]
    /// `machine: action` pairs no Rust action and no action map binds.
    Unbound(String),
    #[error("actions bound with inputs they refuse: {0}")]
    /// `machine: problem` pairs: actions bound with inputs their binding refuses.
    ActionInputs(String),
    /// The action map (`actions.json`/`.yaml`, `HAREL_ACTIONS_FILE`) does not read.
    #[error(transparent)]
    ActionMap(#[from] harel_remote::MapError),
    #[error("remote actions: {0}")]
    /// A remote action cannot be bound (a header secret unread, a bad target).
    Remote(#[from] harel_remote::BindError),
    #[error("callback tokens: {0}")]
    /// The callback secret (`HAREL_CALLBACK_SECRET`) cannot be read.
    Callback(#[from] harel_hooks::SecretError),
    /// The webhooks file (`HAREL_HOOKS_FILE`) does not read or names unknown machines.
    #[error(transparent)]
    HooksFile(#[from] harel_hooks::FileError),
    #[error("webhooks: {0}")]
    /// A webhook's secret cannot be read.
    HookSecret(harel_hooks::SecretError),
    #[error("machine {id} of {file} has the name of a machine compiled into the functions")]
    /// A machine of the machines folder has a compiled-in machine's name.
    DuplicateMachine {
        /// The machine's name.
        id: String,
        /// The folder it was found in.
        file: String,
    },
    #[error("store: {0}")]
    /// The store's table prefix is not usable.
    Tables(#[from] harel_dynamodb::TablesError),
    #[error("store: {0}")]
    /// The store refused its settings (the timers' shard count).
    Store(#[from] harel_store::StoreError),
    #[error("idempotency: {0}")]
    /// The idempotency layer's settings are invalid.
    Idempotency(#[from] harel_idempotency::IdempotencyError),
    /// The schedules file (`HAREL_SCHEDULES_FILE`) does not read.
    #[error(transparent)]
    Schedules(#[from] harel_schedule::FileError),
}

/// `main` returning this error prints its Debug form: make that the readable reason.
impl std::fmt::Debug for BootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The engine the functions run (the app's machines and actions, checked).
pub type AppDriver = Driver;
/// The worker the `worker` function runs: DynamoDB, SQS and the idempotency table.
pub type AppWorker = Worker<DynamoDbStore, SqsTransport, aws_sdk_dynamodb::Client>;

/// Everything a function needs, built once.
pub struct Services {
    /// The function's configuration, read from its environment.
    pub config: Config,
    /// The execution store on the stack's tables (X-Ray traced when tracing is on).
    pub store: DynamoDbStore,
    /// The stack's FIFO queue, dead letters to its DLQ.
    pub transport: SqsTransport,
    /// The engine with every machine and action, checked.
    pub driver: AppDriver,
    /// The idempotency layer on `IDEMPOTENCY_TABLE` (None when the variable is unset).
    pub idempotency: Option<Idempotency<aws_sdk_dynamodb::Client>>,
    /// The worker's: wakes the sweeper for a timer due before the next tick.
    pub waker: Option<Arc<dyn Waker>>,
    /// The remote actions' clients (their call counts), when the action map binds any.
    pub remote: Option<harel_remote::Clients>,
    /// The relay's bus, when events are on (`HAREL_EVENT_BUS`).
    pub bus: Option<harel_lambda::eventbridge::EventBridgeBus>,
    /// The sweeper's: the schedules it starts (`HAREL_SCHEDULES_FILE`), with their marks.
    pub schedules: Option<crate::sweeper::ScheduledStarts>,
    /// The API's webhooks (`HAREL_HOOKS_FILE`), checked against the machines, their secrets
    /// read.
    pub hooks: Option<harel_hooks::Hooks>,
    /// The API's callback key (`HAREL_CALLBACK_SECRET`): it opens the tokens the worker makes.
    pub callback_key: Option<harel_hooks::CallbackKey>,
}

impl Services {
    /// When a scheduled invocation must stop working: its deadline (epoch milliseconds, from
    /// the Lambda context) less the configured reserve, so it returns before Lambda kills it.
    pub fn work_deadline(&self, invocation_deadline_ms: u64) -> Instant {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let remaining = Duration::from_millis(invocation_deadline_ms.saturating_sub(now_ms));
        harel_lambda::relay::deadline_with_reserve(remaining, self.config.time_reserve)
    }

    /// The worker these services make (the sweeper's waker attached when there is one).
    pub fn into_worker(self) -> Arc<AppWorker> {
        let worker = Worker::new(
            self.store,
            self.transport,
            self.driver,
            self.idempotency,
            self.config,
        );
        Arc::new(match self.waker {
            Some(waker) => worker.with_waker(waker),
            None => worker,
        })
    }
}

/// The functions' logs (harel_lambda::logging): flat JSON lines on stdout with the
/// invocation's and the record's fields, at the level of `AWS_LAMBDA_LOG_LEVEL`,
/// `HAREL_LOG_LEVEL` or `RUST_LOG` (default `info`), as text if `AWS_LAMBDA_LOG_FORMAT=Text`.
pub fn init_tracing() {
    harel_lambda::logging::init(&harel_lambda::logging::LogSettings::from_env());
}

/// The engine with the compiled-in machines and Rust actions, checked.
pub fn driver() -> Result<AppDriver, BootError> {
    let app = Application::compiled()?;
    checked(Driver::new(app.machines, app.actions))
}

/// The engine with the compiled-in machines and Rust actions plus what the deployment
/// brings: the machines of `definitions_dir` and the remote actions of the action map
/// (`actions_file`, else the one in `definitions_dir`). Header values of the map are read
/// from the process environment (`env:`) and from AWS (`ssm:`, `secretsmanager:`, through
/// `sdk`; only when `runs_actions`: the sweeper runs none and has no grant to read them).
/// Checked: every action a machine names must be bound.
pub async fn driver_with(
    definitions_dir: Option<&Path>,
    actions_file: Option<&Path>,
    sdk: Option<&aws_config::SdkConfig>,
    runs_actions: bool,
) -> Result<(AppDriver, Option<harel_remote::Clients>), BootError> {
    let app = Application::compiled()?;
    driver_for(app, definitions_dir, actions_file, sdk, runs_actions).await
}

/// [`driver_with`] for `app` instead of the compiled-in application (a test's machines
/// added to it).
pub async fn driver_for(
    app: Application,
    definitions_dir: Option<&Path>,
    actions_file: Option<&Path>,
    sdk: Option<&aws_config::SdkConfig>,
    runs_actions: bool,
) -> Result<(AppDriver, Option<harel_remote::Clients>), BootError> {
    let Application {
        machines: mut definitions,
        actions: mut registry,
    } = app;
    if let Some(dir) = definitions_dir {
        for defn in machines::dir_definitions(dir)? {
            if definitions.iter().any(|d| d.id == defn.id) {
                return Err(BootError::DuplicateMachine {
                    id: defn.id.clone(),
                    file: dir.display().to_string(),
                });
            }
            definitions.push(defn);
        }
    }
    let map_file = match (actions_file, definitions_dir) {
        (Some(file), _) => Some(file.to_path_buf()),
        (None, Some(dir)) => harel_remote::map_in_dir(dir)?,
        (None, None) => None,
    };
    bind_callback_token(&mut registry, sdk, runs_actions).await?;
    let mut remote = None;
    if let Some(file) = map_file {
        let map = harel_remote::ActionMap::load(&file)?;
        let clients = harel_remote::Clients::new(sdk);
        // `ssm:` and `secretsmanager:` header values: read once, here (cold start)
        let secrets = match runs_actions {
            true => harel_remote::Secrets::resolve(&map, sdk).await?,
            false => harel_remote::Secrets::unread(),
        };
        harel_remote::bind(
            &mut registry,
            &map,
            &clients,
            |name| std::env::var(name).ok(),
            &secrets,
        )?;
        tracing::info!(
            file = %file.display(),
            actions = map.bindings.len(),
            "remote actions bound"
        );
        remote = Some(clients);
    }
    Ok((checked(Driver::new(definitions, registry))?, remote))
}

/// `harel.lib.callback_token`, when the stack has a callback secret
/// (`HAREL_CALLBACK_SECRET`, read once here); without one a machine naming it fails the
/// unbound-actions check at cold start. A function that runs no action (the sweeper) reads
/// no secret: its binding fails if ever called.
async fn bind_callback_token(
    registry: &mut harel_runtime::ActionRegistry,
    sdk: Option<&aws_config::SdkConfig>,
    runs_actions: bool,
) -> Result<(), BootError> {
    use harel_hooks::callback;
    if !runs_actions {
        if std::env::var_os(callback::SECRET_VAR).is_some() {
            registry.register_fn(callback::CALLBACK_TOKEN, |_ctx, _event, _inputs| {
                Err(harel_runtime::ActionError::new(
                    "RuntimeError",
                    "this function runs no action (callback tokens are made by the worker)",
                ))
            });
        }
        return Ok(());
    }
    let reader = sdk.map(harel_remote::AwsReader::new);
    if let Some(key) = harel_hooks::CallbackKey::from_env(reader.as_ref()).await? {
        callback::register(registry, key, Arc::new(harel_runtime::SystemClock));
        tracing::info!("callback tokens enabled");
    }
    Ok(())
}

/// Add the remote actions' calls since the last invocation to its metrics (documents with
/// dimensions `Function, Action`): `RemoteCalls`, `RemoteErrors`, `RemoteRetries`,
/// `RemoteLatency`.
pub fn record_remote(
    metrics: &mut harel_lambda::metrics::InvocationMetrics,
    stats: std::collections::BTreeMap<String, harel_remote::CallStats>,
) {
    use harel_lambda::metrics::{REMOTE_CALLS, REMOTE_ERRORS, REMOTE_LATENCY, REMOTE_RETRIES};
    for (action, s) in stats {
        metrics.action_count(&action, REMOTE_CALLS, s.calls);
        metrics.action_count(&action, REMOTE_ERRORS, s.errors);
        metrics.action_count(&action, REMOTE_RETRIES, s.retries);
        for ms in s.latency_ms {
            metrics.action_time(&action, REMOTE_LATENCY, ms);
        }
    }
}

fn checked(driver: AppDriver) -> Result<AppDriver, BootError> {
    let unbound = driver.unbound_actions();
    if !unbound.is_empty() {
        let list: Vec<String> = unbound.iter().map(|(m, a)| format!("{m}: {a}")).collect();
        return Err(BootError::Unbound(list.join(", ")));
    }
    let refused = driver.invalid_action_inputs();
    if !refused.is_empty() {
        let list: Vec<String> = refused.iter().map(|(m, p)| format!("{m}: {p}")).collect();
        return Err(BootError::ActionInputs(list.join("; ")));
    }
    Ok(driver)
}

/// Cold start of a function in `role`: its configuration from the environment, the SDK's from
/// the standard chain, then [`boot_with`].
pub async fn boot(role: Role) -> Result<Services, BootError> {
    let config = Config::from_env(role)?;
    // the SDK's standard chain: AWS_REGION, credentials, AWS_ENDPOINT_URL for local endpoints;
    // HAREL_ENDPOINT_URL, which the template declares (empty in AWS) so that sam local invoke
    // passes events/env.json's moto endpoint, before it
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(url) = std::env::var(harel_stack::LOCAL_ENDPOINT_URL)
        .ok()
        .filter(|u| !u.trim().is_empty())
    {
        loader = loader.endpoint_url(url);
    }
    let sdk = loader.load().await;
    boot_with(role, config, &sdk).await
}

/// [`boot`] from a configuration already read and the SDK's (tests on moto boot the
/// functions' own wiring this way, without touching the process environment).
pub async fn boot_with(
    role: Role,
    config: Config,
    sdk: &aws_config::SdkConfig,
) -> Result<Services, BootError> {
    boot_app(Application::compiled()?, role, config, sdk).await
}

/// [`boot_with`] running `app` instead of the compiled-in application (the functions' own
/// wiring with a test's machines added).
pub async fn boot_app(
    app: Application,
    role: Role,
    config: Config,
    sdk: &aws_config::SdkConfig,
) -> Result<Services, BootError> {
    // the worker and the relay (a child's start) commit steps: with the trace on, each
    // carries its entry, in the store's ring of `trace_max`
    let (driver, remote) = driver_for(
        app,
        config.definitions_dir.as_deref(),
        config.actions_file.as_deref(),
        Some(sdk),
        // the sweeper only fires timers and the API only checks and enqueues: neither runs an
        // action, so neither reads a header secret
        matches!(role, Role::Worker | Role::Relay),
    )
    .await?;
    let driver = driver.with_trace(config.trace);
    // with Tracing: Active, every DynamoDB call (store, idempotency) and SQS call is an X-Ray
    // subsegment of the invocation (harel_lambda::xray); outside Lambda, plain clients
    let xray = harel_lambda::xray::XrayInterceptor::from_env();
    let mut dynamodb_conf = aws_sdk_dynamodb::config::Builder::from(sdk);
    let mut sqs_conf = aws_sdk_sqs::config::Builder::from(sdk);
    if let Some(x) = &xray {
        dynamodb_conf = dynamodb_conf.interceptor(x.clone());
        sqs_conf = sqs_conf.interceptor(x.clone());
    }
    let dynamodb = aws_sdk_dynamodb::Client::from_conf(dynamodb_conf.build());
    let mut store = DynamoDbStore::new(dynamodb.clone(), &config.table_prefix)?
        .with_trace_max(config.trace_max)
        .with_retention(config.retention)
        .with_due_shards(config.timer_shards)?
        .with_commit_mode(config.commit_mode);
    // every writer writes the events of its commits; only the relay puts them
    if let Some(events) = &config.events {
        store = store.with_events(events.store.clone());
    }
    let sqs = aws_sdk_sqs::Client::from_conf(sqs_conf.build());
    let bus = match &config.events {
        Some(events) if role == Role::Relay => {
            let mut conf = aws_sdk_eventbridge::config::Builder::from(sdk);
            if let Some(x) = &xray {
                conf = conf.interceptor(x.clone());
            }
            Some(harel_lambda::eventbridge::EventBridgeBus::new(
                aws_sdk_eventbridge::Client::from_conf(conf.build()),
                events.bus.clone(),
                sqs.clone(),
                events.dlq_url.clone().unwrap_or_default(),
            ))
        }
        _ => None,
    };
    let mut transport = SqsTransport::new(sqs, config.queue_url.clone());
    if let Some(dlq) = &config.dlq_url {
        transport = transport.with_dead_letter_queue(dlq.clone());
    }
    let idempotency = match &config.idempotency_table {
        Some(table) if role == Role::Worker => {
            let layer = DynamoDbPersistenceLayer::new(dynamodb.clone(), table.clone());
            let settings = IdempotencyConfig::default()
                .event_key_jmespath("messageId")
                .expires_after_seconds(config.idempotency_expiry.as_secs());
            Some(Idempotency::new(layer, settings, "harel_worker")?)
        }
        _ => None,
    };
    // the sweeper's schedules, checked against the machines the worker will run
    let schedules = match &config.schedules_file {
        Some(file) if role == Role::Sweeper => {
            let lookup = |machine: &str| driver.definition(machine).cloned();
            let schedules = harel_schedule::load(file, Some(&lookup))?;
            tracing::info!(file = %file.display(), schedules = schedules.entries.len(), "schedules loaded");
            Some(crate::sweeper::ScheduledStarts {
                schedules,
                marks: harel_schedule::DynamoDbMarks::new(dynamodb.clone(), &config.table_prefix),
            })
        }
        _ => None,
    };
    let (hooks, callback_key) = match role {
        Role::Api => ingress(&config, &driver, sdk).await?,
        _ => (None, None),
    };
    let waker = match &config.sweeper_function {
        Some(function) if role == Role::Worker => {
            Some(Arc::new(LambdaWaker::from_sdk(sdk, function.clone())) as Arc<dyn Waker>)
        }
        _ => None,
    };
    Ok(Services {
        config,
        store,
        transport,
        driver,
        idempotency,
        waker,
        remote,
        bus,
        schedules,
        hooks,
        callback_key,
    })
}

/// The API's outside-world routes: the hooks file (its kinds checked against the machines
/// the worker runs, each secret read once, here) and the callback key. Both optional.
async fn ingress(
    config: &Config,
    driver: &AppDriver,
    sdk: &aws_config::SdkConfig,
) -> Result<(Option<harel_hooks::Hooks>, Option<harel_hooks::CallbackKey>), BootError> {
    let reader = harel_remote::AwsReader::new(sdk);
    let hooks = match &config.hooks_file {
        Some(file) => {
            let parsed = harel_hooks::HooksFile::load(file)?;
            parsed.check(&|machine| driver.definition(machine).cloned())?;
            let hooks = harel_hooks::Hooks::resolve(parsed, Some(&reader))
                .await
                .map_err(BootError::HookSecret)?;
            tracing::info!(
                file = %file.display(),
                hooks = hooks.names().collect::<Vec<_>>().join(","),
                "webhooks loaded"
            );
            Some(hooks)
        }
        None => None,
    };
    let key = harel_hooks::CallbackKey::from_env(Some(&reader)).await?;
    if key.is_some() {
        tracing::info!("callback completions enabled");
    }
    Ok((hooks, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_calls_are_counted_per_action() {
        let mut metrics = harel_lambda::metrics::InvocationMetrics::new("worker", 1);
        let stats = std::collections::BTreeMap::from([(
            "billing.charge".to_string(),
            harel_remote::CallStats {
                calls: 3,
                errors: 1,
                retries: 2,
                latency_ms: vec![5.0, 6.0, 7.0],
                ..Default::default()
            },
        )]);
        record_remote(&mut metrics, stats);
        let docs = metrics.documents().expect("valid");
        let action = docs
            .iter()
            .find(|d| d["Action"] == "billing.charge")
            .expect("the action's document");
        assert_eq!(action["RemoteCalls"], 3.0);
        assert_eq!(action["RemoteErrors"], 1.0);
        assert_eq!(action["RemoteRetries"], 2.0);
        assert_eq!(action["RemoteLatency"], serde_json::json!([5.0, 6.0, 7.0]));
    }

    #[test]
    fn every_machine_loads_and_every_action_is_bound() {
        let driver = driver().expect("the application boots");
        let mut ids: Vec<&str> = driver.machine_ids().collect();
        ids.sort();
        assert_eq!(ids, vec!["Approval", "Fulfilment", "Order", "ShopOrder"]);
    }
}
