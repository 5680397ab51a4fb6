//! Executions: load (with the event's dedupe mark), the step's commit (the CAS write with
//! its outbox, spawns, timers, trace and mark in one transaction), listing.

use super::*;

pub(crate) fn already_processed(exe: &Execution, commit: &Commit) -> StoreError {
    StoreError::AlreadyProcessed {
        execution_id: exe.id.to_string(),
        event_id: commit
            .processed_event_id
            .as_deref()
            .unwrap_or_default()
            .to_string(),
    }
}

impl DynamoDbStore {
    /// harel's `_next_seq`: reserve `count` ids from a named counter; the first.
    pub(crate) async fn counter_block(&self, name: &str, count: u64) -> StoreResult<u64> {
        let resp = self
            .client
            .update_item()
            .table_name(self.tables.counters())
            .key("id", s(name))
            .update_expression("ADD n :k")
            .expression_attribute_values(":k", n_int(count))
            .return_values(ReturnValue::UpdatedNew)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| errors::classify("UpdateItem", &self.tables.counters(), e))?;
        let attrs = resp.attributes().cloned().unwrap_or_default();
        let n = get_u64(&attrs, "n").map_err(|e| errors::corrupt(&self.tables.counters(), e))?;
        Ok(n + 1 - count)
    }

    pub(crate) async fn seq_block(&self, name: &str, count: usize) -> StoreResult<u64> {
        if count == 0 {
            return Ok(0);
        }
        match self.seq_allocation {
            SeqAllocation::Clock => Ok(self.clock.reserve(count as u64)),
            SeqAllocation::Counter => self.counter_block(name, count as u64).await,
        }
    }

    /// The stored version of an execution (after a CAS miss without ALL_OLD).
    pub(crate) async fn stored_version(&self, execution_id: &str) -> StoreResult<Option<u64>> {
        let resp = self
            .client
            .get_item()
            .table_name(self.tables.executions())
            .key("id", s(execution_id))
            .projection_expression("version")
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.executions(), e))?;
        resp.item()
            .map(|item| get_u64(item, "version"))
            .transpose()
            .map_err(|e| errors::corrupt(&self.tables.executions(), e))
    }

    /// Whether the dedupe mark of `event_id` is there: strongly consistent where it decides
    /// between a conflict and a duplicate (whatever `consistent_reads` says), eventually
    /// consistent for harel's dedupe look.
    pub(crate) async fn has_mark(
        &self,
        execution_id: &str,
        event_id: &str,
        consistent: bool,
    ) -> StoreResult<bool> {
        if self.commit_mode == CommitMode::Lean {
            return self.window_holds(execution_id, event_id, consistent).await;
        }
        let resp = self
            .client
            .get_item()
            .table_name(self.tables.processed())
            .key("execution_id", s(execution_id))
            .key("event_id", s(event_id))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.processed(), e))?;
        Ok(resp.item().is_some())
    }

    /// One GetItem of an execution item projected to `attrs` (each name through a placeholder)
    /// and its window's slots: the lean mode's reads.
    async fn get_with_window(
        &self,
        execution_id: &str,
        attrs: &[&str],
        consistent: bool,
    ) -> StoreResult<Option<Item>> {
        let mut get = self
            .client
            .get_item()
            .table_name(self.tables.executions())
            .key("id", s(execution_id))
            .consistent_read(consistent)
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        let names = attrs
            .iter()
            .map(|a| a.to_string())
            .chain(marks::slot_attrs());
        let mut projection = Vec::new();
        for (i, name) in names.enumerate() {
            get = get.expression_attribute_names(format!("#p{i}"), name);
            projection.push(format!("#p{i}"));
        }
        let resp = get
            .projection_expression(projection.join(", "))
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.executions(), e))?;
        Ok(resp.item().cloned())
    }

    /// Whether the execution item's window holds `event_id`'s mark (the lean mode's marks):
    /// one GetItem projected to the slots.
    async fn window_holds(
        &self,
        execution_id: &str,
        event_id: &str,
        consistent: bool,
    ) -> StoreResult<bool> {
        let item = self.get_with_window(execution_id, &[], consistent).await?;
        Ok(item.is_some_and(|item| marks::window_holds(&item, event_id)))
    }

    /// The lean mode's `load_for_event`: the execution item with its window, one GetItem (a
    /// snapshot of one item, which the commit's version condition then holds to).
    async fn load_with_window(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        let attrs = ["data", TRACE_IDX_ATTR];
        let item = self
            .get_with_window(execution_id, &attrs, self.consistent_reads)
            .await?;
        let Some(item) = item else {
            return Ok((None, false));
        };
        Ok((
            Some(self.execution_of(&item)?),
            marks::window_holds(&item, event_id),
        ))
    }

    /// One BatchGetItem, its unprocessed keys asked again (unlike harel, which reads them as
    /// "absent") until every key was read: the items found, by table.
    pub(crate) async fn batch_get(
        &self,
        mut request: HashMap<String, KeysAndAttributes>,
        execution_id: &str,
    ) -> StoreResult<HashMap<String, Vec<Item>>> {
        let mut tables = request.keys().cloned().collect::<Vec<_>>();
        tables.sort();
        let tables = tables.join(", ");
        let mut found: HashMap<String, Vec<Item>> = HashMap::new();
        let mut backoff = Duration::from_millis(50);
        for _ in 0..8 {
            let resp = self
                .client
                .batch_get_item()
                .set_request_items(Some(request.clone()))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| errors::classify("BatchGetItem", &tables, e))?;
            for (table, items) in resp.responses().into_iter().flatten() {
                found
                    .entry(table.clone())
                    .or_default()
                    .extend(items.iter().cloned());
            }
            request = resp.unprocessed_keys().cloned().unwrap_or_default();
            request.retain(|_, k| !k.keys().is_empty());
            if request.is_empty() {
                return Ok(found);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        Err(StoreError::retryable(format!(
            "DynamoDB BatchGetItem left keys of {execution_id:?} unprocessed after 8 attempts"
        )))
    }

    /// The executions item's `load`, read as `consistent` says.
    pub(crate) async fn load_read(
        &self,
        execution_id: &str,
        consistent: bool,
    ) -> StoreResult<Option<Execution>> {
        let resp = self
            .client
            .get_item()
            .table_name(self.tables.executions())
            .key("id", s(execution_id))
            .projection_expression("#d, #t")
            .expression_attribute_names("#d", "data")
            .expression_attribute_names("#t", TRACE_IDX_ATTR)
            .consistent_read(consistent)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| errors::classify("GetItem", &self.tables.executions(), e))?;
        resp.item().map(|item| self.execution_of(item)).transpose()
    }

    /// The keys `load` reads, as a BatchGetItem asks them.
    pub(crate) fn execution_keys(&self, execution_id: &str, consistent: bool) -> KeysAndAttributes {
        KeysAndAttributes::builder()
            .keys(HashMap::from([("id".to_string(), s(execution_id))]))
            .projection_expression("#d, #t")
            .expression_attribute_names("#d", "data")
            .expression_attribute_names("#t", TRACE_IDX_ATTR)
            .consistent_read(consistent)
            .build()
            .expect("keys are set")
    }

    /// Parse an executions item (`data`, and the trace idx we keep beside it).
    /// The commit, with a machine version kept in its transaction when `keep` has one.
    pub(crate) async fn commit_with(
        &self,
        exe: &mut Execution,
        commit: Commit,
        keep: Option<&DefinitionDoc>,
    ) -> StoreResult<Vec<u64>> {
        let mut known_trace_max = self.known_trace_max(&exe.id, exe.version);
        let published = match &self.events {
            Some(events) => events.rows(exe, &commit.published),
            None => Vec::new(),
        };
        for _ in 0..COLLISION_ATTEMPTS {
            let outbox_base = self.seq_block("outbox", commit.emits.len()).await?;
            let spawn_base = self.seq_block("spawn", commit.spawns.len()).await?;
            if commit.trace.is_some() && known_trace_max.is_none() {
                known_trace_max = Some(self.query_trace_max(&exe.id).await?);
            }
            let mut plan = commit::plan(commit::Inputs {
                tables: &self.tables,
                exe,
                commit: &commit,
                outbox_base,
                spawn_base,
                known_trace_max,
                trace_max: self.trace_max,
                retention: self.retention_now(),
                due_shards: self.due_shards,
                published: &published,
                mode: self.commit_mode,
            })?;
            if let Some(doc) = keep {
                commit::keep_definition(&mut plan, &self.tables, doc)?;
            }
            let outcome = if plan.lean.is_some() && plan.items.len() == 1 {
                commit::send_alone(&self.client, &plan).await
            } else {
                let result = commit::request(&self.client, &plan)
                    .send()
                    .await
                    .map(|_| ());
                commit::send_outcome(&plan, result)
            };
            match outcome {
                Outcome::Committed => {
                    exe.version += 1;
                    exe.stored_status = harel_model::StoredStatus(Some(exe.status));
                    match plan.trace_idx {
                        Some(idx) => self.remember_trace(&exe.id, exe.version, Some(idx)),
                        None if known_trace_max == Some(None) => {
                            self.remember_trace(&exe.id, exe.version, None)
                        }
                        None => self.forget_trace(&exe.id),
                    }
                    return Ok(plan.outbox_seqs);
                }
                Outcome::AlreadyProcessed => {
                    return Err(already_processed(exe, &commit));
                }
                Outcome::Conflict(found) => {
                    let found = match found {
                        Some(found) => found,
                        None => {
                            // no reasons to tell the mark's condition from the version's
                            // (an older emulator's bare ConditionalCheckFailedException)
                            if let Some(event_id) = &commit.processed_event_id {
                                if self.has_mark(&exe.id, event_id, true).await? {
                                    return Err(already_processed(exe, &commit));
                                }
                            }
                            self.stored_version(&exe.id).await?
                        }
                    };
                    self.forget_trace(&exe.id);
                    return Err(StoreError::Conflict {
                        execution_id: exe.id.to_string(),
                        expected: exe.version,
                        found,
                    });
                }
                Outcome::SeqCollision => continue,
                Outcome::TraceCollision => {
                    known_trace_max = None;
                    continue;
                }
                Outcome::Failed(err) => return Err(err),
            }
        }
        Err(StoreError::retryable(format!(
            "the commit of execution {:?} met existing outbox seqs or trace indexes {COLLISION_ATTEMPTS} times",
            exe.id
        )))
    }

    pub(crate) fn execution_of(&self, item: &Item) -> StoreResult<Execution> {
        let table = self.tables.executions();
        let data = get_s(item, "data").map_err(|e| errors::corrupt(&table, e))?;
        let exe = Execution::from_json(data)
            .map_err(|e| StoreError::Corrupt(format!("{table}: execution data: {e}")))?;
        if let Ok(idx) = get_u64(item, TRACE_IDX_ATTR) {
            self.remember_trace(&exe.id, exe.version, Some(idx));
        }
        Ok(exe)
    }
}

