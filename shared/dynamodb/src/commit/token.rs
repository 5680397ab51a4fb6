//! The commit's `ClientRequestToken`: the same for the same write, so a request the SDK sends
//! again after a lost answer is acknowledged as the success it was.

use harel_model::Execution;
use harel_store::Commit;
use sha2::{Digest, Sha256};

/// The commit's `ClientRequestToken` (at most 36 characters): a digest of the execution id,
/// the version it moves to, the event it processes and everything else that varies between
/// two writes (the document, the seqs, the trace idx). The SDK's own retries re-send the
/// same token; a different write of the same execution and version (another worker, a
/// re-laid-out attempt) gets another token, so DynamoDB never answers it with
/// `IdempotentParameterMismatch` where the version check or the mark should speak.
pub fn request_token(
    bumped: &Execution,
    commit: &Commit,
    outbox_base: u64,
    spawn_base: u64,
    trace_idx: Option<u64>,
) -> String {
    let document = bumped.to_json();
    token_of_document(
        bumped,
        &document,
        commit,
        outbox_base,
        spawn_base,
        trace_idx,
    )
}

/// [`request_token`] for a layout that has serialized `bumped` already (`document`, the
/// Execution item's `data`): the same token, without serializing the Execution twice a step.
pub(crate) fn token_of_document(
    bumped: &Execution,
    document: &str,
    commit: &Commit,
    outbox_base: u64,
    spawn_base: u64,
    trace_idx: Option<u64>,
) -> String {
    let mut digest = Sha256::new();
    for part in [
        bumped.id.as_bytes(),
        &bumped.version.to_be_bytes(),
        commit
            .processed_event_id
            .as_deref()
            .unwrap_or("")
            .as_bytes(),
        &outbox_base.to_be_bytes(),
        &spawn_base.to_be_bytes(),
        &trace_idx.map_or(u64::MAX, |i| i).to_be_bytes(),
    ] {
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part);
    }
    digest.update(document.as_bytes());
    digest.update(format!("{:?}", commit.timers).as_bytes());
    digest.update(format!("{:?}", commit.published).as_bytes());
    // "harel-" and 120 bits: DynamoDB's 36 characters
    let hex: String = digest
        .finalize()
        .iter()
        .take(15)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("harel-{hex}")
}
