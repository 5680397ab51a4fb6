//! `harel monitor`: executions on the deployed stack in a terminal UI (harel's `harel
//! monitor`, "k9s for statecharts"): the list, refreshed every `--interval`; an execution's
//! statechart with its active configuration, its context and timers; suspend, resume,
//! cancel and terminate from the keyboard (cancel and terminate ask first).
//!
//! `model` reads the store, `view` holds the screens' state, keys and drawing; this file
//! owns the terminal and does the IO the keys ask for.

mod model;
mod view;

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use harel_control::{ControlError, ControlOutcome};
use harel_model::Definition;
use harel_store::ExecutionStore;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::DefaultTerminal;

use super::clock::now;
use super::machines::{MachineArgs, Machines};
use super::stack::{Stack, StackArgs};
use view::{Action, App, Control, Screen};

#[derive(clap::Args)]
pub struct MonitorArgs {
    /// Seconds between refreshes (at least 0.25)
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// At most this many executions listed
    #[arg(long, default_value_t = 200)]
    limit: usize,
    #[command(flatten)]
    machines: MachineArgs,
    #[command(flatten)]
    stack: StackArgs,
}

pub async fn execute(args: MonitorArgs) -> anyhow::Result<ExitCode> {
    if !std::io::stdout().is_terminal() {
        bail!("harel monitor draws on a terminal; for scripts use `harel list --json` and `harel show ID --json`");
    }
    let stack = args.stack.connect().await?;
    let machines = args.machines.load()?;
    let mut terminal = ratatui::init();
    let outcome = run(&mut terminal, &stack, &machines, &args).await;
    // the terminal is given back (raw mode off, main screen) before any error is printed
    ratatui::restore();
    outcome?;
    Ok(ExitCode::SUCCESS)
}

async fn run(
    terminal: &mut DefaultTerminal,
    stack: &Stack,
    machines: &Machines,
    args: &MonitorArgs,
) -> anyhow::Result<()> {
    let interval = Duration::from_secs_f64(args.interval.max(0.25));
    let mut app = App::new();
    if machines.is_empty() {
        // it still lists and controls; say up front what it cannot do
        app.message = Some(
            "no machines given (--machines DIR or HAREL_MACHINES): no statecharts drawn, cancel refused"
                .into(),
        );
    }
    let mut refreshed: Option<Instant> = None;
    loop {
        if !app.paused && refreshed.is_none_or(|t| t.elapsed() >= interval) {
            refresh(&mut app, &stack.store, machines, args.limit).await;
            refreshed = Some(Instant::now());
        }
        terminal.draw(|frame| view::draw(frame, &app))?;
        // short polls keep the refresh on time while waiting for a key
        if !event::poll(Duration::from_millis(100))? {
            continue;
        }
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Ok(());
        }
        match app.on_key(key.code) {
            Action::Nothing => {}
            Action::Quit => return Ok(()),
            Action::Refresh => {
                refresh(&mut app, &stack.store, machines, args.limit).await;
                refreshed = Some(Instant::now());
            }
            Action::Control(command, id) => {
                let defn = machine_of(&stack.store, machines, &id).await;
                app.message = Some(match control(&stack.store, defn, command, &id).await {
                    Ok(out) => {
                        let published = match super::control::publish(stack, &out).await {
                            Ok(true) => " (Cancel published)",
                            Ok(false) => "",
                            Err(_) => " (the relay will publish the Cancel)",
                        };
                        format!("{}{published}", describe(command, &out))
                    }
                    Err(e) => format!("{} failed: {e}", command.name()),
                });
                refresh(&mut app, &stack.store, machines, args.limit).await;
                refreshed = Some(Instant::now());
            }
        }
    }
}

/// The machine of execution `id`, when the monitor knows it (`--machines`, `HAREL_MACHINES`).
async fn machine_of<'m, S: ExecutionStore>(
    store: &S,
    machines: &'m Machines,
    id: &str,
) -> Option<&'m Definition> {
    let exe = store.load(id).await.ok().flatten()?;
    machines.find(&exe.definition_id)
}

/// Read what the screen shows; a store error goes to the status line, the last data stays.
async fn refresh<S: ExecutionStore>(app: &mut App, store: &S, machines: &Machines, limit: usize) {
    match app.screen.clone() {
        Screen::List => match model::list(store, None, limit).await {
            Ok(items) => app.set_items(items),
            Err(e) => app.message = Some(format!("listing failed: {e}")),
        },
        Screen::Detail(id) => {
            match model::detail(store, &id, |exe| machines.find(&exe.definition_id)).await {
                Ok(Some(detail)) => app.detail = Some(detail),
                Ok(None) => {
                    app.message = Some(format!("{id} is gone"));
                    app.screen = Screen::List;
                    app.detail = None;
                }
                Err(e) => app.message = Some(format!("reading {id} failed: {e}")),
            }
        }
    }
}

