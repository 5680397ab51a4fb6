//! `harel console --store memory --machines DIR`: the console over an in-memory store that
//! this process drives, to look at machines without a stack. It is seeded as `harel run` runs:
//! each seed line creates one execution and delivers its `-e` steps in order (an event, or
//! `+30s` to move the demo's clock and fire what is then due):
//!
//! ```text
//! # MACHINE [--id ID] [--context JSON] [-e KIND[:JSON] | -e +30s]...
//! Order --id ord-1 -e PlaceOrder
//! Fulfilment --id ful-1 --context '{"items": 3}'
//! ```
//!
//! Lines come from `--seed FILE` (blank lines and `#` comments skipped) and `--run LINE`,
//! split as a shell splits words. Events run inline (regions, children and emits delivered at
//! once, as `harel run` does); the demo's clock then follows the wall clock, and due timers
//! fire every second. Actions other than `harel.lib.*` are no-ops returning null; there is no
//! queue, so no dead letters.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use clap::Parser;
use harel_model::{Definition, Event, Execution};
use harel_runtime::{ActionRegistry, Clock, DurableRunner, ManualClock, RuntimeError, SystemClock};
use harel_store::MemoryStore;

use crate::commands::create::json_object;
use crate::commands::run::{parse_step, NoOp, Step};

/// One seed line: what `harel run` takes for one execution, the machine named not loaded.
#[derive(Parser, Debug)]
#[command(no_binary_name = true, disable_help_flag = true)]
struct SeedLine {
    /// The machine (one of --machines)
    machine: String,
    /// The execution id (default: a fresh one)
    #[arg(long)]
    id: Option<String>,
    /// The initial context, a JSON object
    #[arg(long, value_name = "JSON")]
    context: Option<String>,
    /// A step: KIND, KIND:'{...}', or +30s (also m, h)
    #[arg(
        short = 'e',
        long = "event",
        value_name = "KIND[:JSON]",
        allow_hyphen_values = true
    )]
    events: Vec<String>,
}

/// A seed line and where it was written, for messages.
pub struct Line {
    pub origin: String,
    pub text: String,
}

/// The lines of a seed file, numbered.
pub fn read_seed(path: &Path) -> anyhow::Result<Vec<Line>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        crate::commands::exit::usage(format_args!("--seed {}: {e}", path.display()))
    })?;
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(i, l)| Line {
            origin: format!("{}:{}", path.display(), i + 1),
            text: l.to_string(),
        })
        .collect())
}

pub struct Demo {
    runner: DurableRunner<Arc<MemoryStore>>,
    clock: ManualClock,
    /// How far the seed's `+30s` steps moved the clock ahead of the wall clock.
    ahead: f64,
}

impl Demo {
    /// The runner over the machines, seeded; every line is checked and run in order, the
    /// first that fails stops the start (nothing half-seeded is served).
    pub async fn seeded(machines: Vec<Definition>, lines: &[Line]) -> anyhow::Result<Demo> {
        if machines.is_empty() {
            return Err(crate::commands::exit::usage(
                "--store memory needs the machines to run: --machines DIR (or HAREL_MACHINES)",
            ));
        }
        let mut registry = ActionRegistry::with_stdlib();
        registry.set_fallback(Arc::new(NoOp));
        let clock = ManualClock::new(SystemClock.now());
        let runner = DurableRunner::new(Arc::new(MemoryStore::new()), machines)
            .with_registry(registry)
            .with_clock(Arc::new(clock.clone()))
            // the execution page's timeline
            .with_trace(true);
        for line in lines {
            seed_one(&runner, &clock, &line.text)
                .await
                .with_context(|| format!("seed {}: {}", line.origin, line.text.trim()))?;
        }
        let ahead = clock.now() - SystemClock.now();
        Ok(Demo {
            runner,
            clock,
            ahead,
        })
    }

    pub fn store(&self) -> &Arc<MemoryStore> {
        self.runner.store()
    }

    /// The demo's time: the wall clock plus what the seed advanced it.
    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Fire the timers due by now; what the stack's sweeper does.
    async fn tick(&self) -> Result<usize, RuntimeError> {
        self.clock.set(SystemClock.now() + self.ahead);
        self.runner.fire_due_timers().await
    }

    /// Deliver `event` inline, as the worker would from the queue.
    pub async fn send(&self, id: &str, event: &Event) -> Result<Execution, RuntimeError> {
        self.runner.process(id, event).await
    }

    /// Deliver what a control command left in the outbox (a cooperative cancel's `Cancel`):
    /// the stack's relay publishes it, the demo runs it at once.
    pub async fn settle(&self) -> Result<(), RuntimeError> {
        self.runner.recover().await
    }
}

/// Fire due timers every second for as long as the console runs.
pub fn spawn_ticker(demo: Arc<super::Console>) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            every.tick().await;
            if let Some(d) = demo.backend.demo() {
                if let Err(e) = d.tick().await {
                    eprintln!("demo: firing timers: {e}");
                }
            }
        }
    });
}

async fn seed_one(
    runner: &DurableRunner<Arc<MemoryStore>>,
    clock: &ManualClock,
    text: &str,
) -> anyhow::Result<()> {
    let words = shlex::split(text).ok_or_else(|| anyhow!("unbalanced quotes"))?;
    let line = SeedLine::try_parse_from(words).map_err(|e| anyhow!("{}", e.render()))?;
    let context = line
        .context
        .as_deref()
        .map(|raw| json_object(raw, "--context"))
        .transpose()?;
    let steps = line
        .events
        .iter()
        .map(|s| parse_step(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let exe = runner
        .create(&line.machine, context, line.id.as_deref())
        .await?;
    for step in steps {
        match step {
            Step::Event(ev) => {
                runner.process(&exe.id, &ev).await?;
            }
            Step::Advance { seconds, .. } => {
                clock.advance(seconds);
                runner.fire_due_timers().await?;
            }
        }
    }
    Ok(())
}
