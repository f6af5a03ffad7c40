//! Group commit on Postgres: the calls of a moment share their statements.
//!
//! A transition on Postgres reads its instance, takes its lease with the record, commits,
//! and releases the lease. One statement (and, for a commit, one disk flush) per call per
//! step costs Postgres far more than the step itself: its time goes to starting
//! statements, round trips and flushes. So two [`Batcher`]s each take every request
//! waiting when they are free and answer them with one pipelined round trip:
//!
//! - [`reads`]: the leases dropped meanwhile released (one `DELETE`), the leases asked
//!   taken (one `INSERT`), then the records of every key loaded or leased read (one
//!   `SELECT`, a statement of its own after the leases, so that each sees every commit
//!   made before its lease was free), and the commits made meanwhile announced to every
//!   replica (`NOTIFY`, in a transaction that waits for no disk flush: a notification is
//!   not kept anyway);
//! - [`commits`]: the records written in one transaction (one disk flush for all).
//!
//! Under load a batch holds as many calls as arrived during the one before; alone, a call
//! waits for no one. A batch holds at most one lease or commit per key (two writes of one
//! row in one statement would be one too many): the second waits for the next batch.
//!
//! Each batcher keeps a connection of its own, and sends its next batch as soon as the one
//! before has had the answers that matter (a commit batch: its statement's, while its
//! `COMMIT` waits for the disk; a reads batch: its leases' and records', while its
//! notifications are sent), not once the whole round trip is over: Postgres runs the next
//! batch's statements right after the last ones, in order, where it waited for the client
//! to hear of the flush and send again (measured: 6–11% more calls a second at 32
//! connections, in `BENCHMARKS.md`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use deadpool_postgres::{Object, Pool};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::types::ToSql;

use super::announce::payloads;
use super::sql::Sql;
use crate::store::counts::{self, Counted};
use crate::store::{RecordWrite, Snapshot, StoreError, StoreKey, now_ms, unavailable};

/// The most requests one batch answers.
const MAX_BATCH: usize = 256;

/// A request as a batch sees it.
pub(super) trait Keyed {
    /// The key a batch may hold only one request about (`None`: any number).
    fn key(&self) -> Option<&str>;

    /// Whether it runs even when nobody waits for its answer (a release).
    fn unheard(&self) -> bool {
        false
    }
}

type Reply<A> = oneshot::Sender<Result<A, StoreError>>;

/// What runs one batch on the batcher's connection, and answers it ([`Batch::answer`]).
type Run<Q, A> = Box<dyn Fn(Batch<Q, A>) -> BoxFuture<'static, ()> + Send + Sync>;

/// One batch, as its [`Run`] gets it: the requests, the batcher's connection, and where
/// the answers go.
pub(super) struct Batch<Q, A> {
    /// The requests, in the order they came.
    pub(super) requests: Vec<Q>,
    /// The batcher's connection, which the next batch's statements will follow.
    pub(super) client: Arc<Object>,
    replies: Vec<Reply<A>>,
    next: Option<oneshot::Sender<()>>,
}

impl<Q, A> Batch<Q, A> {
    /// Lets the batcher send its next batch, whose statements queue on the connection
    /// behind every statement this one has sent.
    pub(super) fn let_next_go(&mut self) {
        if let Some(next) = self.next.take() {
            let _ = next.send(());
        }
    }

