-- Migration 1: toolgate's tables: records, histories, leases and rate-limit windows.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
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
