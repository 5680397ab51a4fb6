//! `harel render FILE [NAME] [--mermaid]`: draw a machine as PlantUML or Mermaid text, as
//! harel draws it (its Mermaid notes an `invoke` state's FQN and a fan-out's `for V in COLL`;
//! its PlantUML draws them as plain states). `--submachines` also draws every machine it
//! invokes (inline bodies and imported machines), one diagram each, after its own.

use std::path::PathBuf;
use std::process::ExitCode;

use harel_lang::render::submachines::{render_with_submachines, Diagram};
use harel_lang::render::{mermaid, plantuml};

#[derive(clap::Args)]
pub struct RenderArgs {
    /// The .stm file
    file: PathBuf,
    /// Machine to select (if the file declares more than one)
    name: Option<String>,
    /// Emit Mermaid stateDiagram-v2 instead
    #[arg(long)]
    mermaid: bool,
    /// With --mermaid: highlight the active states of this stored execution
    #[arg(long, value_name = "ID", requires = "mermaid")]
    active: Option<String>,
    /// Also draw the machines it invokes (inline and imported), each after it
    #[arg(long, conflicts_with = "active")]
    submachines: bool,
    #[command(flatten)]
    stack: super::stack::StackArgs,
}

pub async fn execute(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let defn = harel_lang::load_file(&args.file, args.name.as_deref())?;
    let format = if args.mermaid {
        Diagram::Mermaid
    } else {
        Diagram::PlantUml
    };
    let text = match (args.submachines, format) {
        (true, _) => render_with_submachines(&defn, format)?,
        (false, Diagram::Mermaid) => mermaid::render(&defn)?,
        (false, Diagram::PlantUml) => plantuml::render(&defn)?,
    };
    let text = match &args.active {
        Some(id) => {
            let paths = super::active::active_states(&args.stack, id, &defn).await?;
            super::active::highlight(&text, &defn, &paths)
        }
        None => text,
    };
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}
