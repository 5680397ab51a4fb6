//! The machines compiled into the functions.

use std::path::Path;

use harel_model::Definition;

/// (file name, source): every `.stm` file the functions run (the tests' own machine,
/// `Flow`, is `harel_testkit::machines`: never compiled into a deployed function). Each file's machines are all
/// registered, under their own names (the `definition_id` of a create message).
pub const SOURCES: &[(&str, &str)] = &[
    ("order.stm", include_str!("../machines/order.stm")),
    ("shop_order.stm", include_str!("../machines/shop_order.stm")),
    ("approval.stm", include_str!("../machines/approval.stm")),
    ("fulfilment.stm", include_str!("../machines/fulfilment.stm")),
];

/// A machine file that does not load, with the loader's reason (`file:line:col: message`
/// for a parse error, the issues for a machine that breaks harel's rules).
#[derive(Debug, thiserror::Error)]
#[error("machine file {file}: {message}")]
pub struct MachineError {
    /// The file (or the machines folder).
    pub file: String,
    /// What is wrong with it.
    pub message: String,
}

/// Load every machine of every source, validated (`harel_lang::machines`, as every host).
pub fn definitions() -> Result<Vec<Definition>, MachineError> {
    let mut out = Vec::new();
    for (file, text) in SOURCES {
        out.extend(
            harel_lang::machines::load_machines_of_text(text, file).map_err(|e| MachineError {
                file: file.to_string(),
                message: e.to_string(),
            })?,
        );
    }
    Ok(out)
}

/// Every machine of every `.stm` file in `dir` (not its subdirectories, which hold what the
/// files import), in file-name order, each loaded with its imports and validated, as harel's
/// worker does (`load_definitions`): a file that does not parse is reported
/// `file:line:col: message`, a machine that breaks harel's static rules with its issues.
pub fn dir_definitions(dir: &Path) -> Result<Vec<Definition>, MachineError> {
    if !dir.is_dir() {
        return Err(MachineError {
            file: dir.display().to_string(),
            message: "cannot read the directory: not a directory".into(),
        });
    }
    harel_lang::load_machines(dir).map_err(|e| MachineError {
        file: dir.display().to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    /// The sample application's machines have one home, examples/ (documented from there:
    /// `harel run`, harel Python's validate and steps); functions/app/machines links to them.
    #[test]
    fn the_sample_machines_are_the_example_files() {
        let examples = [
            ("order.stm", include_str!("../../../examples/order.stm")),
            (
                "shop_order.stm",
                include_str!("../../../examples/shop_order.stm"),
            ),
            (
                "approval.stm",
                include_str!("../../../examples/approval.stm"),
            ),
            (
                "fulfilment.stm",
                include_str!("../../../examples/fulfilment.stm"),
            ),
        ];
        for (file, example) in examples {
            let (_, compiled) = super::SOURCES
                .iter()
                .find(|(name, _)| *name == file)
                .expect("compiled in");
            assert_eq!(
                *compiled, example,
                "functions/app/machines/{file} differs from examples/{file}: link it there"
            );
        }
    }
}
