//! A machine version kept in the transaction of the first commit that uses it, as one more
//! item of the laid-out plan.

use aws_sdk_dynamodb::types::TransactWriteItem;
use harel_store::StoreError;

use super::layout::Plan;
use super::limits::{too_large, MAX_ITEM_BYTES, MAX_TRANSACTION_ITEMS};
use crate::codec::{n_float, s};
use crate::tables::Tables;

/// Keep a machine version in the same transaction as the commit of the first execution that
/// uses it: no request of its own. An update, not a guarded put: a version is its content, so
/// when another process kept it first this writes the same values (`created_at` stays the
/// first), and nothing can cancel the commit.
pub fn keep_definition(
    plan: &mut Plan,
    tables: &Tables,
    doc: &harel_store::DefinitionDoc,
) -> Result<(), StoreError> {
    let table = tables.definitions();
    let created_at = n_float(doc.created_at)
        .map_err(|e| StoreError::other(format!("{table}: created_at: {e}")))?;
    let document = doc.document.to_string();
    let size = document.len() + doc.machine.len() + doc.version.len() + 64;
    if size > MAX_ITEM_BYTES {
        return Err(too_large(format!(
            "version {} of {} would be stored as a {size}-byte item, above DynamoDB's {MAX_ITEM_BYTES}-byte item limit",
            doc.version, doc.machine
        )));
    }
    if plan.items.len() + 1 > MAX_TRANSACTION_ITEMS {
        return Err(too_large(format!(
            "keeping version {} adds a transaction item past DynamoDB's {MAX_TRANSACTION_ITEMS}",
            doc.version
        )));
    }
    let update = aws_sdk_dynamodb::types::Update::builder()
        .table_name(table)
        .key("version", s(&doc.version))
        .update_expression(
            "SET #m = if_not_exists(#m, :m), #d = if_not_exists(#d, :d), #c = if_not_exists(#c, :c)",
        )
        .expression_attribute_names("#m", "machine")
        .expression_attribute_names("#d", "document")
        .expression_attribute_names("#c", "created_at")
        .expression_attribute_values(":m", s(&doc.machine))
        .expression_attribute_values(":d", s(document))
        .expression_attribute_values(":c", created_at)
        .build()
        .expect("table name, key and expression are set");
    // last: the indexes `send_outcome` reads (version, mark, seqs, trace) stay where they are
    plan.items
        .push(TransactWriteItem::builder().update(update).build());
    Ok(())
}
