//! Machine versions on the deployed stack.
//!
//! `harel migrate ID|--machine M --to VERSION [--map OLD=NEW]... [--dry-run]`: move in-flight
//! executions to another version of their machine through the control plane (one CAS write
//! per execution and live region), refused with the paths that have no counterpart.
//!
//! `harel deploy-check [DIR]`: before deploying the machines in DIR, what becomes of the live
//! executions, per machine and version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use harel_control::{migrate, plan_member, MigrationReport, PathMap};
use harel_model::{Definition, Execution, Status};
use harel_runtime::versions::{bundle_document, rebuild, version_of, Bundle};
use harel_store::prelude::*;
use harel_store::{DefinitionDoc, ExecutionStore, ListQuery};
use serde_json::json;

use super::clock::now;
use super::stack::{Stack, StackArgs};

/// Every machine of a `.stm` file, or of every `.stm` file of a directory (not its
/// subdirectories, which hold what the files import), as the functions load them.
pub fn load_machines(path: &Path) -> anyhow::Result<Vec<Definition>> {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading the directory {}", path.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "stm"))
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut out = Vec::new();
    for file in files {
        let program = harel_lang::parse_file(&file)?;
        for name in program.machines.keys() {
            out.push(
                harel_lang::load_file(&file, Some(name))
                    .with_context(|| format!("machine {name} of {}", file.display()))?,
            );
        }
    }
    Ok(out)
}

/// Live statuses: what a migration or a deploy can still affect.
fn live(status: Status) -> bool {
    !matches!(status, Status::Done | Status::Cancelled)
}

/// A page of the live executions: through the listing index by default, so what is read
/// grows with the live executions, never with the finished ones a stack keeps; `--scan` reads
/// the whole table to also find the rows harel Python wrote last (the index leaves them out).
fn live_query(
    definition_id: Option<&str>,
    roots_only: bool,
    scan: bool,
    cursor: Option<String>,
) -> ListQuery {
    ListQuery {
        status: Some(Status::ALL.into_iter().filter(|s| live(*s)).collect()),
        definition_id: definition_id.map(str::to_string),
        roots_only,
        limit: 1000,
        cursor,
        scan,
    }
}

#[derive(clap::Args)]
pub struct MigrateArgs {
    /// The execution to migrate (or --machine for every live root execution of a machine)
    pub id: Option<String>,
    /// Every live root execution of this machine
    #[arg(long, value_name = "MACHINE", conflicts_with = "id")]
    pub machine: Option<String>,
    /// The version to move to: one of the --machines (its version is printed by
    /// `harel deploy-check`), or one the store keeps
    #[arg(long = "to", value_name = "VERSION")]
    pub to: String,
    /// A state renamed or moved in the target version, with everything under it (full
    /// paths; repeatable)
    #[arg(long = "map", value_name = "OLD=NEW")]
    pub map: Vec<String>,
    /// Check only: report what would move, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// With --machine: also find the executions harel Python wrote last, which the listing index leaves out:
    /// reads the whole executions table instead of the live ones
    #[arg(long)]
    pub scan: bool,
    /// .stm files or directories holding the target version's machine
    #[arg(long = "machines", value_name = "FILE|DIR")]
    pub machines: Vec<PathBuf>,
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
}

/// The target machine of `machine` at `version`: from the given files when one of them has
/// that version (then kept in the store before any execution points at it), else from the
/// store.
async fn target(
    stack: &Stack,
    files: &[PathBuf],
    machine: &str,
    version: &str,
) -> anyhow::Result<(Definition, Option<DefinitionDoc>)> {
    for path in files {
        for defn in load_machines(path)? {
            if defn.id != machine {
                continue;
            }
            let document = bundle_document(&defn)?;
            if version_of(&document) == version {
                let doc = DefinitionDoc {
                    version: version.to_string(),
                    machine: machine.to_string(),
                    created_at: now(),
                    document,
                };
                return Ok((defn, Some(doc)));
            }
        }
    }
    let (kept, bundle) = kept_version(stack, version, || {
        format!("version {version} of {machine} is neither kept in the store nor among --machines (pass the .stm holding it)")
    })
    .await?;
    let defn = bundle.get(machine).ok_or_else(|| {
        super::exit::refused(format_args!(
            "version {version} is not a version of {machine} (it is {})",
            kept.machine
        ))
    })?;
    Ok((defn.as_ref().clone(), None))
}

