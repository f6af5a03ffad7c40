-- Migration 5: the calls of a moment share their statements (`batch.rs`): loads, leases and
-- commits are plain statements over arrays, and the functions that did one call's
-- lease and commit are gone.
-- `{s}` is the schema, quoted. Applied migrations are never edited: a change is a new one.
DROP FUNCTION {s}.commit_record(text, bigint, text, bigint, bigint, text, text, bigint, bigint, bigint, boolean, text, bigint);
DROP FUNCTION {s}.lease_and_load(text, text, bigint, bigint);
