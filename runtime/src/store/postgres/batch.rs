//! Group commit on Postgres: the calls of a moment share their statements.
//!
//! A transition on Postgres reads its instance, takes its lease with the record, and
//! commits. One statement (and, for a commit, one disk flush) per call per step costs
//! Postgres far more than the step itself: its time goes to parsing, planning, round
//! trips and flushes. So each step has a [`Batcher`]: a task that takes every request
//! waiting when it is free and answers them with one pipelined round trip — the loads of
//! the moment in one `SELECT`, their leases in one `INSERT` (and their records read right
//! after, in a statement of its own, so that each sees every commit made before its lease
//! was free), their commits in one transaction. Under load a batch holds as many calls as
//! arrived during the one before; alone, a call waits for no one.
//!
//! A batch holds at most one request per key (two commits of one row in one statement
//! would be one too many): the second waits for the next batch.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use deadpool_postgres::{Object, Pool};
use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::{Sql, unavailable};
use crate::store::{RecordWrite, Snapshot, StoreError, StoreKey, now_ms};

/// The most requests one batch answers.
const MAX_BATCH: usize = 256;

/// A request that names the key it is about.
pub(super) trait Keyed {
    fn key(&self) -> &str;
}

type Reply<A> = oneshot::Sender<Result<A, StoreError>>;

/// What runs one batch: the requests in, one answer per request, in order — or one error
/// for all of them.
type Run<Q, A> = Box<dyn Fn(Vec<Q>) -> BoxFuture<'static, Result<Vec<A>, StoreError>> + Send + Sync>;

/// Answers requests in batches, one batch at a time ([module docs](self)).
pub(super) struct Batcher<Q, A> {
    requests: mpsc::UnboundedSender<(Q, Reply<A>)>,
}

impl<Q, A> Clone for Batcher<Q, A> {
    fn clone(&self) -> Self {
        Self { requests: self.requests.clone() }
    }
}

impl<Q: Keyed + Send + 'static, A: Send + 'static> Batcher<Q, A> {
    /// Starts the task that answers batches with `run`, one at a time (measured: two or
    /// four at once, on connections of their own, made smaller batches and fewer calls a
    /// second); it ends when the batcher is dropped.
    pub(super) fn spawn(run: Run<Q, A>) -> Self {
        let (requests, received) = mpsc::unbounded_channel();
        tokio::spawn(serve(received, run));
        Self { requests }
    }

    /// `request`'s answer, from the next batch that can take it. A caller that gives up
    /// (drops this future) gives up its answer, which is dropped where it was made.
    pub(super) async fn call(&self, request: Q) -> Result<A, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.requests.send((request, reply)).map_err(|_| unavailable("the Postgres store has stopped"))?;
        answer.await.map_err(|_| unavailable("the Postgres store's batch ended without an answer"))?
    }
}