/// A version the store keeps, rebuilt; `missing` says why its absence matters here.
pub async fn kept_version(
    stack: &Stack,
    version: &str,
    missing: impl FnOnce() -> String,
) -> anyhow::Result<(DefinitionDoc, Bundle)> {
    let kept = stack
        .store
        .get_definition(version)
        .await
        .map_err(|e| stack.explain(&format!("reading version {version}"), e))?
        .ok_or_else(|| super::exit::not_found(missing()))?;
    let bundle = rebuild(version, &kept.document)?;
    Ok((kept, bundle))
}

/// The definition a control command decides against: the execution's pinned version (read
/// from the store), else the deployed machine `fallback` gives.
pub async fn definition_of<'a>(
    stack: &Stack,
    exe: &Execution,
    fallback: impl FnOnce() -> anyhow::Result<&'a Definition>,
) -> anyhow::Result<std::borrow::Cow<'a, Definition>> {
    let Some(version) = exe.pinned_version() else {
        return fallback().map(std::borrow::Cow::Borrowed);
    };
    let (_, bundle) = kept_version(stack, version, || {
        format!(
            "{} runs version {version} of {}, which the store does not keep",
            exe.id, exe.definition_id
        )
    })
    .await?;
    let defn = bundle.machine_for(exe).ok_or_else(|| {
        super::exit::refused(format_args!(
            "version {version} has no machine {}",
            exe.definition_id
        ))
    })?;
    Ok(std::borrow::Cow::Owned(defn.as_ref().clone()))
}

async fn live_roots(stack: &Stack, machine: &str, scan: bool) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let query = live_query(Some(machine), true, scan, cursor);
        let page = stack
            .store
            .list_executions(&query)
            .await
            .map_err(|e| stack.explain("listing the executions", e))?;
        ids.extend(
            page.items
                .into_iter()
                .filter(|s| live(s.status))
                .map(|s| s.id),
        );
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(ids),
        }
    }
}

fn print_report(report: &MigrationReport, dry_run: bool) {
    let id = &report.execution_id;
    if report.unchanged {
        println!("{id}: already on version {}", report.to_version);
        return;
    }
    if !report.refused.is_empty() {
        println!("{id}: refused, nothing changed:");
        for why in &report.refused {
            println!("  {why}");
        }
        return;
    }
    let verb = if dry_run { "would move" } else { "moved" };
    for m in &report.members {
        let from = m.from_version.as_deref().unwrap_or("no version");
        let active = m
            .active_path
            .as_ref()
            .map(|a| match a.from == a.to {
                true => a.to.clone(),
                false => format!("{} -> {}", a.from, a.to),
            })
            .unwrap_or_else(|| "-".into());
        println!(
            "{}: {verb} from {from} to {} (active {active})",
            m.execution_id, report.to_version
        );
        for (t, _) in m.timers.iter().filter(|(t, _)| t.from != t.to) {
            println!("  timer {} -> {}", t.from, t.to);
        }
        for h in m.history.iter().filter(|h| h.from != h.to) {
            println!("  history {} -> {}", h.from, h.to);
        }
    }
}

pub async fn execute_migrate(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let map = PathMap::parse(&args.map).map_err(super::exit::usage)?;
    let mut stack = args.stack.connect().await?;
    if args.scan {
        stack.report_scan_progress();
    }
    let (machine, ids) = match (&args.id, &args.machine) {
        (Some(id), None) => {
            let exe = stack.execution(id).await?;
            (exe.definition_id.to_string(), vec![id.clone()])
        }
        (None, Some(m)) => (m.clone(), live_roots(&stack, m, args.scan).await?),
        _ => return Err(super::exit::usage("give an execution ID or --machine M")),
    };
    let (defn, doc) = target(&stack, &args.machines, &machine, &args.to).await?;
    let mut reports = Vec::new();
    let mut kept = doc.is_none();
    for id in &ids {
        let at = now();
        let fail = |e| anyhow!("migrating {id}: {e}");
        let check = migrate(&stack.store, &defn, &args.to, id, &map, at, true)
            .await
            .map_err(fail)?;
        if args.dry_run || !check.refused.is_empty() || check.unchanged {
            reports.push(check);
            continue;
        }
        // kept before any execution points at it: a worker must be able to rebuild it
        if let (false, Some(doc)) = (kept, &doc) {
            stack
                .store
                .put_definition(doc)
                .await
                .map_err(|e| stack.explain(&format!("keeping version {}", args.to), e))?;
            kept = true;
        }
        reports.push(
            migrate(&stack.store, &defn, &args.to, id, &map, at, false)
                .await
                .map_err(fail)?,
        );
    }
    let refused = reports.iter().filter(|r| !r.refused.is_empty()).count();
    if args.json {
        println!("{}", json!({"reports": reports, "refused": refused}));
    } else {
        if reports.is_empty() {
            println!("no live execution of {machine} to migrate");
        }
        for r in &reports {
            print_report(r, args.dry_run);
        }
    }
    Ok(match refused {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(super::exit::REFUSED),
    })
}

