//! Beyond harel: the diagrams of the machines a machine invokes. harel's PlantUML draws an
//! `invoke` state as a plain state and its Mermaid notes only the FQN (`invoke: jobs.Check`,
//! `invoke each: item in items`), so a reader never sees what runs inside. Here each
//! submachine the Definition carries (inline `invoke { ... }` bodies and imported machines)
//! that the machine invokes, directly or through another submachine, is drawn after it as a
//! diagram of its own, introduced by a comment line saying who invokes it and how (`for V in
//! COLL` for a fan-out). The machine's own diagram stays harel's text, unchanged.

use std::collections::HashSet;

use harel_model::Definition;

use super::RenderError;

/// A diagram format: the renderer and how a comment line starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Diagram {
    /// [`super::plantuml`]: comments start with `'`.
    PlantUml,
    /// [`super::mermaid`]: comments start with `%%`.
    Mermaid,
}

impl Diagram {
    fn draw(self, defn: &Definition) -> Result<String, RenderError> {
        match self {
            Diagram::PlantUml => super::plantuml::render(defn),
            Diagram::Mermaid => super::mermaid::render(defn),
        }
    }

    fn comment(self) -> &'static str {
        match self {
            Diagram::PlantUml => "'",
            Diagram::Mermaid => "%%",
        }
    }
}

/// Who invokes `fqn` in `defn`: `Machine.State` (and `for V in COLL` for a fan-out).
fn callers(defn: &Definition, fqn: &str) -> Vec<String> {
    defn.nodes
        .iter()
        .filter(|n| n.invoke.as_deref() == Some(fqn))
        .map(|n| {
            let state = if n.full_path.is_empty() {
                defn.id.clone()
            } else {
                format!("{}.{}", defn.id, n.full_path)
            };
            match &n.invoke_each {
                Some((var, coll)) => format!("{state} for {var} in {coll}"),
                None => state,
            }
        })
        .collect()
}

/// The machine's diagram, then one per submachine it invokes (breadth-first, each once), in
/// `format`. A submachine invoked by an FQN the Definition does not carry (one a runner
/// resolves elsewhere) is named in a comment line, not drawn.
pub fn render_with_submachines(defn: &Definition, format: Diagram) -> Result<String, RenderError> {
    let mut out = vec![format.draw(defn)?];
    let mut queue: Vec<&Definition> = vec![defn];
    let mut seen: HashSet<String> = HashSet::from([defn.id.clone()]);
    let mut i = 0;
    while i < queue.len() {
        let caller = queue[i];
        i += 1;
        let mut invoked: Vec<&str> = Vec::new();
        for n in &caller.nodes {
            if let Some(fqn) = n.invoke.as_deref() {
                if !invoked.contains(&fqn) {
                    invoked.push(fqn);
                }
            }
        }
        for fqn in invoked {
            if !seen.insert(fqn.to_string()) {
                continue;
            }
            let by = callers(caller, fqn).join(", ");
            // a runner registers submachines by id, which is the key but for a transitive
            // aliased import (keyed `ns.Inner`, id `Inner`)
            let found = defn
                .submachines
                .get(fqn)
                .or_else(|| defn.submachines.values().find(|d| d.id == fqn));
            match found {
                Some(sub) => {
                    out.push(format!(
                        "{} submachine {fqn} (invoked by {by})\n{}",
                        format.comment(),
                        format.draw(sub)?
                    ));
                    queue.push(sub);
                }
                None => out.push(format!(
                    "{} submachine {fqn} (invoked by {by}): not in this file or its imports",
                    format.comment()
                )),
            }
        }
    }
    Ok(out.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
machine M {
  context { xs: any = [] }
  initial A
  state A {
    invoke {
      initial P
      state P { invoke far.Away }
      final Q success
      from P to Q on Returned
    }
  }
  state B {
    invoke for x in xs { initial R state R {} final S success from R to S }
    with { v: x }
  }
  final C success
  from A to B on Returned
  from B join all to C else to C
}
"#;

    #[test]
    fn submachines_follow_the_machine_in_both_formats() {
        let defn = crate::load_str(TEXT, None, "m.stm").expect("loads");
        let plant = render_with_submachines(&defn, Diagram::PlantUml).expect("draws");
        let main = super::super::plantuml::render(&defn).expect("draws");
        assert!(
            plant.starts_with(&main),
            "the machine's own diagram first, as harel draws it"
        );
        assert!(
            plant.contains("' submachine M#A (invoked by M.A)\n[*] --> P"),
            "{plant}"
        );
        assert!(
            plant.contains("' submachine M#B (invoked by M.B for x in xs)\n[*] --> R"),
            "{plant}"
        );
        assert!(
            plant.contains(
                "' submachine far.Away (invoked by M#A.P): not in this file or its imports"
            ),
            "{plant}"
        );
        let mermaid = render_with_submachines(&defn, Diagram::Mermaid).expect("draws");
        assert!(
            mermaid.contains("%% submachine M#A (invoked by M.A)\nstateDiagram-v2"),
            "{mermaid}"
        );
        assert_eq!(mermaid.matches("stateDiagram-v2").count(), 3);
    }
}