/// Takes what waits (or the next request to come), answers it as one batch, and again.
async fn serve<Q: Keyed, A>(mut received: mpsc::UnboundedReceiver<(Q, Reply<A>)>, run: Run<Q, A>) {
    let mut waiting: VecDeque<(Q, Reply<A>)> = VecDeque::new();
    loop {
        if waiting.is_empty() {
            match received.recv().await {
                Some(first) => waiting.push_back(first),
                None => return,
            }
        }
        while let Ok(more) = received.try_recv() {
            waiting.push_back(more);
        }
        // Callers that gave up are not asked about; one request per key per batch.
        let mut keys = HashSet::new();
        let (mut queries, mut replies, mut later) = (Vec::new(), Vec::new(), VecDeque::new());
        for (query, reply) in waiting.drain(..) {
            if reply.is_closed() {
                continue;
            }
            if queries.len() < MAX_BATCH && keys.insert(query.key().to_string()) {
                queries.push(query);
                replies.push(reply);
            } else {
                later.push_back((query, reply));
            }
        }
        waiting = later;
        if queries.is_empty() {
            continue;
        }
        match run(queries).await {
            Ok(answers) => {
                for (reply, answer) in replies.into_iter().zip(answers) {
                    let _ = reply.send(Ok(answer));
                }
            }
            Err(error) => {
                for reply in replies {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
    }
}

impl Keyed for StoreKey {
    fn key(&self) -> &str {
        self.as_str()
    }
}

impl Keyed for RecordWrite {
    fn key(&self) -> &str {
        self.key.as_str()
    }
}

/// A lease to take: the key, the holder's token, and how long it lives unless renewed.
pub(super) struct LeaseRequest {
    pub(super) key: StoreKey,
    pub(super) token: String,
    pub(super) ttl_ms: i64,
}

impl Keyed for LeaseRequest {
    fn key(&self) -> &str {
        self.key.as_str()
    }
}

/// A lease a batch took, released when dropped unless its caller keeps it
/// ([`Taken::keep`]): a caller that gave up while its batch ran leaves no lease behind.
pub(super) struct Taken {
    pub(super) key: String,
    pub(super) token: String,
    release: mpsc::UnboundedSender<(String, String)>,
}

impl Drop for Taken {
    fn drop(&mut self) {
        // Released with whatever else was dropped meanwhile, in one statement.
        let _ = self.release.send((std::mem::take(&mut self.key), std::mem::take(&mut self.token)));
    }
}

/// A record as stored: its version and its snapshot's JSON.
pub(super) type Stored = (i64, String);

/// Parses a stored record (none: the default snapshot, version 0).
pub(super) fn snapshot(stored: Option<Stored>) -> Result<Snapshot, StoreError> {
    match stored {
        Some((version, text)) => {
            let snapshot: Snapshot = serde_json::from_str(&text).map_err(unavailable)?;
            Ok(Snapshot { version: version as u64, ..snapshot })
        }
        None => Ok(Snapshot::default()),
    }
}

/// Loads: one `SELECT` for every key asked meanwhile.
pub(super) fn loads(pool: Pool, sql: Arc<Sql>) -> Batcher<StoreKey, Option<Stored>> {
    Batcher::spawn(Box::new(move |keys: Vec<StoreKey>| {
        let (pool, sql) = (pool.clone(), sql.clone());
        Box::pin(async move {
            let client = pool.get().await.map_err(unavailable)?;
            let names: Vec<&str> = keys.iter().map(StoreKey::as_str).collect();
            let statement = client.prepare_cached(&sql.load_many).await.map_err(unavailable)?;
            let rows = client.query(&statement, &[&names, &(now_ms() as i64)]).await.map_err(unavailable)?;
            let mut found: HashMap<String, Stored> =
                rows.into_iter().map(|row| (row.get(0), (row.get(1), row.get(2)))).collect();
            Ok(names.iter().map(|key| found.remove(*key)).collect())
        })
    }))
}

/// Leases: one `INSERT` takes every free one asked meanwhile; then, in a statement of its
/// own (pipelined: the same round trip), the records they guard are read — after the
/// leases, so each read sees every commit made before its lease was free.
pub(super) fn leases(
    pool: Pool,
    sql: Arc<Sql>,
    release: mpsc::UnboundedSender<(String, String)>,
) -> Batcher<LeaseRequest, Option<(Taken, Option<Stored>)>> {
    Batcher::spawn(Box::new(move |requests: Vec<LeaseRequest>| {
        let (pool, sql, release) = (pool.clone(), sql.clone(), release.clone());
        Box::pin(async move {
            let client = pool.get().await.map_err(unavailable)?;
            let take = client.prepare_cached(&sql.take_leases).await.map_err(unavailable)?;
            let load = client.prepare_cached(&sql.load_many).await.map_err(unavailable)?;
            let keys: Vec<&str> = requests.iter().map(|request| request.key.as_str()).collect();
            let tokens: Vec<&str> = requests.iter().map(|request| request.token.as_str()).collect();
            let ttls: Vec<i64> = requests.iter().map(|request| request.ttl_ms).collect();
            let now = now_ms() as i64;
            // Sent in this order, answered in this order.
            let taking: &[&(dyn tokio_postgres::types::ToSql + Sync)] = &[&keys, &tokens, &ttls];
            let loading: &[&(dyn tokio_postgres::types::ToSql + Sync)] = &[&keys, &now];
            let (taken, loaded) = futures_util::join!(client.query(&take, taking), client.query(&load, loading));
            let taken: HashSet<String> = taken.map_err(unavailable)?.into_iter().map(|row| row.get(0)).collect();
            let mut loaded: HashMap<String, Stored> =
                loaded.map_err(unavailable)?.into_iter().map(|row| (row.get(0), (row.get(1), row.get(2)))).collect();
            Ok(requests
                .into_iter()
                .map(|request| {
                    let key = request.key.as_str();
                    taken.contains(key).then(|| {
                        let stored = loaded.remove(key);
                        let held = Taken { key: key.to_string(), token: request.token, release: release.clone() };
                        (held, stored)
                    })
                })
                .collect())
        })
    }))
}

/// Commits: one transaction writes every record asked meanwhile (one disk flush for all),
/// then announces the ones written. Each write's outcome as [`write_records`] gives it.
pub(super) fn commits(pool: Pool, sql: Arc<Sql>, announce: mpsc::UnboundedSender<String>) -> Batcher<RecordWrite, i64> {
    Batcher::spawn(Box::new(move |writes: Vec<RecordWrite>| {
        let (pool, sql, announce) = (pool.clone(), sql.clone(), announce.clone());
        Box::pin(async move {
            let client = pool.get().await.map_err(unavailable)?;
            let written = Writes::prepare(&sql, &client, &writes).await?;
            // BEGIN, the writes, COMMIT: one round trip. A write that fails aborts the
            // transaction, and Postgres answers the COMMIT with a rollback.
            let (begun, outcomes, committed) = futures_util::join!(
                client.batch_execute("BEGIN"),
                written.run(&client),
                client.batch_execute("COMMIT")
            );
            let lost = |error: tokio_postgres::Error| {
                // Past the COMMIT sent, an unanswered batch may have been applied.
                if error.is_closed() { StoreError::OutcomeUnknown(error.to_string()) } else { unavailable(error) }
            };
            begun.map_err(lost)?;
            let outcomes = outcomes.map_err(lost)?;
            committed.map_err(lost)?;
            for (write, outcome) in writes.iter().zip(&outcomes) {
                if *outcome > 0 {
                    let _ = announce.send(write.key.as_str().to_string());
                }
            }
            Ok(outcomes)
        })
    }))
}

/// What a write's outcome means: the version written; `None`, an `if_absent` write that
/// found a live record and wrote nothing; or why it was refused.
pub(super) fn outcome(write: &RecordWrite, code: i64) -> Result<Option<u64>, StoreError> {
    match code {
        -1 => Ok(None),
        -2 => Err(StoreError::LeaseLost),
        written if written > 0 => Ok(Some(written as u64)),
        conflict => Err(StoreError::Conflict { expected: write.expected, found: (-3 - conflict) as u64 }),
    }
}

/// Records to write in a transaction that is open (the batch's, or a handler's), their
/// statements prepared: the rows that exist locked in key order, then one statement that
/// judges and writes them all, creating the rows of keys never written, in key order too
/// (two writers never wait on each other in a circle): `write_records` in `mod.rs` — the
/// lease's fencing token, the version compared and bumped, the history cleared for a
/// record that was not live, appended and trimmed.
pub(super) struct Writes {
    lock: tokio_postgres::Statement,
    write: tokio_postgres::Statement,
    keys: Vec<String>,
    columns: Columns,
}

/// The writes, column by column (`unnest` turns them back into rows).
struct Columns {
    expected: Vec<i64>,
    snapshots: Vec<String>,
    expires: Vec<Option<i64>>,
    due: Vec<Option<i64>>,
    fences: Vec<Option<String>>,
    if_absent: Vec<bool>,
    entries: Vec<Option<String>>,
    at_ms: Vec<Option<i64>>,
    keep: Vec<Option<i64>>,
    since: Vec<Option<i64>>,
}

impl Writes {
    /// Prepares the statements (once per connection: cached) and the parameters. Nothing
    /// is sent to run yet, so that [`Writes::run`]'s statements can be pipelined in order
    /// with others.
    pub(super) async fn prepare(sql: &Sql, client: &Object, writes: &[RecordWrite]) -> Result<Self, StoreError> {
        let lock = client.prepare_cached(&sql.lock_records).await.map_err(unavailable)?;
        let write = client.prepare_cached(&sql.write_records).await.map_err(unavailable)?;
        let mut columns = Columns {
            expected: Vec::with_capacity(writes.len()),
            snapshots: Vec::with_capacity(writes.len()),
            expires: Vec::with_capacity(writes.len()),
            due: Vec::with_capacity(writes.len()),
            fences: Vec::with_capacity(writes.len()),
            if_absent: Vec::with_capacity(writes.len()),
            entries: Vec::with_capacity(writes.len()),
            at_ms: Vec::with_capacity(writes.len()),
            keep: Vec::with_capacity(writes.len()),
            since: Vec::with_capacity(writes.len()),
        };
        for RecordWrite { next, expected, fence, entry, if_absent, .. } in writes {
            let text = serde_json::to_string(&Snapshot { version: 0, ..next.clone() }).map_err(unavailable)?;
            columns.expected.push(*expected as i64);
            columns.snapshots.push(text);
            columns.expires.push(next.expires_at_ms.map(|ms| ms.min(i64::MAX as u64) as i64));
            columns.due.push(next.due_at_ms.map(|ms| ms.min(i64::MAX as u64) as i64));
            columns.fences.push(fence.clone());
            columns.if_absent.push(*if_absent);
            let text = entry.as_ref().map(|(entry, _)| serde_json::to_string(entry)).transpose();
            columns.entries.push(text.map_err(unavailable)?);
            columns.at_ms.push(entry.as_ref().map(|(entry, _)| entry.at_ms() as i64));
            columns.keep.push(entry.as_ref().and_then(|(_, retention)| retention.entries()).map(|most| most as i64));
            columns.since.push(
                entry
                    .as_ref()
                    .filter(|(_, retention)| retention.age().is_some())
                    .map(|(entry, retention)| retention.oldest_kept_ms(entry.at_ms()) as i64),
            );
        }
        let keys = writes.iter().map(|write| write.key.as_str().to_string()).collect();
        Ok(Self { lock, write, keys, columns })
    }

    /// Sends the two statements, in order, and returns each write's outcome code, in
    /// the writes' order ([`outcome`] reads it). The first poll sends them all.
    pub(super) async fn run(&self, client: &Object) -> Result<Vec<i64>, tokio_postgres::Error> {
        let Columns { expected, snapshots, expires, due, fences, if_absent, entries, at_ms, keep, since } =
            &self.columns;
        let now = now_ms() as i64;
        let keys: &[&(dyn tokio_postgres::types::ToSql + Sync)] = &[&self.keys];
        let columns: &[&(dyn tokio_postgres::types::ToSql + Sync)] =
            &[&self.keys, expected, snapshots, expires, due, fences, if_absent, entries, at_ms, keep, since, &now];
        let (locked, written) =
            futures_util::join!(client.execute(&self.lock, keys), client.query(&self.write, columns));
        locked?;
        let mut outcomes: HashMap<String, i64> = written?.into_iter().map(|row| (row.get(0), row.get(1))).collect();
        Ok(self.keys.iter().map(|key| outcomes.remove(key).unwrap_or(-3)).collect())
    }
}
