//! The store's statements, written once for its schema (the schema is the placeholder
//! each is formatted with).

/// The store's statements, written once for its schema.
pub(super) struct Sql {
    pub(super) load_many: String,
    pub(super) take_leases: String,
    pub(super) take_over_lease: String,
    pub(super) lock_records: String,
    pub(super) write_records: String,
    pub(super) history: String,
    pub(super) renew_lease: String,
    pub(super) release_lease: String,
    pub(super) remove: String,
    pub(super) remove_history: String,
    pub(super) due: String,
    pub(super) due_changed: String,
    pub(super) live_keys: String,
    pub(super) notify: String,
    pub(super) count_instances: String,
    pub(super) sweep_records: String,
    pub(super) sweep_leases: String,
    pub(super) window_lock: String,
    pub(super) window_clear: String,
    pub(super) window_count: String,
    pub(super) window_spend: String,
    pub(super) window_oldest: String,
    pub(super) window_refund: String,
    /// The `LISTEN`/`NOTIFY` channel of this schema's commits.
    pub(super) channel: String,
    /// The schema.
    pub(super) schema: String,
}

impl Sql {
    pub(super) fn new(schema: &str) -> Self {
        let s = format!("\"{schema}\"");
        let channel = format!("{schema}_commits");
        let now = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
        Self {
            load_many: format!(
                "SELECT key, version, snapshot FROM {s}.records WHERE key = ANY($1::text[]) \
                 AND snapshot IS NOT NULL AND (expires_at_ms IS NULL OR expires_at_ms > $2)"
            ),
            take_leases: format!(
                "INSERT INTO {s}.leases AS held (key, token, expires_at) \
                 SELECT key, token, clock_timestamp() + ttl_ms * interval '1 millisecond' \
                 FROM unnest($1::text[], $2::text[], $3::bigint[]) AS asked (key, token, ttl_ms) ORDER BY key \
                 ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at \
                 WHERE held.expires_at <= clock_timestamp() RETURNING key"
            ),
            take_over_lease: format!(
                "INSERT INTO {s}.leases (key, token, expires_at) \
                 VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 millisecond') \
                 ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at"
            ),
            lock_records: format!("SELECT 1 FROM {s}.records WHERE key = ANY($1::text[]) ORDER BY key FOR UPDATE"),
            write_records: write_records(&s),
            history: format!(
                "SELECT h.entry FROM {s}.history h JOIN {s}.records r ON r.key = h.key \
                 WHERE h.key = $1 AND r.snapshot IS NOT NULL AND (r.expires_at_ms IS NULL OR r.expires_at_ms > $2) \
                 ORDER BY h.seq"
            ),
            renew_lease: format!(
                "UPDATE {s}.leases SET expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond' \
                 WHERE key = $1 AND token = $2"
            ),
            // The rows are locked in key order, as `take_leases` takes them: a batch
            // releasing keys and another replica's batch taking some of the same keys
            // otherwise lock them in opposite orders and deadlock (seen with three
            // replicas: `benches/scale`, `backlog`).
            release_lease: format!(
                "DELETE FROM {s}.leases AS held WHERE held.key IN (SELECT mine.key FROM {s}.leases AS mine \
                 JOIN unnest($1::text[], $2::text[]) AS released (key, token) \
                 ON mine.key = released.key AND mine.token = released.token ORDER BY mine.key FOR UPDATE OF mine)"
            ),
            // Removed: expired since always (`expires_at_ms` 0), for the sweep to delete.
            remove: format!(
                "UPDATE {s}.records SET snapshot = NULL, expires_at_ms = 0, due_at_ms = NULL, counted = NULL \
                 WHERE key = $1"
            ),
            remove_history: format!("DELETE FROM {s}.history WHERE key = $1"),
            // Not one whose lease another holds: a call or another replica's sweep is
            // settling it, and a sweep would only queue behind it.
            due: format!(
                "SELECT r.key FROM {s}.records r WHERE r.due_at_ms <= $1 AND r.snapshot IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM {s}.leases l WHERE l.key = r.key AND l.expires_at > clock_timestamp()) \
                 ORDER BY r.due_at_ms LIMIT $2"
            ),
            // A sweep that committed nothing tells the deadline it read, mostly the one
            // written: then nothing is written (no row version, no flush of the log).
            due_changed: format!(
                "UPDATE {s}.records SET due_at_ms = $2 WHERE key = $1 AND due_at_ms IS DISTINCT FROM $2"
            ),
            count_instances: format!(
                "SELECT name, sum(n)::bigint FROM {s}.counts WHERE name >= $1 AND name < $2 GROUP BY name"
            ),
            sweep_records: sweep_records(&s),
            sweep_leases: sweep_leases(&s),
            live_keys: format!(
                "SELECT key FROM {s}.records WHERE snapshot IS NOT NULL AND (expires_at_ms IS NULL OR expires_at_ms > $1)"
            ),
            window_lock: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))".to_string(),
            window_clear: format!("DELETE FROM {s}.windows WHERE name = $1 AND at_ms <= {now} - $2"),
            window_count: format!("SELECT count(*) FROM {s}.windows WHERE name = $1"),
            window_spend: format!("INSERT INTO {s}.windows (name, ticket, at_ms) VALUES ($1, $2, {now})"),
            window_oldest: format!("SELECT min(at_ms) + $2 - {now} FROM {s}.windows WHERE name = $1"),
            window_refund: format!("DELETE FROM {s}.windows WHERE name = $1 AND ticket = $2"),
            // One statement, its own transaction, which waits for no disk flush (a
            // notification is not kept anyway): `set_config(…, true)` is `SET LOCAL`.
            notify: "SELECT pg_notify($1, payload) \
                     FROM set_config('synchronous_commit', 'off', true), unnest($2::text[]) AS payload"
                .to_string(),
            channel,
            schema: schema.to_string(),
        }
    }
}

