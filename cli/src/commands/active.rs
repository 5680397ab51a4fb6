//! `harel render --mermaid --active ID`: the execution's active states (its own branch and
//! its regions', read from the store) highlighted on the Mermaid drawing.

use anyhow::bail;
use harel_model::{Definition, Execution};

use super::show::children_of;
use super::stack::{Stack, StackArgs};

/// Every active state of `exe`'s branch: the active leaf and its ancestors.
fn active_chain(exe: &Execution, out: &mut Vec<String>) {
    let Some(path) = exe.active_path.as_deref().filter(|p| !p.is_empty()) else {
        return;
    };
    let mut prefix = String::new();
    for part in path.split('.') {
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(part);
        if !out.contains(&prefix) {
            out.push(prefix.clone());
        }
    }
}

async fn collect(stack: &Stack, exe: &Execution, out: &mut Vec<String>) -> anyhow::Result<()> {
    active_chain(exe, out);
    for child in children_of(stack, exe).await? {
        if child.definition_id == exe.definition_id && !child.status.is_finished() {
            Box::pin(collect(stack, &child, out)).await?;
        }
    }
    Ok(())
}

/// The active state paths of execution `id` (and its live regions), checked to run `defn`.
pub async fn active_states(
    args: &StackArgs,
    id: &str,
    defn: &Definition,
) -> anyhow::Result<Vec<String>> {
    let stack = args.connect().await?;
    let exe = stack.execution(id).await?;
    if exe.definition_id != defn.id {
        bail!(
            "execution {id:?} runs machine {:?}, not {:?}: render the file that declares it",
            exe.definition_id,
            defn.id
        );
    }
    let mut paths = Vec::new();
    collect(&stack, &exe, &mut paths).await?;
    Ok(paths)
}

/// `diagram` with the `active` class defined and given to each of `paths`.
pub fn highlight(diagram: &str, defn: &Definition, paths: &[String]) -> String {
    let ids: Vec<String> = paths
        .iter()
        .filter_map(|p| defn.get(p))
        .map(|node| harel_lang::render::mermaid::state_id(defn, node))
        .collect();
    let mut out = diagram.trim_end().to_string();
    out.push_str("\nclassDef active fill:#ffe082,stroke:#e65100,stroke-width:3px");
    if !ids.is_empty() {
        out.push_str(&format!("\nclass {} active", ids.join(",")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_active_chain_is_highlighted() {
        let src = "machine M {\n initial A\n state A {\n initial B\n state B {}\n state C {}\n from B to C on Go\n }\n final D success\n from A to D on Done\n}\n";
        let defn = harel_lang::load_str(src, None, "m.stm").expect("loads");
        let mut exe = Execution::new("M");
        exe.active_path = Some("A.B".into());
        let mut paths = Vec::new();
        active_chain(&exe, &mut paths);
        assert_eq!(paths, ["A", "A.B"]);
        let drawn = highlight("stateDiagram-v2\n", &defn, &paths);
        assert!(drawn.ends_with("class A,A_B active"), "{drawn}");
        assert!(drawn.contains("classDef active"));
    }
}