/// Send `command` to execution `id`. Cancel reads the machine (cooperative when it models
/// `Cancel`): without it, it is refused rather than turned into a terminate.
async fn control<S: ExecutionStore>(
    store: &S,
    machine: Option<&Definition>,
    command: Control,
    id: &str,
) -> anyhow::Result<ControlOutcome> {
    let at = now();
    let out: Result<ControlOutcome, ControlError> = match command {
        Control::Suspend => harel_control::suspend(store, id, at).await,
        Control::Resume => harel_control::resume(store, id, at).await,
        Control::Terminate => harel_control::terminate(store, id, at).await,
        Control::Cancel => match machine {
            Some(defn) => harel_control::cancel(store, defn, id, at).await,
            None => bail!("cancel reads the machine, unknown here: pass --machines DIR or FILE.stm (or set HAREL_MACHINES), or terminate (t)"),
        },
    };
    Ok(out?)
}

fn describe(command: Control, out: &ControlOutcome) -> String {
    if !out.contended.is_empty() {
        return format!(
            "{}: {} kept changing under it, try again",
            command.name(),
            out.contended.join(", ")
        );
    }
    if out.changed() {
        format!("{} {}: done", command.name(), out.execution_id)
    } else {
        format!("{} {}: nothing to do", command.name(), out.execution_id)
    }
}

#[cfg(test)]
mod tests {
    use harel_model::{Execution, Status};
    use harel_store::prelude::*;
    use harel_store::MemoryStore;
    use ratatui::backend::TestBackend;
    use ratatui::crossterm::event::KeyCode;
    use ratatui::Terminal;

    use super::model::{self, Mark, TreeNode};
    use super::view::{self, Action, App, Control, Screen};
    use super::{control, describe};

    const MACHINE: &str = "\
event Go {}
event Cancel {}
machine Flow {
  initial A
  state A {
    initial A1
    state A1 { timeout 60 }
    state A2 {}
    from A1 to A2 on Go
    from A1 to A2 on Timeout
  }
  final B done
  final Stopped cancelled
  from A to B on Go
  from A to Stopped on Cancel
}
";

    fn machine() -> harel_model::Definition {
        harel_lang::load_str(MACHINE, None, "flow.stm").expect("loads")
    }

    fn execution(id: &str, status: Status, active: &str) -> Execution {
        let mut exe = Execution::with_ids(id.into(), "Flow".into());
        exe.status = status;
        exe.active_path = Some(active.into());
        exe.context.insert("amount".into(), 12.into());
        exe
    }

