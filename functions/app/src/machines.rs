//! The machines compiled into the functions.

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
