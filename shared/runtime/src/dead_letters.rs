//! The dead letters' operations, the same for every host (`harel dlq`, the console): a look
//! that leaves them in place, a redrive back to the main queue that checks the execution
//! first, and a delete. The queue side (what a look costs, the message a redrive sends) is
//! `harel_queue::dead_letters`'; what is checked against the store is here.

use harel_model::Status;
use harel_queue::dead_letters::LOOK_HOLD;
use harel_queue::inbound::Inbound;
use harel_queue::{DeadLetter, DeadLetterQueue, Transport, TransportError};
use harel_store::{ExecutionStore, StoreError};

/// Why a dead-letter operation stopped: the queue or the store failed. Letters already
/// redriven or deleted stay so; the rest were released where possible.
#[derive(Debug, thiserror::Error)]
pub enum DeadLetterError {
    /// A receive, release, delete or send failed.
    #[error(transparent)]
    Queue(#[from] TransportError),
    /// Reading an execution, to check a redrive, failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Which dead letters an operation is for.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// Every dead letter the look can see.
    All,
    /// The dead letters with these message ids (`harel dlq show|redrive|delete ID...`).
    Ids(Vec<String>),
}

impl Selection {
    fn takes(&self, letter: &DeadLetter) -> bool {
        match self {
            Selection::All => true,
            Selection::Ids(ids) => ids.contains(&letter.message_id),
        }
    }
}

/// What an operation did with one dead letter (or one asked-for id).
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Sent back to the main queue and deleted from the DLQ.
    Redriven,
    /// A dry run: it would be redriven.
    WouldRedrive,
    /// Left on the DLQ, with why.
    Left(String),
    /// Removed from the DLQ for good.
    Deleted,
    /// No such message in what the look could see.
    NotFound,
}

/// The result for one dead letter (or one asked-for id the look did not find).
#[derive(Clone, Debug, PartialEq)]
pub struct Done {
    /// The dead letter's message id on the DLQ (as asked for, when it was not found).
    pub message_id: String,
    /// The dead letter, when the look found it.
    pub letter: Option<DeadLetter>,
    /// What was done with it.
    pub verdict: Verdict,
}

/// Why an id the look did not see may still be there.
pub const NOT_SEEN: &str = "not on the dead-letter queue (or behind 10 earlier dead letters of its execution: a FIFO look sees the first 10 of each group)";

/// Every dead letter a look can see, released again (each counts one more receive).
pub async fn look<D: DeadLetterQueue>(dlq: &D) -> Result<Vec<DeadLetter>, DeadLetterError> {
    let letters = dlq.receive_all(LOOK_HOLD).await?;
    dlq.release(&letters).await?;
    Ok(letters)
}

/// Whether `letter` may go back to the main queue: `Err(why not)` when its execution is gone
/// or finished (an event), exists already (a create), or it cannot be read at all.
pub async fn check_redrive<S: ExecutionStore>(
    store: &S,
    letter: &DeadLetter,
) -> Result<Result<harel_queue::Outgoing, String>, StoreError> {
    let (inbound, outgoing) = match letter.redrive_message() {
        Ok(ready) => ready,
        Err(malformed) => return Ok(Err(format!("malformed: {malformed}"))),
    };
    let group = outgoing.group_id.as_str();
    let exe = store.load(group).await?;
    Ok(match (inbound, exe) {
        (Inbound::Create(_), Some(exe)) => Err(format!(
            "execution {group} exists already ({}): the create would do nothing",
            exe.status
        )),
        (Inbound::Create(_), None) => Ok(outgoing),
        (Inbound::Event(_), None) => Err(format!("execution {group} is gone")),
        (Inbound::Event(_), Some(exe)) if exe.status.is_finished() => Err(format!(
            "execution {group} is finished ({}): the event would be skipped",
            exe.status
        )),
        (Inbound::Event(_), Some(exe)) if exe.status == Status::Pending => Err(format!(
            "execution {group} is PENDING (not started): the worker would discard the event"
        )),
        (Inbound::Event(_), Some(exe)) if exe.status == Status::Failed => Err(format!(
            "execution {group} is FAILED: bring it back first (harel redrive {group} --to STATE)"
        )),
        (Inbound::Event(_), Some(_)) => Ok(outgoing),
    })
}

/// Redrive the selected dead letters to `main` in their order on the DLQ (so an execution's
/// events keep theirs), each only after [`check_redrive`] allows it; the rest are released.
/// A dry run checks and moves nothing.
pub async fn redrive<S, D, T>(
    store: &S,
    dlq: &D,
    main: &T,
    selection: &Selection,
    dry_run: bool,
) -> Result<Vec<Done>, DeadLetterError>
where
    S: ExecutionStore,
    D: DeadLetterQueue,
    T: Transport,
{
    let letters = dlq.receive_all(LOOK_HOLD).await?;
    let mut done = Vec::new();
    let mut keep = Vec::new();
    let mut failure = None;
    for letter in letters {
        if failure.is_some() || !selection.takes(&letter) {
            keep.push(letter);
            continue;
        }
        let verdict = match check_redrive(store, &letter).await {
            Err(e) => {
                failure = Some(DeadLetterError::from(e));
                keep.push(letter);
                continue;
            }
            Ok(Err(why)) => Verdict::Left(why),
            Ok(Ok(_)) if dry_run => Verdict::WouldRedrive,
            Ok(Ok(outgoing)) => match main.publish(outgoing).await {
                Ok(()) => match dlq.delete(&letter).await {
                    Ok(()) => Verdict::Redriven,
                    // sent but still on the DLQ: said, not hidden (a second redrive would
                    // send it twice, with a fresh dedupe id)
                    Err(e) => Verdict::Left(format!(
                        "sent to the main queue, but deleting it from the DLQ failed: {e}"
                    )),
                },
                Err(e) => {
                    failure = Some(e.into());
                    keep.push(letter);
                    continue;
                }
            },
        };
        if verdict != Verdict::Redriven {
            keep.push(letter.clone());
        }
        done.push(Done {
            message_id: letter.message_id.clone(),
            letter: Some(letter),
            verdict,
        });
    }
    dlq.release(&keep).await?;
    if let Some(e) = failure {
        return Err(e);
    }
    add_not_found(&mut done, selection);
    Ok(done)
}

