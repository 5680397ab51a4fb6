//! The book (`docs/src/`) and the README, checked: every ```` ```stm ```` block parses, and
//! each of its machines loads and passes harel's static rules; every relative link of the
//! repository's Markdown files points to a file that exists (and, into a Markdown file, to
//! one of its headings).
//!
//! A block that is a fragment, or shows a broken machine on purpose, is marked
//! ```` ```stm,ignore ```` (or written as ```` ```text ````): it is not loaded. The book's
//! introduction says so too. The `harel` commands of the shell blocks are checked by
//! `cli/tests/book_commands.rs`, which has the CLI's binary.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use harel_lang::{load_str, parse, validate_or_raise};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Markdown files under `dir` (relative to the root), sorted; hidden folders, build
/// output (`target`, the built book) and installed tools left out.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let relative = path.strip_prefix(root).expect("under the root");
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                let skipped = name.starts_with('.')
                    || name == "target"
                    || name == "node_modules"
                    || relative == Path::new("docs/book");
                if !skipped {
                    walk(root, &path, out);
                }
            } else if name.ends_with(".md") {
                out.push(relative.to_path_buf());
            }
        }
    }
    let root = root();
    let mut out = Vec::new();
    walk(&root, &root.join(dir), &mut out);
    out
}

/// The pages whose ```` ```stm ```` blocks are checked: README.md and the book's chapters.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    pages.extend(markdown_under(Path::new("docs/src")));
    pages
}

fn read(page: &Path) -> String {
    std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
}

/// A fenced code block: its info string (```` ```stm,ignore ```` gives `stm,ignore`), the
/// 1-based line of its opening fence, and its lines as written (indentation kept, so a
/// position in the block is the same column in the file).
#[derive(Debug)]
struct Block {
    info: String,
    line: usize,
    body: Vec<String>,
}

impl Block {
    /// The language, the info string's first word (`stm` of `stm,ignore`).
    fn language(&self) -> &str {
        self.info
            .split(|c: char| c == ',' || c.is_whitespace())
            .next()
            .unwrap_or("")
    }

    fn ignored(&self) -> bool {
        self.info
            .split(|c: char| c == ',' || c.is_whitespace())
            .any(|word| word == "ignore")
    }
}

/// The text's fenced blocks (```` ``` ```` or `~~~`, three or more, indented or not), and
/// its other lines (the prose), each with its 1-based line number.
fn split(text: &str) -> (Vec<Block>, Vec<(usize, &str)>) {
    let mut blocks = Vec::new();
    let mut prose = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        let is_fence = fence.len() >= 3 && fence.chars().all(|c| c == fence.as_bytes()[0] as char);
        match open.take() {
            Some((marker, block)) => {
                if is_fence
                    && fence.starts_with(&marker)
                    && trimmed[fence.len()..].trim().is_empty()
                {
                    blocks.push(block);
                } else {
                    let mut block = block;
                    block.body.push(line.to_owned());
                    open = Some((marker, block));
                }
            }
            None if is_fence => {
                let block = Block {
                    info: trimmed[fence.len()..].trim().to_owned(),
                    line: i + 1,
                    body: Vec::new(),
                };
                open = Some((fence, block));
            }
            None => prose.push((i + 1, line)),
        }
    }
    if let Some((_, block)) = open {
        panic!("a code block opened at line {} is never closed", block.line);
    }
    (blocks, prose)
}

/// Parse, load and validate every machine of one ```` ```stm ```` block; the text is laid
/// at its own lines (blank lines before it), so an error's `file:line:col` is the file's.
fn check_stm(page: &Path, block: &Block) -> Result<usize, String> {
    let origin = page.display().to_string();
    let hint = "(a fragment, or a machine broken on purpose: mark the block ```stm,ignore)";
    let mut text = "\n".repeat(block.line);
    text.push_str(&block.body.join("\n"));
    let program = parse(&text, &origin).map_err(|e| format!("{e}\n{hint}"))?;
    if program.machines.is_empty() {
        return Err(format!(
            "{origin}:{}: a ```stm block with no machine {hint}",
            block.line
        ));
    }
    for name in program.machines.keys() {
        let definition =
            load_str(&text, Some(name), &origin).map_err(|e| format!("{e}\n{hint}"))?;
        validate_or_raise(&definition)
            .map_err(|e| format!("{origin}:{}: machine {name}: {e}\n{hint}", block.line))?;
    }
    Ok(program.machines.len())
}

