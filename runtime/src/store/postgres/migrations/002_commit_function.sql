-- Migration 2: one commit, one statement — a function that does in the database what a commit
-- did in eight round trips. It answers the version written; -1: an `if_absent` write
-- found a live record; -2: the lease's token no longer holds; -3 - N: the record is at
-- version N, not the one expected.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
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
