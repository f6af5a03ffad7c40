-- Migration 1: records (flows, instances, challenges, idempotency records), the one
-- counter versions and tickets come from, rate-limit windows, and instances' histories.
-- `IF NOT EXISTS` throughout: a file written before migrations were versioned runs it
-- again as it is stamped. Applied migrations are never edited: a change is a new one.
CREATE TABLE IF NOT EXISTS records (
    key TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    expires_at_ms INTEGER,
    snapshot TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_expiry ON records (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS revision (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS windows (
    window TEXT NOT NULL,
    ticket INTEGER NOT NULL,
    until_ms INTEGER NOT NULL,
    PRIMARY KEY (window, ticket)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS windows_expiry ON windows (until_ms);
CREATE TABLE IF NOT EXISTS history (
    key TEXT NOT NULL,
    version INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (key, version)
) WITHOUT ROWID;
INSERT OR IGNORE INTO revision (id, last) VALUES (1, 0);