#[test]
fn every_stm_block_of_the_book_and_the_readme_loads_and_validates() {
    let mut failures = Vec::new();
    let mut machines = 0;
    let mut per_page = Vec::new();
    for page in pages() {
        let (blocks, _) = split(&read(&page));
        let mut checked = 0;
        for block in blocks
            .iter()
            .filter(|b| b.language() == "stm" && !b.ignored())
        {
            match check_stm(&page, block) {
                Ok(n) => {
                    machines += n;
                    checked += 1;
                }
                // the error starts with the file and the line
                Err(e) => failures.push(e),
            }
        }
        per_page.push((page, checked));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // the README's tour and the writing chapter each show a machine: a reader that found no
    // block would pass on nothing
    for must in [
        "README.md",
        "docs/src/writing-machines.md",
        "docs/src/actions.md",
    ] {
        assert!(
            per_page
                .iter()
                .any(|(page, n)| page == Path::new(must) && *n > 0),
            "no ```stm block checked in {must}: {per_page:?}"
        );
    }
    assert!(machines >= 4, "{machines} machines checked");
}

/// A broken block is reported at the file and line where it is written.
#[test]
fn a_broken_block_is_reported_at_its_file_and_line() {
    let text = "# A page\n\nSome prose.\n\n```stm\nmachine M {\n  initial A\n  state A {\n}\n```\n";
    let (blocks, _) = split(text);
    assert_eq!(blocks.len(), 1);
    let err = check_stm(Path::new("docs/src/page.md"), &blocks[0]).expect_err("unclosed");
    assert!(err.starts_with("docs/src/page.md:"), "{err}");
    let line: usize = err["docs/src/page.md:".len()..]
        .split(':')
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("a line number: {err}"));
    assert!(
        (6..=10).contains(&line),
        "line {line} is not in the block: {err}"
    );

    let fragment = "```stm\nstate Shipped {}\n```\n";
    let err = check_stm(Path::new("x.md"), &split(fragment).0[0]).expect_err("a fragment");
    assert!(
        err.starts_with("x.md:2:1:") && err.contains("stm,ignore"),
        "{err}"
    );
    let events = "```stm\nevent Go {}\n```\n";
    let err = check_stm(Path::new("x.md"), &split(events).0[0]).expect_err("no machine");
    assert!(
        err.starts_with("x.md:1:") && err.contains("stm,ignore"),
        "{err}"
    );

    let invalid =
        "```stm\nmachine M {\n  initial A\n  state A {}\n  from A to Nowhere on Go\n}\n```\n";
    assert!(check_stm(Path::new("x.md"), &split(invalid).0[0]).is_err());

    let ignored = "```stm,ignore\nstate Shipped {}\n```\n";
    assert!(split(ignored).0[0].ignored());
}