    /// Answers each request, in order, or all of them with one error (and lets the next
    /// batch go, if it has not yet).
    pub(super) fn answer(mut self, answers: Result<Vec<A>, StoreError>) {
        self.let_next_go();
        match answers {
            Ok(answers) => {
                for (reply, answer) in self.replies.into_iter().zip(answers) {
                    let _ = reply.send(Ok(answer));
                }
            }
            Err(error) => {
                for reply in self.replies {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
    }
}

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
    /// Starts the task that answers batches with `run` on a connection from `pool` (the
    /// same one while it lasts); it ends when the batcher is dropped. One batch is sent at
    /// a time (measured: two or four at once, on connections of their own, made smaller
    /// batches and fewer calls a second), the next once the one before lets it go.
    pub(super) fn spawn(pool: Pool, run: Run<Q, A>) -> Self {
        let (requests, received) = mpsc::unbounded_channel();
        tokio::spawn(serve(received, pool, run));
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

/// Takes what waits (or the next request to come), sends it as one batch once the batch
/// before lets it go, and again; the batches sent are answered as they finish.
async fn serve<Q: Keyed, A>(mut received: mpsc::UnboundedReceiver<(Q, Reply<A>)>, pool: Pool, run: Run<Q, A>) {
    let mut waiting: VecDeque<(Q, Reply<A>)> = VecDeque::new();
    let mut running = FuturesUnordered::new();
    // The last batch sent, until it lets the next one go (or ends).
    let mut sending: Option<oneshot::Receiver<()>> = None;
    let mut connection: Option<Arc<Object>> = None;
    loop {
        while waiting.is_empty() || sending.is_some() {
            tokio::select! {
                request = received.recv(), if waiting.is_empty() => match request {
                    Some(request) => waiting.push_back(request),
                    None => {
                        while running.next().await.is_some() {}
                        return;
                    }
                },
                _ = async { if let Some(sent) = sending.as_mut() { let _ = sent.await; } }, if sending.is_some() => {
                    sending = None;
                }
                Some(()) = running.next(), if !running.is_empty() => {}
            }
        }
        while let Ok(more) = received.try_recv() {
            waiting.push_back(more);
        }
        // Callers that gave up are not asked about; one request per key per batch.
        let mut keys = HashSet::new();
        let (mut queries, mut replies, mut later) = (Vec::new(), Vec::new(), VecDeque::new());
        for (query, reply) in waiting.drain(..) {
            if reply.is_closed() && !query.unheard() {
                continue;
            }
            let fits = queries.len() < MAX_BATCH;
            if fits && query.key().is_none_or(|key| keys.insert(key.to_string())) {
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
        let client = match connection.as_ref().filter(|client| !client.is_closed()) {
            Some(client) => client.clone(),
            None => match pool.get().await {
                Ok(client) => connection.insert(Arc::new(client)).clone(),
                Err(error) => {
                    for reply in replies {
                        let _ = reply.send(Err(unavailable(&error)));
                    }
                    continue;
                }
            },
        };
        let (next, sent) = oneshot::channel();
        sending = Some(sent);
        running.push(run(Batch { requests: queries, client, replies, next: Some(next) }));
    }
}

impl Keyed for RecordWrite {
    fn key(&self) -> Option<&str> {
        Some(self.key.as_str())
    }
}

/// A lease to take: the key, the holder's token, and how long it lives unless renewed.
pub(super) struct LeaseRequest {
    pub(super) key: StoreKey,
    pub(super) token: String,
    pub(super) ttl_ms: i64,
}

/// What the reads batch is asked ([`reads`]).
pub(super) enum Read {
    /// A record as committed.
    Load(StoreKey),
    /// A lease, and the record once it is held.
    Lease(LeaseRequest),
    /// A dropped lease to release, if it is still its holder's: (key, token).
    Release(String, String),
    /// A committed key to announce to every replica (`NOTIFY`).
    Announce(String),
}

/// What the reads batch answers, request by request.
pub(super) enum ReadAnswer {
    /// The record, if it is live.
    Loaded(Option<Stored>),
    /// The lease, or nothing (another holds it), and the record as committed: read after
    /// the lease was taken, so under it when it was.
    Leased(Option<Taken>, Option<Stored>),
    /// Released (or not held any more), or announced.
    Done,
}

impl Keyed for Read {
    fn key(&self) -> Option<&str> {
        match self {
            // Two leases of one key in one statement would be one too many.
            Read::Lease(request) => Some(request.key.as_str()),
            Read::Load(_) | Read::Release(..) | Read::Announce(_) => None,
        }
    }

    fn unheard(&self) -> bool {
        matches!(self, Read::Release(..) | Read::Announce(_))
    }
}

impl Batcher<Read, ReadAnswer> {
    /// A lease taken outside a batch (as `token`'s holder), released through this batcher
    /// when dropped.
    pub(super) fn taken(&self, key: String, token: String) -> Taken {
        Taken { key, token, reads: self.requests.downgrade() }
    }

    /// What announces commits through this batcher.
    pub(super) fn announcer(&self) -> Announcer {
        Announcer(self.requests.downgrade())
    }
}

/// Announces committed keys to every replica: they are notified by the next reads batch
/// (one more statement in its round trip, not a statement and a connection of their own).
#[derive(Clone)]
pub(super) struct Announcer(mpsc::WeakUnboundedSender<(Read, Reply<ReadAnswer>)>);

impl Announcer {
    /// Announces `key`, which has committed. (A store already gone announces nothing.)
    pub(super) fn announce(&self, key: &StoreKey) {
        if let Some(reads) = self.0.upgrade() {
            let _ = reads.send((Read::Announce(key.as_str().to_string()), oneshot::channel().0));
        }
    }
}

/// A lease a batch took, released when dropped: a caller that gave up while its batch ran
/// leaves no lease behind.
pub(super) struct Taken {
    pub(super) key: String,
    pub(super) token: String,
    reads: mpsc::WeakUnboundedSender<(Read, Reply<ReadAnswer>)>,
}

impl Drop for Taken {
    fn drop(&mut self) {
        // Released by the next reads batch, with whatever else was dropped meanwhile, in one
        // statement. (A store already gone leaves the lease to expire.)
        if let Some(reads) = self.reads.upgrade() {
            let release = Read::Release(std::mem::take(&mut self.key), std::mem::take(&mut self.token));
            let _ = reads.send((release, oneshot::channel().0));
        }
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

/// Reads: the loads, leases and releases asked meanwhile, in one round trip of at most
/// three statements, in this order — the released leases deleted, then the asked ones
/// taken (every free one, one `INSERT`), then the records of every key loaded or leased
/// read (one `SELECT`) — so that each lease's read sees every commit made before its
/// lease was free, and a waiter can take a lease released in the same batch. The commits
/// announced meanwhile are notified after them, and the batch is answered (and the next
/// one sent) without waiting for that.
pub(super) fn reads(pool: Pool, sql: Arc<Sql>) -> Batcher<Read, ReadAnswer> {
    let (requests, received) = mpsc::unbounded_channel();
    let weak = requests.downgrade();
    let run: Run<Read, ReadAnswer> = Box::new(move |mut batch: Batch<Read, ReadAnswer>| {
        let (sql, weak) = (sql.clone(), weak.clone());
        Box::pin(async move {
            let asked = std::mem::take(&mut batch.requests);
            let client = batch.client.clone();
            let prepared = futures_util::future::try_join4(
                client.prepare_cached(&sql.release_lease),
                client.prepare_cached(&sql.take_leases),
                client.prepare_cached(&sql.load_many),
                client.prepare_cached(&sql.notify),
            )
            .await;
            let (release, take, load, notify) = match prepared {
                Ok(prepared) => prepared,
                Err(error) => return batch.answer(Err(unavailable(error))),
            };
            let (mut released, mut leases, mut read) = ((Vec::new(), Vec::new()), Vec::new(), Vec::new());
            let mut announced = Vec::new();
            for request in &asked {
                match request {
                    Read::Load(key) => read.push(key.as_str()),
                    Read::Lease(lease) => {
                        leases.push(lease);
                        read.push(lease.key.as_str());
                    }
                    Read::Release(key, token) => {
                        released.0.push(key.as_str());
                        released.1.push(token.as_str());
                    }
                    Read::Announce(key) => announced.push(key.clone()),
                }
            }
            announced.sort_unstable();
            announced.dedup();
            let payloads = payloads(&announced);
            let notifying: &[&(dyn ToSql + Sync)] = &[&sql.channel, &payloads];
            let keys: Vec<&str> = leases.iter().map(|lease| lease.key.as_str()).collect();
            let tokens: Vec<&str> = leases.iter().map(|lease| lease.token.as_str()).collect();
            let ttls: Vec<i64> = leases.iter().map(|lease| lease.ttl_ms).collect();
            let now = now_ms() as i64;
            let releasing: &[&(dyn ToSql + Sync)] = &[&released.0, &released.1];
            let taking: &[&(dyn ToSql + Sync)] = &[&keys, &tokens, &ttls];
            let loading: &[&(dyn ToSql + Sync)] = &[&read, &now];
            // Each statement is sent at its future's first poll, which `join!` makes in
            // this order: the reads, then the notifications, one statement that waits for
            // no disk flush (measured: one statement, not `BEGIN`, `SET LOCAL`, the
            // notifications and `COMMIT`, 2–8% more calls a second at 32 connections).
            let reading = async {
                let (released, taken, loaded) = futures_util::join!(
                    async { if released.0.is_empty() { Ok(0) } else { client.execute(&release, releasing).await } },
                    async { if keys.is_empty() { Ok(Vec::new()) } else { client.query(&take, taking).await } },
                    async { if read.is_empty() { Ok(Vec::new()) } else { client.query(&load, loading).await } },
                );
                if let Err(error) = released {
                    tracing::debug!(%error, "leases could not be released; they expire by themselves");
                }
                (taken, loaded)
            };
            let notifying = async {
                if payloads.is_empty() {
                    return Ok(());
                }
                client.execute(&notify, notifying).await.map(|_| ())
            };
            let answering = async {
                let (taken, loaded) = reading.await;
                let answers = (|| {
                    let taken: HashSet<String> =
                        taken.map_err(unavailable)?.into_iter().map(|row| row.get(0)).collect();
                    let loaded: HashMap<String, Stored> = loaded
                        .map_err(unavailable)?
                        .into_iter()
                        .map(|row| (row.get(0), (row.get(1), row.get(2))))
                        .collect();
                    Ok(asked
                        .iter()
                        .map(|request| match request {
                            Read::Load(key) => ReadAnswer::Loaded(loaded.get(key.as_str()).cloned()),
                            Read::Lease(LeaseRequest { key, token, .. }) => {
                                let stored = loaded.get(key.as_str()).cloned();
                                let held = taken.contains(key.as_str());
                                let taken = held.then(|| Taken {
                                    key: key.as_str().to_string(),
                                    token: token.clone(),
                                    reads: weak.clone(),
                                });
                                ReadAnswer::Leased(taken, stored)
                            }
                            Read::Release(..) | Read::Announce(_) => ReadAnswer::Done,
                        })
                        .collect())
                })();
                batch.answer(answers);
            };
            let ((), notified) = futures_util::join!(answering, notifying);
            if let Err(error) = notified {
                tracing::warn!(%error, commits = announced.len(), "commits could not be announced to the other replicas");
            }
        })
    });
    tokio::spawn(serve(received, pool, run));
    Batcher { requests }
}

/// Commits: one transaction writes every record asked meanwhile (one disk flush for all),
/// then announces the ones written. Each write's outcome as [`write_records`](super::sql::write_records) gives it.
/// The next batch is sent once this one's statement has answered, while its `COMMIT`
/// waits for the disk.
pub(super) fn commits(pool: Pool, sql: Arc<Sql>, announce: Announcer) -> Batcher<RecordWrite, i64> {
    Batcher::spawn(
        pool,
        Box::new(move |mut batch: Batch<RecordWrite, i64>| {
            let (sql, announce) = (sql.clone(), announce.clone());
            Box::pin(async move {
                let writes = std::mem::take(&mut batch.requests);
                let client = batch.client.clone();
                let written = match Writes::prepare(&sql, &client, &writes.iter().collect::<Vec<_>>()).await {
                    Ok(written) => written,
                    Err(error) => return batch.answer(Err(error)),
                };
                let lost = |error: tokio_postgres::Error| {
                    // Past the COMMIT sent, an unanswered batch may have been applied.
                    if error.is_closed() { StoreError::OutcomeUnknown(error.to_string()) } else { unavailable(error) }
                };
                let outcomes = if let [_] = writes[..] {
                    // One write alone is one statement, its own transaction: its row locked
                    // by the statement itself, and nothing to wait for in a circle.
                    written.run_alone(&client).await.map_err(lost)
                } else {
                    // BEGIN, the writes, COMMIT: one round trip. A write that fails aborts
                    // the transaction, and Postgres answers the COMMIT with a rollback.
                    let (begun, outcomes, committed) = futures_util::join!(
                        client.batch_execute("BEGIN"),
                        async {
                            let outcomes = written.run(&client).await;
                            batch.let_next_go();
                            outcomes
                        },
                        client.batch_execute("COMMIT")
                    );
                    begun.and(outcomes).and_then(|outcomes| committed.map(|()| outcomes)).map_err(lost)
                };
                if let Ok(outcomes) = &outcomes {
                    for (write, outcome) in writes.iter().zip(outcomes) {
                        if *outcome > 0 {
                            announce.announce(&write.key);
                        }
                    }
                }
                batch.answer(outcomes);
            })
        }),
    )
}

/// What the outcome of a write that expected version `expected` means: the version written; `None`, an `if_absent` write that
/// found a live record and wrote nothing; or why it was refused.
pub(super) fn outcome(expected: u64, code: i64) -> Result<Option<u64>, StoreError> {
    match code {
        -1 => Ok(None),
        -2 => Err(StoreError::LeaseLost),
        written if written > 0 => Ok(Some(written as u64)),
        conflict => Err(StoreError::Conflict { expected, found: (-3 - conflict) as u64 }),
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
    counted: Vec<Option<String>>,
}

impl Writes {
    /// Prepares the statements (once per connection: cached) and the parameters. Nothing
    /// is sent to run yet, so that [`Writes::run`]'s statements can be pipelined in order
    /// with others.
    pub(super) async fn prepare(sql: &Sql, client: &Object, writes: &[&RecordWrite]) -> Result<Self, StoreError> {
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
            counted: Vec::with_capacity(writes.len()),
        };
        for &RecordWrite { key, next, expected, fence, entry, if_absent } in writes {
            columns.counted.push(Counted::json(counts::counted(key, next).as_ref()));
            let text = serde_json::to_string(&Snapshot { version: 0, ..next.clone() }).map_err(unavailable)?;
            columns.expected.push(*expected as i64);
            columns.snapshots.push(text);
            columns.expires.push(next.expires_at_ms.map(|ms| ms.min(i64::MAX as u64) as i64));
            columns.due.push(next.wake_at_ms().map(|ms| ms.min(i64::MAX as u64) as i64));
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

    /// Sends the write statement alone (no rows locked first): for one write in a
    /// transaction of its own, whose row the statement locks itself. Its outcome codes as
    /// [`Writes::run`] gives them.
    pub(super) async fn run_alone(&self, client: &Object) -> Result<Vec<i64>, tokio_postgres::Error> {
        let now = now_ms() as i64;
        let written = client.query(&self.write, &self.parameters(&now)).await?;
        Ok(self.outcomes(written))
    }

    /// Sends the two statements, in order, and returns each write's outcome code, in
    /// the writes' order ([`outcome`] reads it). The first poll sends them all.
    pub(super) async fn run(&self, client: &Object) -> Result<Vec<i64>, tokio_postgres::Error> {
        let now = now_ms() as i64;
        let keys: &[&(dyn ToSql + Sync)] = &[&self.keys];
        let parameters = self.parameters(&now);
        let (locked, written) =
            futures_util::join!(client.execute(&self.lock, keys), client.query(&self.write, &parameters));
        locked?;
        Ok(self.outcomes(written?))
    }

    /// The write statement's parameters, the columns in its order, the time, then the
    /// names each record counts under.
    fn parameters<'a>(&'a self, now: &'a i64) -> [&'a (dyn ToSql + Sync); 13] {
        let Columns { expected, snapshots, expires, due, fences, if_absent, entries, at_ms, keep, since, counted } =
            &self.columns;
        [&self.keys, expected, snapshots, expires, due, fences, if_absent, entries, at_ms, keep, since, now, counted]
    }

    /// Each write's outcome code, in the writes' order, from the statement's rows.
    fn outcomes(&self, written: Vec<tokio_postgres::Row>) -> Vec<i64> {
        let mut outcomes: HashMap<String, i64> = written.into_iter().map(|row| (row.get(0), row.get(1))).collect();
        self.keys.iter().map(|key| outcomes.remove(key).unwrap_or(-3)).collect()
    }
}