    fn search<'a>(node: &'a TreeNode, name: &str) -> Option<&'a TreeNode> {
        if node.name == name {
            return Some(node);
        }
        node.children.iter().find_map(|c| search(c, name))
    }

    fn find<'a>(node: &'a TreeNode, name: &str) -> &'a TreeNode {
        search(node, name).unwrap_or_else(|| panic!("no state {name}"))
    }

    #[test]
    fn the_tree_marks_the_active_leaf_and_its_ancestors() {
        let tree = model::build_tree(&machine(), &execution("e1", Status::Running, "A.A1"));
        assert_eq!(find(&tree, "A1").mark, Mark::Active);
        assert_eq!(find(&tree, "A").mark, Mark::OnActivePath);
        assert_eq!(find(&tree, "A2").mark, Mark::Inactive);
        assert_eq!(find(&tree, "B").mark, Mark::Inactive);
        // an active path the machine does not have marks nothing
        let stale = model::build_tree(&machine(), &execution("e2", Status::Running, "Gone"));
        assert_eq!(find(&stale, "A").mark, Mark::Inactive);
    }

    async fn status(store: &MemoryStore) -> Status {
        store
            .load("run-1")
            .await
            .expect("load")
            .expect("there")
            .status
    }

    async fn store_with(executions: &[Execution]) -> MemoryStore {
        let store = MemoryStore::new();
        for exe in executions {
            let mut exe = exe.clone();
            store.save(&mut exe).await.expect("save");
        }
        store
    }

    #[tokio::test]
    async fn the_list_and_the_detail_read_the_store() {
        let store = store_with(&[
            execution("run-1", Status::Running, "A.A1"),
            execution("done-1", Status::Done, "B"),
        ])
        .await;
        let mut listed: Vec<String> = model::list(&store, None, 50)
            .await
            .expect("list")
            .into_iter()
            .map(|s| s.id)
            .collect();
        listed.sort();
        assert_eq!(listed, ["done-1", "run-1"]);
        let running = model::list(&store, Some(Status::Running), 50)
            .await
            .expect("list");
        assert_eq!(running.len(), 1);

        let defn = machine();
        let detail = model::detail(&store, "run-1", |_| Some(&defn))
            .await
            .expect("read")
            .expect("there");
        assert_eq!(
            find(detail.tree.as_ref().expect("a tree"), "A1").mark,
            Mark::Active
        );
        let unknown = model::detail(&store, "run-1", |_| None)
            .await
            .expect("read")
            .expect("there");
        assert!(unknown.tree.is_none());
        assert!(model::detail(&store, "nope", |_| None)
            .await
            .expect("read")
            .is_none());
    }

    #[tokio::test]
    async fn commands_change_the_stored_execution() {
        let store = store_with(&[execution("run-1", Status::Running, "A.A1")]).await;
        let out = control(&store, None, Control::Suspend, "run-1")
            .await
            .expect("suspends");
        assert_eq!(describe(Control::Suspend, &out), "suspend run-1: done");
        assert_eq!(status(&store).await, Status::Suspended);
        let again = control(&store, None, Control::Suspend, "run-1")
            .await
            .expect("no-op");
        assert_eq!(
            describe(Control::Suspend, &again),
            "suspend run-1: nothing to do"
        );
        control(&store, None, Control::Resume, "run-1")
            .await
            .expect("resumes");
        assert_eq!(status(&store).await, Status::Running);

        // cancel needs the machine; with it, a modelled Cancel is cooperative
        let err = control(&store, None, Control::Cancel, "run-1")
            .await
            .expect_err("refused");
        assert!(err.to_string().contains("--machines"), "{err}");
        control(&store, Some(&machine()), Control::Cancel, "run-1")
            .await
            .expect("cancels");
        assert_eq!(status(&store).await, Status::Cancelling);
        control(&store, None, Control::Terminate, "run-1")
            .await
            .expect("terminates");
        assert_eq!(status(&store).await, Status::Cancelled);
    }

    fn summary(id: &str, status: Status) -> harel_model::ExecutionSummary {
        harel_model::ExecutionSummary::of(&execution(id, status, "A.A1"))
    }

    #[test]
    fn keys_move_open_filter_and_confirm() {
        let mut app = App::new();
        app.set_items(vec![
            summary("a-1", Status::Running),
            summary("b-2", Status::Done),
        ]);
        assert_eq!(app.on_key(KeyCode::Down), Action::Nothing);
        assert_eq!(app.selected, 1);
        assert_eq!(app.on_key(KeyCode::Down), Action::Nothing);
        assert_eq!(app.selected, 1, "stays on the last row");

        // `/` filters the page by a substring
        app.on_key(KeyCode::Char('/'));
        for c in "done".chars() {
            app.on_key(KeyCode::Char(c));
        }
        app.on_key(KeyCode::Enter);
        let ids: Vec<&str> = app.visible().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["b-2"]);
        assert_eq!(app.on_key(KeyCode::Enter), Action::Refresh);
        assert_eq!(app.screen, Screen::Detail("b-2".into()));

        // s and R act at once; c and t ask first, and only `y` sends
        assert_eq!(
            app.on_key(KeyCode::Char('s')),
            Action::Control(Control::Suspend, "b-2".into())
        );
        assert_eq!(
            app.on_key(KeyCode::Char('R')),
            Action::Control(Control::Resume, "b-2".into())
        );
        assert_eq!(app.on_key(KeyCode::Char('t')), Action::Nothing);
        assert_eq!(app.confirm, Some(Control::Terminate));
        assert_eq!(app.on_key(KeyCode::Char('n')), Action::Nothing);
        assert_eq!(app.confirm, None);
        app.on_key(KeyCode::Char('c'));
        assert_eq!(
            app.on_key(KeyCode::Char('y')),
            Action::Control(Control::Cancel, "b-2".into())
        );

        assert_eq!(app.on_key(KeyCode::Esc), Action::Refresh);
        assert_eq!(app.screen, Screen::List);
        assert_eq!(app.on_key(KeyCode::Char('q')), Action::Quit);
    }

    fn screen_text(app: &App) -> String {
        let mut terminal = Terminal::new(TestBackend::new(110, 24)).expect("terminal");
        terminal.draw(|f| view::draw(f, app)).expect("draw");
        let buffer = terminal.backend().buffer().clone();
        let mut text = String::new();
        for y in 0..buffer.area.height {
            for x in 0..buffer.area.width {
                text.push_str(buffer[(x, y)].symbol());
            }
            text.push('\n');
        }
        text
    }

    #[tokio::test]
    async fn the_screens_draw_the_executions_and_the_statechart() {
        let mut app = App::new();
        app.set_items(vec![
            summary("run-1", Status::Running),
            summary("done-1", Status::Done),
        ]);
        let list = screen_text(&app);
        assert!(list.contains("harel monitor: 2 executions"), "{list}");
        assert!(list.contains("run-1"), "{list}");
        assert!(list.contains("● RUNNING"), "{list}");
        assert!(list.contains("✓ DONE"), "{list}");

        let store = store_with(&[execution("run-1", Status::Running, "A.A1")]).await;
        let defn = machine();
        app.on_key(KeyCode::Enter);
        app.detail = model::detail(&store, "run-1", |_| Some(&defn))
            .await
            .expect("read");
        let detail = screen_text(&app);
        assert!(detail.contains("▶ A1"), "{detail}");
        assert!(detail.contains("▸ A"), "{detail}");
        assert!(detail.contains("amount = 12"), "{detail}");
        assert!(detail.contains("active     A.A1"), "{detail}");

        app.on_key(KeyCode::Char('t'));
        let confirm = screen_text(&app);
        assert!(confirm.contains("terminate run-1 (forceful)?"), "{confirm}");
    }

    /// On moto, through the functions' worker: the list and the statechart read the stack's
    /// tables, a refresh shows the step the worker committed (and the timer it cancelled),
    /// and a control key reaches the stored execution.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs a moto server: scripts/test.sh runs it"]
    async fn on_moto_a_refresh_shows_the_workers_step_and_a_key_suspends() {
        let moto = harel_testkit::MotoStack::new("mon").await;
        let store = moto.store();
        let defn = machine();
        let driver = harel_runtime::Driver::new(
            vec![defn.clone()],
            harel_runtime::ActionRegistry::with_stdlib(),
        );
        let worker = moto.worker(driver, &[]);
        let (client, source) = (moto.transport(), moto.source());
        let body = harel_sqs::create_body("Flow", harel_model::Object::new(), Some("mon-1"));
        harel_testkit::send(&client, "mon-1", body).await;
        harel_testkit::pump(&source, &worker).await;

        let mut app = App::new();
        app.set_items(model::list(&store, None, 50).await.expect("list"));
        let list = screen_text(&app);
        assert!(list.contains("mon-1"), "{list}");
        assert_eq!(app.on_key(KeyCode::Enter), Action::Refresh);
        let read = |_: &mut App| {
            let store = &store;
            let defn = &defn;
            async move {
                model::detail(store, "mon-1", |_| Some(defn))
                    .await
                    .expect("read")
            }
        };
        app.detail = read(&mut app).await;
        let before = screen_text(&app);
        assert!(before.contains("active     A.A1"), "{before}");
        assert!(before.contains("A.A1 at "), "the armed timeout: {before}");

        // the worker commits a step; the next refresh shows it
        let go = harel_model::Event::new("Go");
        harel_testkit::send(&client, "mon-1", go.to_json()).await;
        harel_testkit::pump(&source, &worker).await;
        app.detail = read(&mut app).await;
        let after = screen_text(&app);
        let stepped = store.load("mon-1").await.expect("load").expect("there");
        assert_ne!(
            stepped.active_path.as_deref(),
            Some("A.A1"),
            "the worker stepped"
        );
        let active = format!(
            "active     {}",
            stepped.active_path.as_deref().expect("an active state")
        );
        assert!(after.contains(&active), "{active:?} in {after}");
        assert!(
            !after.contains("A.A1 at "),
            "the timeout was cancelled: {after}"
        );

        // `s` suspends through the control plane, on the stored execution
        let Action::Control(command, id) = app.on_key(KeyCode::Char('s')) else {
            panic!("s is a control key");
        };
        control(&store, None, command, &id).await.expect("suspends");
        app.detail = read(&mut app).await;
        let suspended = screen_text(&app);
        assert!(suspended.contains("SUSPENDED"), "{suspended}");
        let stored = store.load("mon-1").await.expect("load").expect("there");
        assert_eq!(stored.status, Status::Suspended);
    }
}