/// The text of a heading as a slug, as the forge and mdBook make its anchor: lower case,
/// letters, digits, `-` and `_` kept, spaces as `-`, the rest dropped (a link's text kept,
/// its target dropped).
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        match rest[open..].find("](") {
            Some(close) => {
                text.push_str(&rest[..open]);
                text.push_str(&rest[open + 1..open + close]);
                let after = &rest[open + close + 2..];
                rest = after.find(')').map_or("", |end| &after[end + 1..]);
            }
            None => break,
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading's as `slug-1`, `slug-2`...).
fn anchors(text: &str) -> BTreeSet<String> {
    let (_, prose) = split(text);
    let mut seen = BTreeSet::new();
    for (_, line) in prose {
        let Some(title) = line
            .strip_prefix('#')
            .map(|l| l.trim_start_matches('#'))
            .filter(|l| l.starts_with(' '))
        else {
            continue;
        };
        let base = slug(title.trim().trim_end_matches('#'));
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The targets of a line's inline links and images (`[text](target)`, `![alt](target)`),
/// code spans left out.
fn link_targets(line: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            prose.push(c);
        }
    }
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].trim();
        let target = target.split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(|c| c == '<' || c == '>').to_owned());
        rest = &after[end + 1..];
    }
    targets
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every relative link of the README, the book and every other Markdown file of the
/// repository (the crates' READMEs...): the file exists, inside the repository, and an
/// anchor into a Markdown file names one of its headings.
#[test]
fn every_relative_link_of_the_markdown_files_resolves() {
    let root = root();
    let mut failures = Vec::new();
    let mut checked = 0;
    let files = markdown_under(Path::new(""));
    for must in ["README.md", "docs/src/SUMMARY.md", "shared/lang/README.md"] {
        assert!(
            files.iter().any(|f| f == Path::new(must)),
            "{must} not walked"
        );
    }
    for page in files {
        let text = read(&page);
        let (_, prose) = split(&text);
        for (line, content) in prose {
            for target in link_targets(content) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (file, anchor) = match target.split_once('#') {
                    Some((file, anchor)) => (file, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let resolved = if file.is_empty() {
                    page.clone()
                } else {
                    normalize(&page.parent().expect("a parent").join(file))
                };
                let at = format!("{}:{line}: {target}", page.display());
                if resolved.starts_with("..") {
                    failures.push(format!("{at}: outside the repository"));
                    continue;
                }
                let path = root.join(&resolved);
                if !path.exists() {
                    failures.push(format!("{at}: no file {}", resolved.display()));
                    continue;
                }
                if let Some(anchor) = anchor {
                    if path.extension().is_some_and(|x| x == "md") {
                        let known = anchors(&read(&resolved));
                        if !known.contains(anchor) {
                            failures.push(format!(
                                "{at}: no heading #{anchor} in {} (has {known:?})",
                                resolved.display()
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 50, "only {checked} relative links found");
}

#[test]
fn slugs_are_the_forges() {
    assert_eq!(
        slug("Compatible with harel Python, proven by running it"),
        "compatible-with-harel-python-proven-by-running-it"
    );
    assert_eq!(
        slug("Over HTTP: `harel serve`, the deployed API"),
        "over-http-harel-serve-the-deployed-api"
    );
    assert_eq!(slug("See [the API](api.md) now"), "see-the-api-now");
    let text = "# A\n## Tests\n```sh\n# not a heading\n```\n## Tests\n";
    let found = anchors(text);
    assert!(
        found.contains("tests") && found.contains("tests-1") && !found.contains("not-a-heading")
    );
    assert_eq!(
        link_targets("see [a](x.md#b) and `[c](not.md)` and ![i](p.png \"t\")"),
        ["x.md#b", "p.png"]
    );
    assert_eq!(
        normalize(Path::new("docs/src/../../README.md")),
        Path::new("README.md")
    );
}

/// Every page of `docs/src/` is a chapter: `SUMMARY.md` links it (mdBook would leave it out of
/// the built book without a word).
#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let summary = read(Path::new("docs/src/SUMMARY.md"));
    let linked: BTreeSet<String> = summary.lines().flat_map(link_targets).collect();
    let mut pages = 0;
    for page in markdown_under(Path::new("docs/src")) {
        let name = page
            .strip_prefix("docs/src")
            .expect("under docs/src")
            .to_string_lossy()
            .into_owned();
        if name == "SUMMARY.md" {
            continue;
        }
        pages += 1;
        assert!(
            linked.contains(&name),
            "docs/src/{name} is not in docs/src/SUMMARY.md"
        );
    }
    assert!(pages >= 20, "{pages} pages");
}