/// The statement that writes a batch of records ([`Writes`](super::batch::Writes)), the rows that exist
/// already locked. A write passes if its lease's fencing token still holds, and its
/// record is at the version expected (an `if_absent` write: if its record is not live).
/// Then an existing row is written at its version plus one (a removed or expired record
/// kept its version, so versions never go back) and a key without a row gets one, above
/// every version the sweep deleted (`sweep.rs`; another writer that created it first
/// meanwhile makes this one a conflict); the
/// history is cleared when the record was not live (a write that expected none), the
/// entry appended, and the history trimmed to what the retention keeps (this statement
/// does not see the entry it writes: one fewer of the older ones is kept; none is written
/// when the history keeps none). Answers each key with the version written, or why not:
/// -1, an `if_absent` write over a live record; -2, a lease lost; -3 - N, a conflict with
/// the version N.
pub(super) fn write_records(s: &str) -> String {
    let live =
        |r: &str| format!("({r}.snapshot IS NOT NULL AND ({r}.expires_at_ms IS NULL OR {r}.expires_at_ms > $12))");
    let (live_r, live_found) = (live("r"), live("found"));
    format!(
        r#"
WITH asked AS (
    SELECT *, expected = 0 OR if_absent AS afresh,
        fence IS NULL OR EXISTS (SELECT 1 FROM {s}.leases held WHERE held.key = asked.key
            AND held.token = asked.fence AND held.expires_at > clock_timestamp()) AS fenced
    FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[],
                $7::boolean[], $8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $13::text[])
        AS asked (key, expected, snapshot, expires, due, fence, if_absent, entry, at_ms, keep, since, counted)
), updated AS (
    UPDATE {s}.records r SET version = r.version + 1, snapshot = asked.snapshot,
        expires_at_ms = asked.expires, due_at_ms = asked.due, counted = asked.counted
    FROM asked WHERE r.key = asked.key AND asked.fenced AND CASE WHEN asked.if_absent THEN NOT {live_r}
        ELSE asked.expected = CASE WHEN {live_r} THEN r.version ELSE 0 END END
    RETURNING r.key, r.version
), inserted AS (
    INSERT INTO {s}.records (key, version, snapshot, expires_at_ms, due_at_ms, counted)
    SELECT key, (SELECT highest + 1 FROM {s}.swept WHERE id = 1), snapshot, expires, due, counted FROM asked
    WHERE afresh AND fenced AND NOT EXISTS (SELECT 1 FROM {s}.records r WHERE r.key = asked.key)
    ORDER BY key
    ON CONFLICT (key) DO NOTHING
    RETURNING key, version
), written AS (
    SELECT asked.*, done.version FROM asked JOIN (SELECT * FROM updated UNION ALL SELECT * FROM inserted) done
        ON done.key = asked.key
), cleared AS (
    DELETE FROM {s}.history h USING written WHERE h.key = written.key AND written.afresh
), appended AS (
    INSERT INTO {s}.history (key, at_ms, entry)
    SELECT key, at_ms, entry FROM written WHERE entry IS NOT NULL AND (keep IS NULL OR keep > 0) ORDER BY key
), older AS (
    SELECT h.key, h.seq, h.at_ms, written.keep, written.since,
        row_number() OVER (PARTITION BY h.key ORDER BY h.seq DESC) AS newer
    FROM {s}.history h JOIN written ON h.key = written.key
    WHERE NOT written.afresh AND written.entry IS NOT NULL
), trimmed AS (
    DELETE FROM {s}.history h USING older
    WHERE h.key = older.key AND h.seq = older.seq AND (older.newer >= older.keep OR older.at_ms < older.since)
)
SELECT asked.key, CASE
    WHEN written.version IS NOT NULL THEN written.version
    WHEN asked.if_absent AND asked.fenced THEN -1
    WHEN NOT asked.fenced THEN -2
    ELSE -3 - coalesce((SELECT CASE WHEN {live_found} THEN found.version ELSE 0 END
        FROM {s}.records found WHERE found.key = asked.key), 0)
    END
FROM asked LEFT JOIN written ON written.key = asked.key
"#
    )
}

