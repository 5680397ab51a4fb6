//! `harel list FILE`: the machines, fragments and events a file declares (parsed only,
//! nothing is built, so a file whose machines do not build yet still lists).

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ListArgs {
    /// The .stm file
    file: PathBuf,
}

fn names<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let joined = keys.map(String::as_str).collect::<Vec<_>>().join(", ");
    if joined.is_empty() {
        "—".into()
    } else {
        joined
    }
}

pub async fn execute(args: ListArgs) -> anyhow::Result<ExitCode> {
    let program = harel_lang::parse_file(&args.file)?;
    println!("machines:  {}", names(program.machines.keys()));
    println!("fragments: {}", names(program.fragments.keys()));
    println!("events:    {}", names(program.events.keys()));
    Ok(ExitCode::SUCCESS)
}
