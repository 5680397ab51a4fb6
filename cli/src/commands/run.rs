//! `harel run`: drive a machine with events over the in-memory store, printing each step
//! as harel's CLI does (`(start)              -> Path`, `{kind:<20} -> Path`, then
//! `status: DONE  outcome: success`).
//!
//! Beyond harel: `--json` prints the final Execution as harel JSON on stdout (the step lines
//! go to stderr); `-e +30s` advances the clock (s, m or h) and sweeps the timers due at the
//! new time once; actions with no implementation are no-ops returning null (one note on
//! stderr) unless `--strict`, while `harel.lib.*` stay real; `--selector NAME=VALUE` fixes
//! what a selector returns (successive flags for one NAME: successive calls, the last value
//! then repeating; an unconfigured selector returns null). `--json --children` prints a
//! list instead: the execution, then every child it spawned (regions, submachines, fan-out
//! instances), by id. A submachine is resolved among the machine's inline and imported
//! machines and the file's other machines.
//!
//! Every argument is checked before anything runs: a bad one is `error: ...`, exit 1.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use super::create::json_object;
use anyhow::{anyhow, bail, Context as _};
use harel_dynamodb::DynamoDbStore;
use harel_lang::{load_file_with, validate_or_raise, LoadOptions};
use harel_model::schema::{check_context, check_event, with_defaults};
use harel_model::{Definition, Event, Execution, Object};
use harel_runtime::{
    Action, ActionContext, ActionFuture, ActionRegistry, Clock, DurableRunner, ManualClock,
    RuntimeError, SystemClock,
};
use harel_store::{ExecutionStore, MemoryStore};

use super::show::{StoreArgs, StoreKind};
use serde_json::Value;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The .stm file
    pub file: PathBuf,
    /// The machine to run (the file's only machine when omitted)
    pub name: Option<String>,
    /// An event to deliver (repeatable): KIND, KIND:'{...}' with data, or +30s (also m, h)
    /// to advance the clock and fire the timers then due
    #[arg(
        short = 'e',
        long = "event",
        value_name = "KIND[:JSON]",
        allow_hyphen_values = true
    )]
    pub events: Vec<String>,
    /// Initial context as a JSON object
    #[arg(long, value_name = "JSON")]
    pub seed: Option<String>,
    /// Validate the machine before running it
    #[arg(long)]
    pub validate: bool,
    /// Print the final Execution as harel JSON on stdout (the steps go to stderr)
    #[arg(long)]
    pub json: bool,
    /// With --json: print a JSON list of the execution and every child it spawned (regions,
    /// submachines, fan-out instances, theirs in turn), ordered by id
    #[arg(long, requires = "json")]
    pub children: bool,
    /// Refuse to run a machine whose actions have no implementation here
    #[arg(long)]
    pub strict: bool,
    /// An action map (.json, .toml, .yaml): actions it binds call their remote function
    /// (lambda:NAME-or-ARN or an http(s):// endpoint) with harel's FaaS contract, as the
    /// deployed functions do
    #[arg(long, value_name = "MAP")]
    pub actions: Option<PathBuf>,
    /// What a selector returns: NAME is its dotted path as written or bound, or the bare
    /// handler name; VALUE is JSON when it parses, else a string (repeatable)
    #[arg(long = "selector", value_name = "NAME=VALUE")]
    pub selectors: Vec<String>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Continue this execution when the store has it, else create it under this id
    #[arg(long, value_name = "ID")]
    pub execution_id: Option<String>,
}

/// One `-e` step (also a line of `harel console --seed`).
pub(crate) enum Step {
    Event(Box<Event>),
    Advance { label: String, seconds: f64 },
}

/// `+30`, `+30s`, `+1.5m`, `+2h` (as the differential harness reads them).
fn duration(spec: &str) -> Option<f64> {
    let rest = spec.strip_prefix('+')?;
    let (num, unit) = match rest.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&rest[..i], c),
        _ => (rest, 's'),
    };
    let factor = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        _ => return None,
    };
    let valid = !num.is_empty()
        && !num.starts_with('.')
        && !num.ends_with('.')
        && num.chars().all(|c| c.is_ascii_digit() || c == '.')
        && num.matches('.').count() <= 1;
    valid.then(|| num.parse::<f64>().ok().map(|n| n * factor))?
}

