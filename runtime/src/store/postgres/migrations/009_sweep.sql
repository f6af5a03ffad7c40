-- Migration 9: what expired or was removed is deleted (`sweep.rs`), found by its expiry (an
-- index), and a removed record expired since always (`expires_at_ms` 0, set by a
-- trigger too, for a toolgate older than this one still running beside it). Versions
-- still never go back for a key: the highest version of any row deleted is kept, and a
-- row is inserted above it — by this toolgate's statement, and by a trigger for an
-- older toolgate's, which inserts at version 1 (the trigger, a function called for
-- each row, fires for those alone). Records removed before are marked expired here.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
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
