-- Migration 8: a statement moves its counters in one shard, its connection's (the backend's
-- process id), not in the shard of each record's key: one row per name a statement,
-- not one per shard its keys fall in (a batch of ten touched seven), and two
-- connections committing at once — two replicas' batches, a handler's transaction —
-- mostly touch different rows, not the same ones, where the second waited for the
-- first's disk flush. A count is the sum of its shards, wherever its moves were added.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
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