pub(crate) fn parse_step(spec: &str) -> anyhow::Result<Step> {
    if spec.starts_with('+') {
        let seconds = duration(spec).ok_or_else(|| {
            anyhow!("-e {spec}: a clock step is +N with an optional unit s, m or h (e.g. +30s)")
        })?;
        return Ok(Step::Advance {
            label: spec.to_string(),
            seconds,
        });
    }
    Ok(Step::Event(Box::new(match spec.split_once(':') {
        Some((kind, raw)) => {
            Event::new(kind).with_data(json_object(raw, &format!("the data of -e {kind}"))?)
        }
        None => Event::new(spec),
    })))
}

/// Every selector's function, and every hook's, in the Definitions.
fn action_names<'a>(
    defns: impl IntoIterator<Item = &'a Definition>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut hooks, mut selectors) = (BTreeSet::new(), BTreeSet::new());
    for node in defns.into_iter().flat_map(|d| &d.nodes) {
        for a in [&node.on_enter, &node.on_exit, &node.on_activity]
            .into_iter()
            .flatten()
        {
            hooks.insert(a.function.clone());
        }
        for t in &node.transitions {
            if let Some(sel) = &t.selector {
                selectors.insert(sel.action.function.clone());
            }
        }
    }
    (hooks, selectors)
}

/// A selector fixed from the command line: successive answers, the last one repeating.
struct FixedAnswers(Mutex<VecDeque<Value>>);

impl Action for FixedAnswers {
    fn call<'a>(
        &'a self,
        _ctx: ActionContext<'a>,
        _event: Option<&'a Event>,
        _inputs: &'a Object,
    ) -> ActionFuture<'a> {
        let mut queue = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let answer = if queue.len() > 1 {
            queue.pop_front()
        } else {
            queue.front().cloned()
        };
        Box::pin(std::future::ready(Ok(answer.unwrap_or(Value::Null))))
    }
}

/// What an action with no implementation does here: nothing, returning null.
pub(crate) struct NoOp;

impl Action for NoOp {
    fn call<'a>(
        &'a self,
        _ctx: ActionContext<'a>,
        _event: Option<&'a Event>,
        _inputs: &'a Object,
    ) -> ActionFuture<'a> {
        Box::pin(std::future::ready(Ok(Value::Null)))
    }
}

