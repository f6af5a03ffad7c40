-- Migration 3: instances counted by state (`store/counts.rs`): a `counted` column beside
-- each record (the names it counts under, as a JSON array), and triggers that move the
-- `counts` table's counters whenever a row's names change, in the statement's own
-- transaction. The instances already stored are counted by toolgate right after, in Rust.
ALTER TABLE records ADD COLUMN counted TEXT;
CREATE TABLE IF NOT EXISTS counts (name TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS records_counted_insert AFTER INSERT ON records WHEN NEW.counted IS NOT NULL
BEGIN
    INSERT INTO counts (name, n) SELECT value, 1 FROM json_each(NEW.counted) WHERE true
    ON CONFLICT (name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS records_counted_update AFTER UPDATE OF counted ON records
WHEN OLD.counted IS NOT NEW.counted
BEGIN
    INSERT INTO counts (name, n) SELECT value, -1 FROM json_each(OLD.counted) WHERE true
    ON CONFLICT (name) DO UPDATE SET n = n - 1;
    INSERT INTO counts (name, n) SELECT value, 1 FROM json_each(NEW.counted) WHERE true
    ON CONFLICT (name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS records_counted_delete AFTER DELETE ON records WHEN OLD.counted IS NOT NULL
BEGIN
    INSERT INTO counts (name, n) SELECT value, -1 FROM json_each(OLD.counted) WHERE true
    ON CONFLICT (name) DO UPDATE SET n = n - 1;
END;
