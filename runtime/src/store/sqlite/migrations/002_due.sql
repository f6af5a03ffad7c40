-- Migration 2: instances' deadlines (a state's `after`) beside their records, indexed, so
-- that the sweeper finds what is due without reading every instance.
ALTER TABLE records ADD COLUMN due_at_ms INTEGER;
CREATE INDEX IF NOT EXISTS records_due ON records (due_at_ms) WHERE due_at_ms IS NOT NULL;
