//! DynamoDB's limits on one transaction and one item, checked before anything is sent: a
//! commit past one fails as `TooLarge`, nothing written.

use aws_sdk_dynamodb::types::TransactWriteItem;
use harel_model::Execution;
use harel_store::StoreError;

/// DynamoDB's limits on one transaction and one item.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
/// DynamoDB's limit on a transaction's total size, in bytes (4 MB).
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// DynamoDB's limit on one item's size, in bytes (400 KB); a bigger Execution fails its commit.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// The error of a commit past a limit: `what` says which.
pub(super) fn too_large(what: String) -> StoreError {
    StoreError::TooLarge(format!("{what}; nothing was written"))
}

/// The laid-out items (each with its size; the Execution's first, checked when it was laid
/// out) against the transaction's item count, each item's size and the total size.
pub(super) fn check_transaction(
    exe: &Execution,
    puts: &[(TransactWriteItem, usize)],
) -> Result<(), StoreError> {
    if puts.len() > MAX_TRANSACTION_ITEMS {
        return Err(too_large(format!(
            "the commit of execution {:?} needs {} transaction items, above DynamoDB's {MAX_TRANSACTION_ITEMS}",
            exe.id,
            puts.len()
        )));
    }
    for (i, (_, size)) in puts.iter().enumerate().skip(1) {
        if *size > MAX_ITEM_BYTES {
            return Err(too_large(format!(
                "item {i} of the commit of execution {:?} is {size} bytes, above DynamoDB's {MAX_ITEM_BYTES}-byte item limit",
                exe.id
            )));
        }
    }
    let total: usize = puts.iter().map(|(_, size)| size).sum();
    if total > MAX_TRANSACTION_BYTES {
        return Err(too_large(format!(
            "the commit of execution {:?} is {total} bytes, above DynamoDB's {MAX_TRANSACTION_BYTES}-byte transaction limit",
            exe.id
        )));
    }
    Ok(())
}