/// The actions of this run: harel.lib, the fixed selectors, and no-ops for the rest.
fn registry(
    defns: &[&Definition],
    binding: impl Fn(&str) -> Option<String>,
    selector_specs: &[String],
    strict: bool,
    remote: Option<&Remote>,
) -> anyhow::Result<(ActionRegistry, Vec<String>)> {
    let (hooks, selectors) = action_names(defns.iter().copied());
    let mut answers: HashMap<String, VecDeque<Value>> = HashMap::new();
    let mut order = Vec::new();
    for spec in selector_specs {
        let (name, raw) = spec
            .split_once('=')
            .ok_or_else(|| anyhow!("--selector {spec:?} is not NAME=VALUE"))?;
        // a bare handler name stands for the path its `bind` maps it to
        let canonical = binding(name).unwrap_or_else(|| name.to_string());
        if !selectors.contains(&canonical) {
            let known: Vec<&str> = selectors.iter().map(String::as_str).collect();
            bail!(
                "--selector {name}: no selector of this machine calls it (its selectors: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        if !answers.contains_key(&canonical) {
            order.push(canonical.clone());
        }
        answers.entry(canonical).or_default().push_back(value);
    }
    let mut registry = ActionRegistry::with_stdlib();
    if let Some(remote) = remote {
        if let Some(name) = order.iter().find(|n| remote.map.get(n).is_some()) {
            bail!(
                "--selector {name}: the action map {} binds it to a remote function; drop one of the two",
                remote.map.origin
            );
        }
        harel_remote::bind(
            &mut registry,
            &remote.map,
            &remote.clients,
            |name| std::env::var(name).ok(),
            &remote.secrets,
        )?;
    }
    for name in order {
        let queue = answers.remove(&name).unwrap_or_default();
        registry.register_action(name, Arc::new(FixedAnswers(Mutex::new(queue))));
    }
    let unimplemented: Vec<String> = hooks
        .iter()
        .chain(&selectors)
        .filter(|n| !registry.contains(n))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if strict && !unimplemented.is_empty() {
        bail!(
            "--strict: no implementation for {} (harel run implements only harel.lib.*, the selectors fixed with --selector and the actions of --actions)",
            unimplemented.join(", ")
        );
    }
    registry.set_fallback(Arc::new(NoOp));
    Ok((registry, unimplemented))
}

/// The remote actions of `--actions`: the map and the clients that call its targets.
pub(crate) struct Remote {
    pub(crate) map: harel_remote::ActionMap,
    pub(crate) clients: harel_remote::Clients,
    /// The map's `ssm:` and `secretsmanager:` header values, read once.
    pub(crate) secrets: harel_remote::Secrets,
}

impl Remote {
    /// The AWS SDK's configuration is loaded only when the map names a Lambda or reads a
    /// header value from SSM or Secrets Manager.
    pub(crate) async fn load(path: &std::path::Path) -> anyhow::Result<Remote> {
        let map = harel_remote::ActionMap::load(path)?;
        let needs_aws = map.lambda_targets().next().is_some()
            || map
                .bindings
                .iter()
                .any(|b| b.headers.iter().any(|(_, source)| source.is_aws()));
        let sdk = match needs_aws {
            true => Some(aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await),
            false => None,
        };
        let clients = harel_remote::Clients::new(sdk.as_ref());
        let secrets = harel_remote::Secrets::resolve(&map, sdk.as_ref()).await?;
        Ok(Remote {
            map,
            clients,
            secrets,
        })
    }
}

fn path_text(exe: &Execution) -> &str {
    exe.active_path.as_deref().unwrap_or("None")
}

pub async fn execute(args: RunArgs) -> anyhow::Result<ExitCode> {
    let options = LoadOptions {
        allow_unbound_actions: true,
        ..LoadOptions::default()
    };
    let loaded = load_file_with(&args.file, args.name.as_deref(), &options)?;
    let defn = loaded.definition;
    if args.validate {
        validate_or_raise(&defn)?;
    }
    // every argument is checked before anything runs
    let seed = args
        .seed
        .as_deref()
        .map(|raw| json_object(raw, "--seed"))
        .transpose()?;
    let steps = args
        .events
        .iter()
        .map(|s| parse_step(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let initial = with_defaults(&defn.context_schema, &seed.clone().unwrap_or_default());
    // (an --execution-id that exists needs no initial context; a new one is checked by create)
    if let (None, Err(e)) = (
        &args.execution_id,
        check_context(&defn.context_schema, &initial, true),
    ) {
        bail!("{e} (give the initial context with --seed '{{...}}')");
    }
    for step in &steps {
        if let Step::Event(ev) = step {
            check_event(&defn.events, &ev.kind, &ev.data)?;
        }
    }
    // a submachine resolves among the file's other machines too (as a worker's registry
    // holds every machine of its files by name), besides the inline and imported ones
    // the Definition carries; one that does not load is skipped (invoking it then fails
    // with its name)
    let mut machines = vec![defn];
    for other in loaded.program.machines.keys() {
        if *other == loaded.name {
            continue;
        }
        match load_file_with(&args.file, Some(other), &options) {
            Ok(l) => machines.push(l.definition),
            Err(e) => eprintln!("note: machine {other} of this file is not runnable here: {e}"),
        }
    }
    let remote = match &args.actions {
        Some(path) => Some(Remote::load(path).await?),
        None => None,
    };
    let registered = harel_runtime::register(machines.iter().cloned());
    let every: Vec<&Definition> = registered.values().map(|d| d.as_ref()).collect();
    let (registry, unimplemented) = registry(
        &every,
        |name| loaded.bindings.get(name).cloned(),
        &args.selectors,
        args.strict,
        remote.as_ref(),
    )?;

    let clock = ManualClock::new(SystemClock.now());
    match args.store.store {
        StoreKind::Memory => {
            drive(
                MemoryStore::new(),
                machines,
                registry,
                clock,
                seed,
                steps,
                unimplemented,
                &args,
            )
            .await
        }
        StoreKind::Dynamodb => {
            // the stack's commit mode, as the functions read it: a run on a lean stack's
            // tables keeps its marks where the functions look for them
            let mode = match std::env::var(harel_stack::COMMIT_MODE) {
                Ok(v) if !v.trim().is_empty() => v.parse().map_err(|e| {
                    super::exit::usage(format_args!("{}={v:?}: {e}", harel_stack::COMMIT_MODE))
                })?,
                _ => harel_stack::CommitMode::default(),
            };
            // endpoint and region from the SDK's standard configuration; tables created if missing
            let store = DynamoDbStore::create(
                None,
                &args.store.table_prefix,
                3,
                std::time::Duration::from_millis(500),
            )
            .await
            .with_context(|| {
                format!("opening the DynamoDB tables {}_*", args.store.table_prefix)
            })?;
            let store = store.with_commit_mode(mode);
            drive(
                store,
                machines,
                registry,
                clock,
                seed,
                steps,
                unimplemented,
                &args,
            )
            .await
        }
    }
}

/// Run the steps over `store`: one code path whatever the store.
#[allow(clippy::too_many_arguments)]
async fn drive<S: ExecutionStore>(
    store: S,
    machines: Vec<Definition>,
    registry: ActionRegistry,
    clock: ManualClock,
    seed: Option<Object>,
    steps: Vec<Step>,
    unimplemented: Vec<String>,
    args: &RunArgs,
) -> anyhow::Result<ExitCode> {
    let definition_id = machines
        .first()
        .map(|d| d.id.clone())
        .context("no machine to run")?;
    // an in-memory run outlives no deploy: no pin, and harel's document byte for byte
    let pinning = matches!(args.store.store, StoreKind::Dynamodb);
    let runner = DurableRunner::new(store, machines)
        .with_pinning(pinning)
        .with_registry(registry)
        .with_clock(Arc::new(clock.clone()));

    let mut out: Box<dyn std::io::Write> = if args.json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    if !unimplemented.is_empty() {
        eprintln!(
            "note: no implementation here for {}: run as no-ops returning null",
            unimplemented.join(", ")
        );
    }
    let existing = match &args.execution_id {
        Some(id) => runner.get(id).await?,
        None => None,
    };
    let mut exe = match existing {
        Some(exe) => {
            if exe.definition_id != definition_id {
                bail!(
                    "execution {:?} runs {:?}, not {definition_id:?}",
                    exe.id,
                    exe.definition_id
                );
            }
            if seed.is_some() {
                bail!(
                    "--seed only sets the context of a new execution; {:?} exists",
                    exe.id
                );
            }
            writeln!(out, "(loaded)             -> {}", path_text(&exe))?;
            exe
        }
        None => {
            let exe = match runner
                .create(&definition_id, seed, args.execution_id.as_deref())
                .await
            {
                Ok(exe) => exe,
                Err(RuntimeError::Context(e)) => {
                    bail!("{e} (give the initial context with --seed '{{...}}')")
                }
                Err(e) => return Err(e.into()),
            };
            writeln!(out, "(start)              -> {}", path_text(&exe))?;
            exe
        }
    };
    for step in steps {
        match step {
            Step::Event(ev) => {
                exe = runner.process(&exe.id, &ev).await?;
                writeln!(out, "{:<20} -> {}", ev.kind, path_text(&exe))?;
            }
            Step::Advance { label, seconds } => {
                clock.advance(seconds);
                runner.fire_due_timers().await?;
                exe = runner
                    .get(&exe.id)
                    .await?
                    .context("the execution disappeared from the store")?;
                writeln!(out, "{label:<20} -> {}", path_text(&exe))?;
            }
        }
    }
    writeln!(
        out,
        "status: {}  outcome: {}",
        exe.status,
        exe.outcome.as_deref().unwrap_or("None")
    )?;
    if args.children {
        let mut ids = runner
            .store()
            .ids_with_prefix(&format!("{}:", exe.id))
            .await?;
        ids.sort();
        let mut docs = vec![exe.to_json()];
        for id in ids {
            if let Some(child) = runner.get(&id).await? {
                docs.push(child.to_json());
            }
        }
        println!("[{}]", docs.join(","));
    } else if args.json {
        println!("{}", exe.to_json());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("+30s"), Some(30.0));
        assert_eq!(duration("+30"), Some(30.0));
        assert_eq!(duration("+1.5m"), Some(90.0));
        assert_eq!(duration("+2h"), Some(7200.0));
        assert_eq!(duration("+x"), None);
        assert_eq!(duration("+3d"), None);
        assert_eq!(duration("+.5s"), None);
        assert_eq!(duration("+"), None);
    }

    #[test]
    fn event_specs() {
        assert!(
            matches!(parse_step("Go").unwrap(), Step::Event(e) if e.kind == "Go" && e.data.is_empty())
        );
        let Step::Event(e) = parse_step(r#"Pay:{"n": 1}"#).unwrap() else {
            panic!("an event")
        };
        assert_eq!(e.data["n"], serde_json::json!(1));
        assert_eq!(
            parse_step("Pay:[1]").err().unwrap().to_string(),
            "the data of -e Pay must be a JSON object, got list"
        );
        assert!(parse_step("Pay:{")
            .err()
            .unwrap()
            .to_string()
            .starts_with("the data of -e Pay is not valid JSON"));
    }
}
