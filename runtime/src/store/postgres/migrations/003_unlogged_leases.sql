-- Migration 3: a lease is not worth a disk flush: its table is UNLOGGED (no WAL), so taking and
-- releasing one waits for no sync. A crash of Postgres (or a failover to a standby)
-- empties it, which releases every lease — and a holder whose lease vanished cannot
-- commit, its fencing token no longer holding.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
ALTER TABLE {s}.leases SET UNLOGGED;
