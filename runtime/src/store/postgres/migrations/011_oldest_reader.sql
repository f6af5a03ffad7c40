-- Migration 11: each applied migration says which builds can still run on the schema it
-- leaves: `oldest_reader` is the lowest schema version a toolgate must know to read and
-- write it. A build that knows fewer migrations than are applied starts if it knows at
-- least that many (the newer build only extended the schema), and is refused otherwise.
-- It only adds a column, so a build that knows ten migrations keeps running beside it.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
ALTER TABLE {s}.migrations ADD COLUMN IF NOT EXISTS oldest_reader bigint;
