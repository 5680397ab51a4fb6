//! `harel new FILE [NAME] [--force]`: harel's starter machine, which validates and runs
//! with no actions bound.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, clap::ValueEnum)]
enum Template {
    Flat,
}

#[derive(clap::Args)]
pub struct NewArgs {
    /// Path of the .stm to create
    file: PathBuf,
    /// Machine name (default: derived from the file name)
    name: Option<String>,
    /// Overwrite the file if it already exists
    #[arg(long)]
    force: bool,
    /// Starter template
    #[arg(long, value_enum, default_value = "flat")]
    template: Template,
}

/// harel's `_STARTER_TEMPLATE`, with `{file}` and `{name}` to fill.
const STARTER_TEMPLATE: &str = r#"# A starter harel machine. Next steps:
#   harel validate {file}
#   harel render   {file}            # PlantUML (add --mermaid for Mermaid)
#   harel run      {file} -e Submit -e Approve
#
# The DSL in a nutshell: declare the events, the initial state, the states, and the
# transitions (which live INSIDE the machine: `from <state> to <state> on <Event>`). A
# `final <Name> <outcome>` state is a terminal that carries a verdict.

# events are declared up front, so `validate` catches a typo'd event reference:
event Submit {}
event Approve {}
event Reject {}
event RequestChanges {}

machine {name} {
  initial Draft

  state Draft {}
  state Review {}
  final Approved success
  final Rejected rejected

  from Draft  to Review    on Submit
  from Review to Approved  on Approve
  from Review to Rejected  on Reject
  from Review to Draft     on RequestChanges
}
"#;

/// harel's `_sanitize`: a file stem as a machine identifier (non-word characters become
/// `_`, a leading digit gets an `m_` prefix).
fn sanitize(stem: &str) -> String {
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = if name.is_empty() {
        "machine".to_string()
    } else {
        name
    };
    if name.chars().next().is_some_and(char::is_numeric) {
        format!("m_{name}")
    } else {
        name
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub async fn execute(args: NewArgs) -> anyhow::Result<ExitCode> {
    let Template::Flat = args.template;
    let path = &args.file;
    if path.exists() && !args.force {
        anyhow::bail!(
            "{} already exists (use --force to overwrite)",
            path.display()
        );
    }
    let name = args.name.clone().unwrap_or_else(|| sanitize(&stem(path)));
    let shown = path.display().to_string();
    // the file first, so a `{file}` inside the name stays as written (as `str.format` does)
    let text = STARTER_TEMPLATE
        .replace("{file}", &shown)
        .replace("machine {name} {", &format!("machine {name} {{"));
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("cannot write {shown}: {e}"))?;
    println!("created {shown}  (machine {name})");
    println!("next:");
    println!("  harel validate {shown}");
    println!("  harel run      {shown} -e Submit -e Approve");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn sanitize_as_harel_does() {
        assert_eq!(sanitize("order-flow v2"), "order_flow_v2");
        assert_eq!(sanitize("2fa"), "m_2fa");
        assert_eq!(sanitize(""), "machine");
        assert_eq!(sanitize("café"), "café");
    }
}