/// How long past its time an abandoned lease (its holder ended without releasing it) is
/// kept: far longer than a holder renews it, so that a deleted lease is one nobody holds.
const ABANDONED_LEASE_MS: i64 = 60_000;

/// The statement that deletes at most `$2` records expired at `$1` (a removed record
/// counts as expired since always: `expires_at_ms` 0), the oldest first, skipping the
/// rows another transaction holds, and finds them again by their keys (`= ANY`: a join
/// could read the index's entry of every expired row, however many wait); then deletes
/// their histories, and raises the highest version swept, which the versions of keys
/// inserted again start above. Answers how many records it deleted.
fn sweep_records(s: &str) -> String {
    format!(
        r#"
WITH doomed AS (
    SELECT key FROM {s}.records WHERE expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM {s}.records r WHERE r.key = ANY(ARRAY(SELECT key FROM doomed)) AND r.expires_at_ms <= $1
    RETURNING r.key, r.version
), forgotten AS (
    DELETE FROM {s}.history h WHERE h.key = ANY(ARRAY(SELECT key FROM gone))
), raised AS (
    UPDATE {s}.swept SET highest = gone_most.version
    FROM (SELECT max(version) AS version FROM gone) gone_most
    WHERE swept.id = 1 AND gone_most.version > swept.highest
)
SELECT count(*) FROM gone
"#
    )
}

/// The statement that deletes at most `$1` leases past their time by
/// [`ABANDONED_LEASE_MS`] (their holders ended without releasing them).
fn sweep_leases(s: &str) -> String {
    let abandoned = format!("expires_at < clock_timestamp() - {ABANDONED_LEASE_MS} * interval '1 millisecond'");
    format!(
        "DELETE FROM {s}.leases WHERE key IN (SELECT key FROM {s}.leases WHERE {abandoned} LIMIT $1 FOR UPDATE SKIP LOCKED) \
         AND {abandoned}"
    )
}