#[derive(clap::Args)]
pub struct DeployCheckArgs {
    /// The machines about to be deployed: a .stm file or a directory of them (default:
    /// HAREL_DEFINITIONS_DIR)
    #[arg(env = "HAREL_DEFINITIONS_DIR")]
    pub dir: PathBuf,
    /// Also find the executions harel Python wrote last, which the listing index leaves out:
    /// reads the whole executions table instead of the live ones
    #[arg(long)]
    pub scan: bool,
    /// Answer in JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub stack: StackArgs,
}

/// The live executions of one (machine, version).
#[derive(Default, serde::Serialize)]
pub struct Group {
    pub live: usize,
    /// Every active path, history entry and timer path exists in the new version.
    pub migratable: usize,
    /// Paths without a counterpart (a map is needed), with how many executions hold each.
    pub needs_map: BTreeMap<String, usize>,
    pub executions_needing_map: usize,
    /// Kept in the store (or shipped by DIR): the executions can continue on it.
    pub available: bool,
}

/// What deploying some machines would do to the live executions (`harel deploy-check`, the
/// console's machines page).
pub struct DeployCheck {
    /// Each machine about to be deployed: its version and itself.
    pub new: BTreeMap<String, (String, Definition)>,
    /// The versions the store keeps.
    pub kept: BTreeMap<String, DefinitionDoc>,
    /// (machine, version or "" for none) -> its live executions.
    pub groups: BTreeMap<(String, String), Group>,
    /// What the deploy would break, one line each (none: safe to deploy).
    pub blocking: Vec<String>,
}

impl DeployCheck {
    /// How `machine`'s `version` group fares, for people.
    pub fn describe(&self, machine: &str, version: &str, g: &Group) -> String {
        let current = self.new.get(machine).map(|(v, _)| v.as_str());
        match (version, current) {
            ("", _) => "no version: runs whatever is deployed".to_string(),
            (v, Some(c)) if v == c => format!("version {v}: the one DIR ships"),
            (v, _) if g.available => format!("version {v}: stays pinned (kept in the store)"),
            (v, _) => format!("version {v}: NOT KEPT in the store"),
        }
    }
}

