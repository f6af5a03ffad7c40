-- Migration 7: instances counted by state (`store/counts.rs`): the names a record counts under
-- (a JSON array) beside it, and counters moved by each statement that changes them, in
-- its transaction, summed per name over the statement's rows (one upsert per name for
-- a whole batch). A counter is split in 16 shards by the record's key, so that
-- transactions moving instances of one state lock one shard's row each, not one row
-- for all; rows are locked in (name, shard) order, so no two wait on each other in a
-- circle. The instances already stored are counted by toolgate right after (`counted`).
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
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
