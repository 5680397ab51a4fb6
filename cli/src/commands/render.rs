//! `harel render FILE [NAME] [--mermaid]`: draw a machine as PlantUML or Mermaid text.

use std::path::PathBuf;
use std::process::ExitCode;

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
    #[command(flatten)]
    stack: super::stack::StackArgs,
}

pub async fn execute(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let defn = harel_lang::load_file(&args.file, args.name.as_deref())?;
    let text = if args.mermaid {
        mermaid::render(&defn)?
    } else {
        plantuml::render(&defn)?
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
