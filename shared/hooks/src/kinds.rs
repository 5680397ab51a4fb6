//! The event kinds a machine knows: those it declares (`event X {...}`) and those its
//! transitions listen for. A hook mapping to any other kind is a mistake caught at load.

use std::collections::BTreeSet;

use harel_model::Definition;

/// Every event kind `definition` declares or one of its transitions names: a hook mapping to a kind
/// outside this set could never be handled.
pub fn known_kinds(definition: &Definition) -> BTreeSet<String> {
    let mut kinds: BTreeSet<String> = definition.events.keys().cloned().collect();
    for node in &definition.nodes {
        for t in &node.transitions {
            if let Some(filter) = &t.event_filter {
                kinds.extend(filter.kinds.iter().cloned());
            }
        }
    }
    kinds
}