/// Check `machines` against the live executions of `store` (through the listing index, the
/// whole table with `scan`); `explain` words a store failure.
pub async fn deploy_check<S: ExecutionStore>(
    store: &S,
    machines: Vec<Definition>,
    scan: bool,
    explain: impl Fn(&str, harel_store::StoreError) -> anyhow::Error,
) -> anyhow::Result<DeployCheck> {
    let mut new: BTreeMap<String, (String, Definition)> = BTreeMap::new();
    for defn in machines {
        let version = version_of(&bundle_document(&defn)?);
        new.insert(defn.id.clone(), (version, defn));
    }
    let kept: BTreeMap<String, DefinitionDoc> = store
        .list_definitions()
        .await
        .map_err(|e| explain("reading the kept versions", e))?
        .into_iter()
        .map(|d| (d.version.clone(), d))
        .collect();
    // (machine, version or "" for none) -> group
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    let mut cursor = None;
    loop {
        let query = live_query(None, false, scan, cursor);
        let page = store
            .list_executions(&query)
            .await
            .map_err(|e| explain("listing the executions", e))?;
        for summary in page.items.iter().filter(|s| live(s.status)) {
            let Some(exe) = store
                .load(&summary.id)
                .await
                .map_err(|e| explain(&format!("reading {:?}", summary.id), e))?
            else {
                continue;
            };
            let timers: Vec<(String, f64)> = store
                .armed_timers(&exe.id)
                .await
                .map_err(|e| explain(&format!("reading the timers of {:?}", exe.id), e))?
                .into_iter()
                .map(|t| (t.path, t.fire_at))
                .collect();
            classify(&exe, &timers, &new, &kept, &mut groups);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut blocking = Vec::new();
    for ((machine, version), g) in &groups {
        let current = new.get(machine).map(|(v, _)| v.as_str());
        if version.is_empty() {
            if current.is_none() {
                blocking.push(format!(
                    "{} unpinned execution(s) of {machine}, which DIR no longer has",
                    g.live
                ));
            } else if g.executions_needing_map > 0 {
                blocking.push(format!(
                    "{} unpinned execution(s) of {machine} sit where the new version has no state",
                    g.executions_needing_map
                ));
            }
        } else if !g.available {
            blocking.push(format!("{} execution(s) of {machine} run version {version}, which neither the store keeps nor DIR ships: the deploy removes its last copy", g.live));
        }
    }
    Ok(DeployCheck {
        new,
        kept,
        groups,
        blocking,
    })
}

pub async fn execute_deploy_check(args: DeployCheckArgs) -> anyhow::Result<ExitCode> {
    let machines = load_machines(&args.dir)?;
    let mut stack = args.stack.connect().await?;
    if args.scan {
        stack.report_scan_progress();
    }
    let check = deploy_check(&stack.store, machines, args.scan, |doing, e| {
        stack.explain(doing, e)
    })
    .await?;
    let DeployCheck {
        new,
        kept,
        groups,
        blocking,
    } = &check;
    if args.json {
        let rows: Vec<_> = groups
            .iter()
            .map(|((m, v), g)| json!({"machine": m, "version": (!v.is_empty()).then_some(v), "deployed": new.get(m).map(|(nv, _)| nv == v).unwrap_or(false), "group": g}))
            .collect();
        let versions: BTreeMap<_, _> = new.iter().map(|(m, (v, _))| (m, v)).collect();
        println!(
            "{}",
            json!({"new_versions": versions, "groups": rows, "blocking": blocking})
        );
    } else {
        println!("machines in {}:", args.dir.display());
        for (m, (v, _)) in new {
            let kept_note = if kept.contains_key(v) { "" } else { " (new)" };
            println!("  {m:<24} version {v}{kept_note}");
        }
        println!();
        if groups.is_empty() {
            println!("no live executions");
        }
        for ((machine, version), g) in groups {
            println!("{machine} {}", check.describe(machine, version, g));
            println!(
                "  live {}; without a map could move to the new version: {}; need a map: {}",
                g.live, g.migratable, g.executions_needing_map
            );
            for (path, n) in &g.needs_map {
                println!("    {path} ({n})");
            }
        }
        for b in blocking {
            eprintln!("error: {b}");
        }
    }
    Ok(match blocking.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(super::exit::REFUSED),
    })
}

fn classify(
    exe: &Execution,
    timers: &[(String, f64)],
    new: &BTreeMap<String, (String, Definition)>,
    kept: &BTreeMap<String, DefinitionDoc>,
    groups: &mut BTreeMap<(String, String), Group>,
) {
    let version = exe.pinned_version().unwrap_or_default().to_string();
    let machine = exe
        .definition_fqn
        .as_deref()
        .unwrap_or(&exe.definition_id)
        .to_string();
    let target = new
        .get(machine.as_str())
        .or_else(|| new.get(exe.definition_id.as_str()));
    let g = groups.entry((machine, version.clone())).or_default();
    g.live += 1;
    g.available = version.is_empty()
        || kept.contains_key(&version)
        || target.is_some_and(|(v, _)| *v == version);
    let Some((_, defn)) = target else {
        return;
    };
    let plan = plan_member(defn, exe, timers, &PathMap::default());
    if plan.missing.is_empty() {
        g.migratable += 1;
    } else {
        g.executions_needing_map += 1;
        for why in plan.missing {
            // "id: what "path" has no counterpart...": counted by what and path
            let key = why
                .split_once(": ")
                .map(|(_, w)| w.to_string())
                .unwrap_or(why);
            *g.needs_map.entry(key).or_default() += 1;
        }
    }
}