/// Delete the dead letters `ids` for good; the others are released.
pub async fn delete<D: DeadLetterQueue>(
    dlq: &D,
    ids: &[String],
) -> Result<Vec<Done>, DeadLetterError> {
    let letters = dlq.receive_all(LOOK_HOLD).await?;
    let mut done = Vec::new();
    let mut keep = Vec::new();
    for letter in letters {
        if ids.contains(&letter.message_id) {
            dlq.delete(&letter).await?;
            done.push(Done {
                message_id: letter.message_id.clone(),
                letter: Some(letter),
                verdict: Verdict::Deleted,
            });
        } else {
            keep.push(letter);
        }
    }
    dlq.release(&keep).await?;
    add_not_found(&mut done, &Selection::Ids(ids.to_vec()));
    Ok(done)
}

fn add_not_found(done: &mut Vec<Done>, selection: &Selection) {
    if let Selection::Ids(ids) = selection {
        for id in ids {
            if !done.iter().any(|d| d.message_id == *id) {
                done.push(Done {
                    message_id: id.clone(),
                    letter: None,
                    verdict: Verdict::NotFound,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use harel_model::{Event, Execution};
    use harel_queue::{MemoryTransport, Outgoing};
    use harel_store::prelude::*;
    use harel_store::MemoryStore;

    use super::*;

    async fn stored(store: &MemoryStore, id: &str, status: Status) {
        let mut exe = Execution::new("M").with_id(id);
        exe.status = status;
        store.save(&mut exe).await.expect("stored");
    }

    #[tokio::test]
    async fn redrives_what_can_run_and_leaves_the_rest_saying_why() {
        let store = MemoryStore::new();
        stored(&store, "live", Status::Running).await;
        stored(&store, "done", Status::Done).await;
        let dlq = MemoryTransport::new();
        let main = MemoryTransport::new();
        let event = |id: &str| Event::new("Pay").with_id(id).to_json();
        let create = r#"{"kind":"harel:create","id":"c1","data":{"definition_id":"M"}}"#;
        for (src, group, body) in [
            ("1", "live", event("a")),
            ("2", "done", event("b")),
            ("3", "gone", event("c")),
            ("4", "new", create.to_string()),
            ("5", "live", "{oops".to_string()),
        ] {
            dlq.dead_letter(src, Some(group), &body, "why")
                .await
                .expect("dead-lettered");
        }
        let dry = redrive(&store, &dlq, &main, &Selection::All, true)
            .await
            .expect("dry run");
        let would: Vec<_> = dry
            .iter()
            .filter(|d| d.verdict == Verdict::WouldRedrive)
            .map(|d| d.letter.as_ref().expect("seen").group_id.clone())
            .collect();
        assert_eq!(would, ["live", "new"]);
        assert!(main.is_empty(), "a dry run sends nothing");
        let done = redrive(&store, &dlq, &main, &Selection::All, false)
            .await
            .expect("redrive");
        let why = |group: &str| {
            done.iter()
                .find(|d| {
                    d.letter.as_ref().map(|l| l.group_id.as_str()) == Some(group)
                        && matches!(d.verdict, Verdict::Left(_))
                })
                .map(|d| format!("{:?}", d.verdict))
                .unwrap_or_default()
        };
        assert!(why("done").contains("finished (DONE)"), "{done:?}");
        assert!(why("gone").contains("is gone"), "{done:?}");
        assert!(
            why("live").contains("malformed: body is not JSON"),
            "{done:?}"
        );
        let sent: Vec<Outgoing> = main
            .take_all()
            .into_iter()
            .map(|r| Outgoing::raw(r.group_id, r.dedupe_id, r.body).expect("valid"))
            .collect();
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0].group_id, "live");
        assert!(sent[0].dedupe_id.starts_with("redrive:"));
        assert_eq!(look(&dlq).await.expect("look").len(), 3, "the left stay");
        // the created execution exists now: its create would do nothing
        stored(&store, "new", Status::Running).await;
        dlq.dead_letter("6", Some("new"), create, "why")
            .await
            .expect("dead-lettered");
        let again = redrive(
            &store,
            &dlq,
            &main,
            &Selection::Ids(vec!["mem-6".into(), "nope".into()]),
            false,
        )
        .await
        .expect("redrive");
        assert!(matches!(&again[0].verdict, Verdict::Left(w) if w.contains("exists already")));
        assert_eq!(again[1].verdict, Verdict::NotFound);
    }

    #[tokio::test]
    async fn deletes_only_what_is_named() {
        let dlq = MemoryTransport::new();
        for src in ["1", "2"] {
            dlq.dead_letter(src, Some("g"), "{}", "why")
                .await
                .expect("dead-lettered");
        }
        let done = delete(&dlq, &["mem-1".into()]).await.expect("delete");
        assert_eq!(done[0].verdict, Verdict::Deleted);
        let left = look(&dlq).await.expect("look");
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].message_id, "mem-2");
    }
}
