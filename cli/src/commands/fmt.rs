//! `harel fmt FILE... [--check|--diff]`: rewrite `.stm` files in the canonical layout
//! (harel's `harel fmt`, see `harel_lang::fmt`).
//!
//! A file that does not parse is reported with its located error and left as it is; the
//! others are still formatted. `--check` writes nothing and exits 2 naming the files that
//! would change (harel's exit code, for CI); `--diff` prints a unified diff instead of
//! writing.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

#[derive(clap::Args)]
pub struct FmtArgs {
    /// The .stm files to format
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Write nothing; exit 2 if any file would change
    #[arg(long, conflicts_with = "diff")]
    check: bool,
    /// Print a unified diff instead of writing
    #[arg(long)]
    diff: bool,
}

/// Exit 0, or 1 when a file could not be read or parsed, else 2 when `--check` found
/// files to reformat.
pub async fn execute(args: FmtArgs) -> anyhow::Result<ExitCode> {
    let mut changed: Vec<String> = Vec::new();
    let mut failed = false;
    let mut stdout = std::io::stdout().lock();
    for path in &args.files {
        let shown = path.display().to_string();
        let src = match std::fs::read_to_string(path) {
            Ok(src) => src,
            Err(e) => {
                eprintln!("{shown}: {e}");
                failed = true;
                continue;
            }
        };
        let out = match harel_lang::fmt::format(&src, &shown) {
            Ok(out) => out,
            Err(e) => {
                eprintln!("{e}");
                failed = true;
                continue;
            }
        };
        if out == src {
            continue;
        }
        changed.push(shown.clone());
        if args.diff {
            let diff = similar::TextDiff::from_lines(&src, &out);
            let from = format!("{shown} (original)");
            let to = format!("{shown} (formatted)");
            write!(stdout, "{}", diff.unified_diff().header(&from, &to))?;
        } else if !args.check {
            std::fs::write(path, &out).with_context(|| format!("{shown}: cannot write"))?;
            writeln!(stdout, "formatted {shown}")?;
        }
    }
    if failed {
        return Ok(ExitCode::FAILURE);
    }
    if args.check && !changed.is_empty() {
        eprintln!("would reformat: {}", changed.join(", "));
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
