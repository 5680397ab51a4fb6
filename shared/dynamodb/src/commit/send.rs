//! The laid-out commit sent as one `TransactWriteItems` (or, a lean commit of the Execution
//! alone, one `UpdateItem`), and how it ended: which condition failed, read from the
//! cancellation reasons' positions in the plan, decides the [`Outcome`]; any other failure is
//! classified retryable or not.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{CancellationReason, ReturnConsumedCapacity};
use harel_store::StoreError;

use super::layout::Plan;
use crate::codec;
use crate::errors;

/// How a sent transaction ended.
pub enum Outcome {
    /// Every write applied.
    Committed,
    /// The CAS failed: `found` is the stored version when the reasons carried it (ALL_OLD),
    /// `None` inside means "absent", and an outer `None` means "read it back".
    Conflict(Option<Option<u64>>),
    /// The processed mark exists: another writer committed this event (whatever the
    /// version check said).
    AlreadyProcessed,
    /// An outbox/spawn Put met an existing seq: retry with fresh seqs.
    SeqCollision,
    /// The trace Put met an existing idx: re-read the max and retry.
    TraceCollision,
    /// Any other failure, classified retryable or not (a throttled or unreachable DynamoDB, a
    /// missing table, a refused request).
    Failed(StoreError),
}

/// Reads a `TransactWriteItems` result against the plan that was sent: which condition failed
/// decides the outcome, the cancellation reasons' positions pointing into `plan.items`.
pub fn send_outcome(
    plan: &Plan,
    result: Result<(), aws_sdk_dynamodb::error::SdkError<TransactWriteItemsError>>,
) -> Outcome {
    let err = match result {
        Ok(()) => return Outcome::Committed,
        Err(err) => err,
    };
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
        err.as_service_error()
    {
        return from_reasons(plan, cancel.cancellation_reasons());
    }
    // older emulators answer a failed condition with the bare exception, no reasons
    if err.code() == Some("ConditionalCheckFailedException") {
        return Outcome::Conflict(None);
    }
    Outcome::Failed(errors::classify("TransactWriteItems", &plan.tables(), err))
}

fn from_reasons(plan: &Plan, reasons: &[CancellationReason]) -> Outcome {
    let code = |i: usize| reasons.get(i).and_then(|r| r.code()).unwrap_or("None");
    if reasons.is_empty() {
        // nothing to decide from: the caller reads the stored version back
        return Outcome::Conflict(None);
    }
    // first: a present mark means the event is done, even when the version moved too (the
    // writer that set the mark moved it); acknowledging beats a reload and a retry
    if plan
        .mark_item
        .is_some_and(|i| code(i) == "ConditionalCheckFailed")
    {
        return Outcome::AlreadyProcessed;
    }
    if code(0) == "ConditionalCheckFailed" {
        return cas_missed(plan, reasons[0].item());
    }
    if plan
        .seq_items
        .clone()
        .any(|i| code(i) == "ConditionalCheckFailed")
    {
        return Outcome::SeqCollision;
    }
    if plan
        .trace_item
        .is_some_and(|i| code(i) == "ConditionalCheckFailed")
    {
        return Outcome::TraceCollision;
    }
    let codes: Vec<String> = reasons
        .iter()
        .enumerate()
        .filter(|(_, r)| r.code().is_some_and(|c| c != "None"))
        .map(|(i, r)| {
            format!(
                "item {i}: {}{}",
                r.code().unwrap_or("?"),
                r.message().map(|m| format!(" ({m})")).unwrap_or_default()
            )
        })
        .collect();
    let text = format!(
        "DynamoDB TransactWriteItems cancelled, not by the version check: {}",
        codes.join("; ")
    );
    let transient = reasons
        .iter()
        .filter_map(|r| r.code())
        .any(|c| errors::RETRYABLE_REASONS.contains(&c));
    Outcome::Failed(if transient {
        StoreError::retryable(text)
    } else {
        StoreError::other(text)
    })
}

/// The Execution's condition failed; `stored` is the item as stored when the answer carried it
/// (ALL_OLD: absent when there is no item, or from an emulator that does not return it).
fn cas_missed(plan: &Plan, stored: Option<&codec::Item>) -> Outcome {
    let Some(stored) = stored else {
        // read the version back
        return Outcome::Conflict(None);
    };
    let version = codec::get_u64(stored, "version").ok();
    if let Some(lean) = &plan.lean {
        // an UpdateItem has no request token: the SDK's resend of a write whose answer was
        // lost meets the write itself, stamped with this attempt's id
        let ours = matches!(
            stored.get(super::layout::COMMIT_ID_ATTR),
            Some(aws_sdk_dynamodb::types::AttributeValue::B(id)) if id.as_ref() == lean.commit_id
        );
        if ours {
            return Outcome::Committed;
        }
        // the window decides as the processed item does in compat: the event was applied,
        // whatever the version says
        if let Some(event_id) = &lean.event_id {
            if crate::marks::window_holds(stored, event_id) {
                return Outcome::AlreadyProcessed;
            }
        }
    }
    Outcome::Conflict(version.map(Some))
}

/// Sends a lean commit that writes the Execution item alone as one `UpdateItem` (one write
/// unit where a transaction of one item costs two), and reads how it ended.
pub async fn send_alone(client: &aws_sdk_dynamodb::Client, plan: &Plan) -> Outcome {
    let update = plan.items[0]
        .update()
        .expect("a lean commit's first item is its Execution update");
    let result = client
        .update_item()
        .table_name(update.table_name())
        .set_key(Some(update.key().clone()))
        .update_expression(update.update_expression())
        .set_condition_expression(update.condition_expression().map(str::to_string))
        .set_expression_attribute_names(update.expression_attribute_names().cloned())
        .set_expression_attribute_values(update.expression_attribute_values().cloned())
        .return_values_on_condition_check_failure(
            aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
        )
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await;
    match result {
        Ok(_) => Outcome::Committed,
        Err(err) => match err.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                cas_missed(plan, failed.item())
            }
            _ => Outcome::Failed(errors::classify("UpdateItem", update.table_name(), err)),
        },
    }
}

/// The request, with consumed capacity asked for (the benchmark reads it).
pub fn request(
    client: &aws_sdk_dynamodb::Client,
    plan: &Plan,
) -> aws_sdk_dynamodb::operation::transact_write_items::builders::TransactWriteItemsFluentBuilder {
    client
        .transact_write_items()
        .set_transact_items(Some(plan.items.clone()))
        .client_request_token(plan.token.clone())
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
}