impl Executions for DynamoDbStore {
    async fn load(&self, execution_id: &str) -> StoreResult<Option<Execution>> {
        // strongly consistent by default: what a caller reads back after its own write, or
        // acts on with no commit to catch a stale copy
        self.load_read(execution_id, self.consistent_reads).await
    }

    /// Eventually consistent: half the read units, for a read whose staleness the commit
    /// after it catches (see the trait).
    async fn load_eventually(&self, execution_id: &str) -> StoreResult<Option<Execution>> {
        self.load_read(execution_id, false).await
    }

    async fn load_for_event(
        &self,
        execution_id: &str,
        event_id: &str,
    ) -> StoreResult<(Option<Execution>, bool)> {
        if self.commit_mode == CommitMode::Lean {
            return self.load_with_window(execution_id, event_id).await;
        }
        // one BatchGetItem, both reads strongly consistent: a stale execution costs a needless
        // conflict, and a stale (missing) dedupe mark next to a fresh execution would process
        // the event twice
        let exe_table = self.tables.executions();
        let proc_table = self.tables.processed();
        let exe_keys = self.execution_keys(execution_id, self.consistent_reads);
        let proc_keys = KeysAndAttributes::builder()
            .keys(HashMap::from([
                ("execution_id".to_string(), s(execution_id)),
                ("event_id".to_string(), s(event_id)),
            ]))
            .consistent_read(self.consistent_reads)
            .build()
            .expect("keys are set");
        let request: HashMap<String, KeysAndAttributes> = HashMap::from([
            (exe_table.clone(), exe_keys),
            (proc_table.clone(), proc_keys),
        ]);
        let mut found = self.batch_get(request, execution_id).await?;
        let processed = found.remove(&proc_table).is_some_and(|v| !v.is_empty());
        let exe = found
            .remove(&exe_table)
            .and_then(|v| v.into_iter().next())
            .map(|item| self.execution_of(&item))
            .transpose()?;
        Ok((exe, processed))
    }

    async fn commit(&self, exe: &mut Execution, commit: Commit) -> StoreResult<Vec<u64>> {
        self.commit_with(exe, commit, None).await
    }

    /// Eventually consistent whatever `consistent_reads` says (half the read units, as
    /// harel reads it): a mark, once written, stays as long as its execution (in the lean
    /// mode, for the window's 16 steps), so "there" is exact, and a stale "not there" only
    /// lets the step run to its commit, whose mark condition refuses it
    /// (`StoreError::AlreadyProcessed`).
    async fn is_processed(&self, execution_id: &str, event_id: &str) -> StoreResult<bool> {
        self.has_mark(execution_id, event_id, false).await
    }

    async fn list_executions(&self, query: &ListQuery) -> StoreResult<ExecutionPage> {
        self.list(query).await
    }
}
