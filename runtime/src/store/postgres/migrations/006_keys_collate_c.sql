-- Migration 6: keys compare byte by byte (`COLLATE "C"`): a key is an identifier, not a word,
-- and a comparison in the database's language (`en_US.UTF-8`, even `C.UTF-8`) costs a
-- `strcoll` at every step down every index.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
ALTER TABLE {s}.records ALTER COLUMN key TYPE text COLLATE "C";
ALTER TABLE {s}.history ALTER COLUMN key TYPE text COLLATE "C";
ALTER TABLE {s}.leases ALTER COLUMN key TYPE text COLLATE "C";
