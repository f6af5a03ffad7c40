//! toolgate's tables in Postgres: the migrations that create and change them, one
//! transaction each, applied at start-up.

use deadpool_postgres::Pool;

use crate::store::counts::{self, Counted};
use crate::store::{Snapshot, StoreError, StoreKey, unavailable};

/// The schema version this toolgate writes and reads: the number of its migrations.
pub const POSTGRES_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The migrations, in order; `{s}` is the schema. Applied ones are never edited: a change
/// is a new migration.
pub(super) const MIGRATIONS: [&str; 9] = [
    r#"
CREATE TABLE {s}.records (
    key text PRIMARY KEY,
    -- The last version given to the key; kept when the record is removed or expires.
    version bigint NOT NULL,
    -- The snapshot as JSON; NULL once removed.
    snapshot text,
    expires_at_ms bigint,
    due_at_ms bigint
);
CREATE INDEX records_due ON {s}.records (due_at_ms) WHERE due_at_ms IS NOT NULL;
CREATE TABLE {s}.history (
    key text NOT NULL,
    seq bigserial,
    at_ms bigint NOT NULL,
    entry text NOT NULL,
    PRIMARY KEY (key, seq)
);
CREATE TABLE {s}.leases (
    key text PRIMARY KEY,
    token text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE TABLE {s}.windows (
    name text NOT NULL,
    ticket text NOT NULL,
    at_ms bigint NOT NULL,
    PRIMARY KEY (name, ticket)
);
"#,
    // 2: one commit, one statement — a function that does in the database what a commit
    // did in eight round trips. It answers the version written; -1: an `if_absent` write
    // found a live record; -2: the lease's token no longer holds; -3 - N: the record is at
    // version N, not the one expected.
    r#"
CREATE FUNCTION {s}.commit_record(
    p_key text, p_expected bigint, p_snapshot text, p_expires bigint, p_due bigint, p_fence text,
    p_entry text, p_at_ms bigint, p_keep bigint, p_since bigint, p_if_absent boolean,
    p_channel text, p_now bigint
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    stored bigint;
    live boolean;
    current bigint;
    written bigint;
BEGIN
    INSERT INTO {s}.records (key, version) VALUES (p_key, 0) ON CONFLICT (key) DO NOTHING;
    SELECT version, snapshot IS NOT NULL AND (expires_at_ms IS NULL OR expires_at_ms > p_now)
        INTO stored, live FROM {s}.records WHERE key = p_key FOR UPDATE;
    IF p_if_absent AND live THEN
        RETURN -1;
    END IF;
    IF p_fence IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM {s}.leases WHERE key = p_key AND token = p_fence AND expires_at > clock_timestamp()
    ) THEN
        RETURN -2;
    END IF;
    current := CASE WHEN live THEN stored ELSE 0 END;
    IF current <> p_expected AND NOT p_if_absent THEN
        RETURN -3 - current;
    END IF;
    UPDATE {s}.records SET version = version + 1, snapshot = p_snapshot, expires_at_ms = p_expires,
        due_at_ms = p_due WHERE key = p_key RETURNING version INTO written;
    IF NOT live THEN
        DELETE FROM {s}.history WHERE key = p_key;
    END IF;
    IF p_entry IS NOT NULL THEN
        INSERT INTO {s}.history (key, at_ms, entry) VALUES (p_key, p_at_ms, p_entry);
        IF p_keep IS NOT NULL THEN
            DELETE FROM {s}.history WHERE key = p_key AND seq NOT IN
                (SELECT seq FROM {s}.history WHERE key = p_key ORDER BY seq DESC LIMIT p_keep);
        END IF;
        IF p_since IS NOT NULL THEN
            DELETE FROM {s}.history WHERE key = p_key AND at_ms < p_since;
        END IF;
    END IF;
    IF p_channel IS NOT NULL THEN
        PERFORM pg_notify(p_channel, p_key);
    END IF;
    RETURN written;
END
$$;
"#,
    // 3: a lease is not worth a disk flush: its table is UNLOGGED (no WAL), so taking and
    // releasing one waits for no sync. A crash of Postgres (or a failover to a standby)
    // empties it, which releases every lease — and a holder whose lease vanished cannot
    // commit, its fencing token no longer holding.
    r#"
ALTER TABLE {s}.leases SET UNLOGGED;
"#,
    // 4: a lease and the record it guards in one round trip: the lease taken (or NULL, held
    // by another), then the record read — a statement of its own inside the function, so
    // it sees every commit made before the lease was free.
    r#"
CREATE FUNCTION {s}.lease_and_load(p_key text, p_token text, p_ttl_ms bigint, p_now bigint)
RETURNS TABLE (taken boolean, version bigint, snapshot text) LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {s}.leases AS held (key, token, expires_at)
        VALUES (p_key, p_token, clock_timestamp() + p_ttl_ms * interval '1 millisecond')
        ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
        WHERE held.expires_at <= clock_timestamp();
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, NULL::bigint, NULL::text;
        RETURN;
    END IF;
    RETURN QUERY SELECT true, r.version, r.snapshot FROM (SELECT 1) AS one
        LEFT JOIN {s}.records AS r ON r.key = p_key AND r.snapshot IS NOT NULL
            AND (r.expires_at_ms IS NULL OR r.expires_at_ms > p_now);
END
$$;
"#,
    // 5: the calls of a moment share their statements (`batch.rs`): loads, leases and
    // commits are plain statements over arrays, and the functions that did one call's
    // lease and commit are gone.
    r#"
DROP FUNCTION {s}.commit_record(text, bigint, text, bigint, bigint, text, text, bigint, bigint, bigint, boolean, text, bigint);
DROP FUNCTION {s}.lease_and_load(text, text, bigint, bigint);
"#,
    // 6: keys compare byte by byte (`COLLATE "C"`): a key is an identifier, not a word,
    // and a comparison in the database's language (`en_US.UTF-8`, even `C.UTF-8`) costs a
    // `strcoll` at every step down every index.
    r#"
ALTER TABLE {s}.records ALTER COLUMN key TYPE text COLLATE "C";
ALTER TABLE {s}.history ALTER COLUMN key TYPE text COLLATE "C";
ALTER TABLE {s}.leases ALTER COLUMN key TYPE text COLLATE "C";
"#,
    // 7: instances counted by state (`store/counts.rs`): the names a record counts under
    // (a JSON array) beside it, and counters moved by each statement that changes them, in
    // its transaction, summed per name over the statement's rows (one upsert per name for
    // a whole batch). A counter is split in 16 shards by the record's key, so that
    // transactions moving instances of one state lock one shard's row each, not one row
    // for all; rows are locked in (name, shard) order, so no two wait on each other in a
    // circle. The instances already stored are counted by toolgate right after (`counted`).
    r#"
ALTER TABLE {s}.records ADD COLUMN counted text;
CREATE TABLE {s}.counts (
    name text COLLATE "C" NOT NULL,
    shard integer NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (name, shard)
);
CREATE FUNCTION {s}.count_records() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.counts AS c (name, shard, n)
        SELECT name, shard, sum(step) FROM (
            SELECT json_array_elements_text(counted::json) AS name, hashtext(key) & 15 AS shard, 1 AS step
            FROM new_rows WHERE counted IS NOT NULL
        ) moved GROUP BY name, shard ORDER BY name, shard
        ON CONFLICT (name, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO {s}.counts AS c (name, shard, n)
        SELECT name, shard, sum(step) FROM (
            SELECT json_array_elements_text(counted::json) AS name, hashtext(key) & 15 AS shard, -1 AS step
            FROM old_rows WHERE counted IS NOT NULL
            UNION ALL
            SELECT json_array_elements_text(counted::json), hashtext(key) & 15, 1
            FROM new_rows WHERE counted IS NOT NULL
        ) moved GROUP BY name, shard HAVING sum(step) <> 0 ORDER BY name, shard
        ON CONFLICT (name, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSE
        INSERT INTO {s}.counts AS c (name, shard, n)
        SELECT name, shard, -sum(step) FROM (
            SELECT json_array_elements_text(counted::json) AS name, hashtext(key) & 15 AS shard, 1 AS step
            FROM old_rows WHERE counted IS NOT NULL
        ) moved GROUP BY name, shard ORDER BY name, shard
        ON CONFLICT (name, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER records_counted_insert AFTER INSERT ON {s}.records
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {s}.count_records();
CREATE TRIGGER records_counted_update AFTER UPDATE ON {s}.records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {s}.count_records();
CREATE TRIGGER records_counted_delete AFTER DELETE ON {s}.records
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {s}.count_records();
"#,
    // 8: a statement moves its counters in one shard, its connection's (the backend's
    // process id), not in the shard of each record's key: one row per name a statement,
    // not one per shard its keys fall in (a batch of ten touched seven), and two
    // connections committing at once — two replicas' batches, a handler's transaction —
    // mostly touch different rows, not the same ones, where the second waited for the
    // first's disk flush. A count is the sum of its shards, wherever its moves were added.
    r#"
CREATE OR REPLACE FUNCTION {s}.count_records() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    this_shard integer := pg_backend_pid() & 15;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.counts AS c (name, shard, n)
        SELECT name, this_shard, count(*) FROM (
            SELECT json_array_elements_text(counted::json) AS name FROM new_rows WHERE counted IS NOT NULL
        ) moved GROUP BY name ORDER BY name
        ON CONFLICT (name, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO {s}.counts AS c (name, shard, n)
        SELECT name, this_shard, sum(step) FROM (
            SELECT json_array_elements_text(counted::json) AS name, -1 AS step FROM old_rows WHERE counted IS NOT NULL
            UNION ALL
            SELECT json_array_elements_text(counted::json), 1 FROM new_rows WHERE counted IS NOT NULL
        ) moved GROUP BY name HAVING sum(step) <> 0 ORDER BY name
        ON CONFLICT (name, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSE
        INSERT INTO {s}.counts AS c (name, shard, n)
        SELECT name, this_shard, -count(*) FROM (
            SELECT json_array_elements_text(counted::json) AS name FROM old_rows WHERE counted IS NOT NULL
        ) moved GROUP BY name ORDER BY name
        ON CONFLICT (name, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END
$$;
"#,
    // 9: what expired or was removed is deleted (`sweep.rs`), found by its expiry (an
    // index), and a removed record expired since always (`expires_at_ms` 0, set by a
    // trigger too, for a toolgate older than this one still running beside it). Versions
    // still never go back for a key: the highest version of any row deleted is kept, and a
    // row is inserted above it — by this toolgate's statement, and by a trigger for an
    // older toolgate's, which inserts at version 1 (the trigger, a function called for
    // each row, fires for those alone). Records removed before are marked expired here.
    r#"
CREATE TABLE {s}.swept (
    id integer PRIMARY KEY CHECK (id = 1),
    highest bigint NOT NULL
);
INSERT INTO {s}.swept (id, highest) VALUES (1, 0);
CREATE FUNCTION {s}.above_swept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := greatest(NEW.version, (SELECT highest FROM {s}.swept WHERE id = 1) + 1);
    RETURN NEW;
END
$$;
CREATE TRIGGER records_above_swept BEFORE INSERT ON {s}.records
    FOR EACH ROW WHEN (NEW.version = 1) EXECUTE FUNCTION {s}.above_swept();
CREATE FUNCTION {s}.removed_expired() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.expires_at_ms := 0;
    RETURN NEW;
END
$$;
CREATE TRIGGER records_removed_expired BEFORE UPDATE ON {s}.records
    FOR EACH ROW WHEN (NEW.snapshot IS NULL AND NEW.expires_at_ms IS NULL) EXECUTE FUNCTION {s}.removed_expired();
UPDATE {s}.records SET expires_at_ms = 0 WHERE snapshot IS NULL;
CREATE INDEX records_expiry ON {s}.records (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
"#,
];

/// The migration that made instances counted ([`MIGRATIONS`]' seventh).
const COUNTED: usize = 7;

/// Counts the instances a schema held before it counted them ([`COUNTED`]): each live
/// instance's names written beside it, which the triggers count.
async fn count_stored_instances(transaction: &deadpool_postgres::Transaction<'_>, s: &str) -> Result<(), StoreError> {
    let rows = transaction
        .query(
            &format!(
                "SELECT key, snapshot FROM {s}.records WHERE snapshot IS NOT NULL AND counted IS NULL AND {}",
                StoreKey::sql_is_instance("key")
            ),
            &[],
        )
        .await
        .map_err(unavailable)?;
    let update = format!("UPDATE {s}.records SET counted = $2 WHERE key = $1");
    for row in rows {
        let key = StoreKey::from_stored(row.get(0));
        let Ok(snapshot) = serde_json::from_str::<Snapshot>(row.get(1)) else { continue };
        let counted = Counted::json(counts::counted(&key, &snapshot).as_ref());
        transaction.execute(&update, &[&key.as_str(), &counted]).await.map_err(unavailable)?;
    }
    Ok(())
}

/// Creates the schema and applies the migrations it lacks, one transaction each, under a
/// transaction-level advisory lock: replicas starting together migrate once. A schema a
/// newer toolgate wrote is refused, naming both versions.
pub(super) async fn migrate(pool: &Pool, schema: &str) -> Result<(), StoreError> {
    let mut client = pool.get().await.map_err(unavailable)?;
    let s = format!("\"{schema}\"");
    let transaction = client.transaction().await.map_err(unavailable)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &[&format!("toolgate-migrate:{schema}")])
        .await
        .map_err(unavailable)?;
    transaction
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {s}; \
             CREATE TABLE IF NOT EXISTS {s}.migrations (version bigint PRIMARY KEY, toolgate text NOT NULL, \
             applied_at timestamptz NOT NULL DEFAULT now());"
        ))
        .await
        .map_err(unavailable)?;
    let row = transaction
        .query_one(&format!("SELECT version, toolgate FROM {s}.migrations ORDER BY version DESC LIMIT 1"), &[])
        .await
        .ok();
    let (applied, by): (i64, String) = row.map_or((0, String::new()), |row| (row.get(0), row.get(1)));
    if applied > POSTGRES_SCHEMA_VERSION {
        return Err(unavailable(format!(
            "the Postgres schema `{schema}` is at version {applied}, written by toolgate {by}; this toolgate ({}) \
             knows versions up to {POSTGRES_SCHEMA_VERSION}: run the newer toolgate, or point this one at another schema",
            env!("CARGO_PKG_VERSION")
        )));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
        transaction.batch_execute(&migration.replace("{s}", &s)).await.map_err(unavailable)?;
        transaction
            .execute(
                &format!("INSERT INTO {s}.migrations (version, toolgate) VALUES ($1, $2)"),
                &[&(index as i64 + 1), &env!("CARGO_PKG_VERSION")],
            )
            .await
            .map_err(unavailable)?;
        if index + 1 == COUNTED {
            count_stored_instances(&transaction, &s).await?;
        }
        tracing::info!(schema, version = index + 1, "migrated the Postgres store");
    }
    transaction.commit().await.map_err(unavailable)
}
