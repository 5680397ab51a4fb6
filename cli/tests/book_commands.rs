//! Every `harel SUBCOMMAND` the book (`docs/src/`) and the README show in a shell block
//! (```` ```sh ````, ```` ```bash ````, ```` ```console ````, ```` ```shell ````), and every
//! `cargo run -p harel-cli -- SUBCOMMAND`, names a subcommand of this CLI: the built binary
//! answers `harel SUBCOMMAND --help` with success. (The `.stm` blocks and the relative links
//! are checked by `shared/lang/tests/book.rs`.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// README.md and every Markdown file under docs/src/, relative to the root.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "md") {
                out.push(path);
            }
        }
    }
    let root = root();
    let mut pages = vec![root.join("README.md")];
    walk(&root.join("docs/src"), &mut pages);
    pages
        .into_iter()
        .map(|p| p.strip_prefix(&root).expect("under the root").to_path_buf())
        .collect()
}

/// The lines of the text's shell blocks, each with its 1-based line number.
fn shell_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut open: Option<(String, bool)> = None; // (fence, a shell block)
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        let is_fence = fence.len() >= 3;
        match &open {
            Some((marker, shell)) => {
                if is_fence
                    && fence.starts_with(marker.as_str())
                    && trimmed[fence.len()..].trim().is_empty()
                {
                    open = None;
                } else if *shell {
                    lines.push((i + 1, line));
                }
            }
            None if is_fence => {
                let language = trimmed[fence.len()..]
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .next()
                    .unwrap_or("");
                let shell = matches!(language, "sh" | "bash" | "console" | "shell");
                open = Some((fence, shell));
            }
            None => {}
        }
    }
    lines
}

/// The line less its comment: from a `#` at the start or after a blank, outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &line[..at],
            None => {}
        }
        previous = c;
    }
    line
}

/// The line cut into simple commands: at `;`, `&&`, `||`, ` | `, `$(`, a backtick and `(`,
/// outside quotes. (`a|b` without blanks stays whole: the docs write alternatives that way.)
fn commands(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quote: Option<char> = None;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.last_mut().expect("a command").push(c);
            }
            None => {
                let cut = match (c, next) {
                    ('&', Some('&')) | ('|', Some('|')) | ('$', Some('(')) => 2,
                    (';' | '`' | '(' | ')', _) => 1,
                    ('|', _) if i > 0 && chars[i - 1] == ' ' => 1,
                    _ => 0,
                };
                if cut > 0 {
                    out.push(String::new());
                    i += cut;
                    continue;
                }
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                out.last_mut().expect("a command").push(c);
            }
        }
        i += 1;
    }
    out.into_iter()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect()
}

/// The subcommands one simple command runs: `harel SUB ...` (after `NAME=value` words and a
/// console's `$ ` prompt; `SUB|OTHER` gives both) or `cargo run -p harel-cli [flags] -- SUB`.
fn subcommands(command: &str) -> Vec<String> {
    let mut words = command.split_whitespace().peekable();
    if words.peek() == Some(&"$") {
        words.next();
    }
    while let Some(word) = words.peek() {
        let assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !assignment {
            break;
        }
        words.next();
    }
    let words: Vec<&str> = words.collect();
    let sub = match words.as_slice() {
        ["harel", sub, ..] => Some(*sub),
        ["cargo", "run", rest @ ..] if rest.windows(2).any(|w| w == ["-p", "harel-cli"]) => rest
            .iter()
            .position(|w| *w == "--")
            .and_then(|at| rest.get(at + 1))
            .copied(),
        _ => None,
    };
    match sub {
        Some(sub) if !sub.starts_with('-') => sub
            .split('|')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// Each subcommand the pages' shell blocks run, with where it is first written.
fn documented() -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page))
            .unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        for (line, content) in shell_lines(&text) {
            for command in commands(strip_comment(content)) {
                for sub in subcommands(&command) {
                    found
                        .entry(sub)
                        .or_insert_with(|| format!("{}:{line}", page.display()));
                }
            }
        }
    }
    found
}

fn help(sub: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_harel"))
        .args([sub, "--help"])
        .output()
        .expect("the harel binary runs")
}

#[test]
fn every_harel_command_of_the_book_is_a_subcommand() {
    let found = documented();
    // the README's first command and the operating chapter's: a reader that found nothing
    // would pass on nothing
    for must in [
        "run",
        "validate",
        "create",
        "send",
        "show",
        "deploy-check",
        "serve",
    ] {
        assert!(
            found.contains_key(must),
            "no `harel {must}` found: {found:?}"
        );
    }
    println!(
        "{} subcommands: {}",
        found.len(),
        found.keys().cloned().collect::<Vec<_>>().join(" ")
    );
    let mut failures = Vec::new();
    for (sub, at) in &found {
        let out = help(sub);
        if !out.status.success() {
            failures.push(format!(
                "{at}: `harel {sub}` is no subcommand of the CLI: `harel {sub} --help` failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The check can fail: an unknown subcommand's `--help` does.
#[test]
fn an_unknown_subcommand_fails_its_help() {
    assert!(!help("no-such-subcommand").status.success());
    assert!(help("run").status.success());
}

#[test]
fn commands_are_found_where_a_shell_runs_them() {
    let subs = |line: &str| -> Vec<String> {
        commands(strip_comment(line))
            .iter()
            .flat_map(|c| subcommands(c))
            .collect()
    };
    assert_eq!(subs("harel run x.stm -e A   # harel show"), ["run"]);
    assert_eq!(
        subs(r#"ID=$(harel create Order --stack harel --context '{"a": 1}' --wait)"#),
        ["create"]
    );
    assert_eq!(subs("sleep 35; harel show $ID --stack harel"), ["show"]);
    assert_eq!(
        subs("harel suspend|resume|cancel $ID --stack harel"),
        ["suspend", "resume", "cancel"]
    );
    assert_eq!(subs("HAREL_STACK=harel harel list | head"), ["list"]);
    assert_eq!(subs("$ harel fmt --check flows/*.stm"), ["fmt"]);
    assert_eq!(
        subs("cargo run -p harel-cli -- run examples/order.stm -e PlaceOrder"),
        ["run"]
    );
    assert!(subs("sam logs --stack-name harel -n Worker --tail").is_empty());
    assert!(subs("harel --help").is_empty());
    assert!(subs("echo 'harel run; harel show'").is_empty());
    let text = "```sh\nharel run a.stm\n```\n```text\nharel nothing\n```\n  ```console\n  $ harel show X\n  ```\n";
    let lines: Vec<usize> = shell_lines(text).iter().map(|(n, _)| *n).collect();
    assert_eq!(lines, [2, 8]);
}
