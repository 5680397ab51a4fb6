//! The machines compiled into the functions.

use std::path::Path;

use harel_model::Definition;

/// (file name, source): every `.stm` file the functions run. Each file's machines are all
/// registered, under their own names (the `definition_id` of a create message).
pub const SOURCES: &[(&str, &str)] = &[
    ("order.stm", include_str!("../machines/order.stm")),
    ("shop_order.stm", include_str!("../machines/shop_order.stm")),
    ("approval.stm", include_str!("../machines/approval.stm")),
    ("fulfilment.stm", include_str!("../machines/fulfilment.stm")),
    ("flow.stm", include_str!("../machines/flow.stm")),
];

#[derive(Debug, thiserror::Error)]
#[error("machine file {file}: {message}")]
pub struct MachineError {
    pub file: String,
    pub message: String,
}

/// Load every machine of every source.
pub fn definitions() -> Result<Vec<Definition>, MachineError> {
    let mut out = Vec::new();
    for (file, text) in SOURCES {
        let program = harel_lang::parse(text, file).map_err(|e| MachineError {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        for name in program.machines.keys() {
            let defn = harel_lang::load_str(text, Some(name), file).map_err(|e| MachineError {
                file: file.to_string(),
                message: e.to_string(),
            })?;
            out.push(defn);
        }
    }
    Ok(out)
}

/// Every machine of every `.stm` file in `dir` (not its subdirectories, which hold what the
/// files import), in file-name order, each loaded with its imports and validated, as harel's
/// worker does (`load_definitions`): a file that does not parse is reported
/// `file:line:col: message`, a machine that breaks harel's static rules with its issues.
pub fn dir_definitions(dir: &Path) -> Result<Vec<Definition>, MachineError> {
    let shown = dir.display().to_string();
    let files = harel_lang::stm_files(dir).map_err(|e| MachineError {
        file: shown.clone(),
        message: format!("cannot read the directory: {e}"),
    })?;
    let mut out = Vec::new();
    for path in files {
        let file = path.display().to_string();
        let err = |message: String| MachineError {
            file: file.clone(),
            message,
        };
        let program = harel_lang::parse_file(&path).map_err(|e| err(e.to_string()))?;
        for name in program.machines.keys() {
            let defn = harel_lang::load_file(&path, Some(name)).map_err(|e| err(e.to_string()))?;
            harel_lang::validate_or_raise(&defn)
                .map_err(|e| err(format!("machine {name} is invalid: {e}")))?;
            out.push(defn);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    /// The example application is documented from examples/ (`harel run`, harel Python's
    /// validate and steps): the functions must run that very file.
    #[test]
    fn the_shop_order_is_the_example_file() {
        let example = include_str!("../../../examples/shop_order.stm");
        let (_, compiled) = super::SOURCES
            .iter()
            .find(|(name, _)| *name == "shop_order.stm")
            .expect("compiled in");
        assert_eq!(
            *compiled, example,
            "functions/app/machines/shop_order.stm differs from examples/shop_order.stm: copy it"
        );
    }
}
