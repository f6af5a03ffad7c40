-- Migration 4: a lease and the record it guards in one round trip: the lease taken (or NULL, held
-- by another), then the record read — a statement of its own inside the function, so
-- it sees every commit made before the lease was free.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
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
