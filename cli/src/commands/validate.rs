//! `harel validate FILE [NAME]`: load a machine and print harel's static validation issues.

use std::path::PathBuf;
use std::process::ExitCode;

use harel_lang::Severity;

#[derive(clap::Args)]
pub struct ValidateArgs {
    /// The .stm file
    file: PathBuf,
    /// Machine to select (if the file declares more than one)
    name: Option<String>,
}

/// One issue a line (`[error] code at path: message`), or `{id}: ok`; exit 1 on an error.
pub async fn execute(args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let defn = harel_lang::load_file(&args.file, args.name.as_deref())?;
    let issues = harel_lang::validate(&defn);
    for issue in &issues {
        println!("{issue}");
    }
    if issues.is_empty() {
        println!("{}: ok", defn.id);
    }
    Ok(if issues.iter().any(|i| i.severity == Severity::Error) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
