//! The Redis store's migrations, run when it connects: what an older toolgate wrote is
//! rewritten once, under a version key (`toolgate:{migrations}`, the number applied).
//! Redis has no transaction across a scan, so each record is rewritten by one script that
//! checks it is still as read: two replicas starting at once each move what they find, and
//! a record the other moved first is skipped.
//!
//! 1. Owned instances move to their tenant's key ([`owned_keys`]): the per-owner key
//!    counters are read first (and left in place, so that a replica starting alongside
//!    reads them too); before an instance moves, its tenant's counter is raised past them,
//!    so that a migration stopped half-way never leaves a moved instance's tenant minting
//!    numbers from below.

use redis::aio::ConnectionManager;

use super::keys::{
    COUNTS_NONE, DUE_KEY, MINT_FLOOR_KEY, counts_key, history_key, record_key, revision_key, stored_key,
};
use crate::store::owned_keys::{self, Counters, MAX_SUFFIX, Rekey};
use crate::store::{StoreError, StoreKey, unavailable};

/// Where the number of migrations applied is kept.
pub(super) const MIGRATIONS_KEY: &str = "toolgate:{migrations}";

/// The migrations this toolgate applies.
const MIGRATIONS: u64 = 1;

/// Where the lowest number of migrations a build must know to run on the data is kept
/// (expand, then contract: a newer build that only added leaves it as it was, and an older
/// build keeps running beside it; one that changed what older builds read raises it).
pub(super) const OLDEST_READER_KEY: &str = "toolgate:{migrations}:oldest-reader";

/// The oldest reader of the data this toolgate leaves: the last migration that changed
/// what older builds read (migration 1 moved owned instances).
const OLDEST_READER: u64 = 1;

/// How often a record that changed while it was read is read again.
const REREADS: usize = 16;

/// Moves an owned instance's record to its new key, if it is still as read and the new key
/// is free: its counters, its version counter, its history and its deadline with it.
/// `1` moved, `0` changed meanwhile (or moved by another), `2` the new key is taken.
const MOVE: &str = r#"
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] or redis.call('HGET', KEYS[1], 's') ~= ARGV[2] then
  return 0
end
if redis.call('EXISTS', KEYS[4]) == 1 or redis.call('EXISTS', KEYS[5]) == 1 then
  return 2
end
local counted, names = redis.call('HGET', KEYS[1], 'ck'), redis.call('HGET', KEYS[1], 'cn')
if counted then
  for name in string.gmatch(names, '[^\n]+') do redis.call('HINCRBY', counted, name, -1) end
end
redis.call('HSET', KEYS[4], 'v', ARGV[1], 's', ARGV[3])
if ARGV[4] ~= '' then
  for name in string.gmatch(ARGV[4], '[^\n]+') do redis.call('HINCRBY', KEYS[8], name, 1) end
  redis.call('HSET', KEYS[4], 'ck', KEYS[8], 'cn', ARGV[4])
end
redis.call('SET', KEYS[5], redis.call('GET', KEYS[2]) or ARGV[1])
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('RENAME', KEYS[3], KEYS[6])
end
local due = redis.call('ZSCORE', KEYS[7], ARGV[5])
if due then
  redis.call('ZREM', KEYS[7], ARGV[5])
  redis.call('ZADD', KEYS[7], due, ARGV[6])
end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
"#;

/// Writes a key counter's raised snapshot if it is still as read (`ARGV[1]`, `''` for
/// none), under a new version. `1` written, `0` changed meanwhile.
const RAISE: &str = r#"
if (redis.call('HGET', KEYS[1], 's') or '') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'v', redis.call('INCR', KEYS[2]), 's', ARGV[2])
return 1
"#;

/// Applies the migrations Redis lacks (none once the version key says so).
pub(super) async fn migrate(connection: &mut ConnectionManager) -> Result<(), StoreError> {
    let (applied, oldest): (Option<u64>, Option<u64>) =
        redis::pipe().get(MIGRATIONS_KEY).get(OLDEST_READER_KEY).query_async(connection).await.map_err(unavailable)?;
    if let Some(oldest) = oldest.filter(|oldest| *oldest > MIGRATIONS) {
        return Err(unavailable(format!(
            "the Redis data was migrated by a newer toolgate ({} migrations) that changed what this toolgate \
             ({}, {MIGRATIONS} migrations) reads: it needs a toolgate that knows {oldest}; run the newer toolgate",
            applied.unwrap_or_default(),
            env!("CARGO_PKG_VERSION")
        )));
    }
    if applied.unwrap_or(0) >= MIGRATIONS {
        if applied.unwrap_or(0) > MIGRATIONS {
            tracing::warn!(
                applied,
                knows = MIGRATIONS,
                "the Redis data was migrated by a newer toolgate that only extended it: serving on it"
            );
        }
        raise_to(connection, OLDEST_READER_KEY, OLDEST_READER).await?;
        return Ok(());
    }
    rekey_owned_instances(connection).await?;
    raise_to(connection, MIGRATIONS_KEY, MIGRATIONS).await?;
    raise_to(connection, OLDEST_READER_KEY, OLDEST_READER).await?;
    tracing::info!(version = MIGRATIONS, "migrated the Redis store");
    Ok(())
}

/// Sets `key` to `value` unless it holds more: never lowered, since a replica of a newer
/// toolgate may have raised it meanwhile.
async fn raise_to(connection: &mut ConnectionManager, key: &str, value: u64) -> Result<(), StoreError> {
    let raise = "if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end";
    redis::Script::new(raise).key(key).arg(value).invoke_async::<()>(connection).await.map_err(unavailable)
}

/// Migration 1: owned instances to their tenant's key ([`owned_keys`]).
async fn rekey_owned_instances(connection: &mut ConnectionManager) -> Result<(), StoreError> {
    let [instances, minted] = StoreKey::LEGACY_OWNED_PREFIXES;
    let mut counters = Counters::default();
    for key in scan(connection, minted).await? {
        let text: Option<String> =
            redis::cmd("HGET").arg(record_key(&key)).arg("s").query_async(connection).await.map_err(unavailable)?;
        counters.saw_counter(&key, &text.unwrap_or_default());
    }
    let mut raised = std::collections::BTreeSet::new();
    for key in scan(connection, instances).await? {
        for _ in 0..REREADS {
            let (version, text): (Option<String>, Option<String>) = redis::cmd("HMGET")
                .arg(record_key(&key))
                .arg("v")
                .arg("s")
                .query_async(connection)
                .await
                .map_err(unavailable)?;
            let (Some(version), Some(text)) = (version, text) else { break };
            let Some(rekey) = Rekey::of(&key, &text) else { break };
            if let Some((counter, floor)) = counters.floor_for(&rekey).filter(|(counter, _)| !raised.contains(counter))
            {
                raise(connection, &counter, floor).await?;
                raised.insert(counter);
            }
            if move_record(connection, &rekey, &version, &text).await? {
                break;
            }
        }
    }
    Ok(())
}

/// Moves `rekey`'s record, read at `version` holding `text`, to the first free key of its
/// tenant; `false` when it changed since it was read (read it again).
async fn move_record(
    connection: &mut ConnectionManager,
    rekey: &Rekey,
    version: &str,
    text: &str,
) -> Result<bool, StoreError> {
    let script = redis::Script::new(MOVE);
    for attempt in 0..MAX_SUFFIX {
        let key = rekey.key(attempt);
        let counted = rekey.counted(&key);
        let (counters, names) = match &counted {
            Some(counted) => (counts_key(&counted.prefix), counted.suffixes()),
            None => (COUNTS_NONE.to_string(), String::new()),
        };
        let moved: u8 = script
            .key(record_key(&rekey.old))
            .key(revision_key(&rekey.old))
            .key(history_key(&rekey.old))
            .key(record_key(&key))
            .key(revision_key(&key))
            .key(history_key(&key))
            .key(DUE_KEY)
            .key(counters)
            .arg(version)
            .arg(text)
            .arg(&rekey.snapshot)
            .arg(names)
            .arg(rekey.old.as_str())
            .arg(key.as_str())
            .invoke_async(connection)
            .await
            .map_err(unavailable)?;
        match moved {
            1 => {
                rekey.moved(&key, attempt);
                return Ok(true);
            }
            0 => return Ok(false),
            _ => continue,
        }
    }
    Err(unavailable(format!("no free id for the owned instance `{}`", rekey.old)))
}

/// Raises the key counter `counter` to `floor` at least (and past the floor a restore set,
/// for a counter never written).
async fn raise(connection: &mut ConnectionManager, counter: &StoreKey, floor: u64) -> Result<(), StoreError> {
    let script = redis::Script::new(RAISE);
    for _ in 0..REREADS {
        let (current, restored): (Option<String>, Option<u64>) = redis::pipe()
            .cmd("HGET")
            .arg(record_key(counter))
            .arg("s")
            .cmd("GET")
            .arg(MINT_FLOOR_KEY)
            .query_async(connection)
            .await
            .map_err(unavailable)?;
        let floor = if current.is_none() { floor.max(restored.unwrap_or(0)) } else { floor };
        let Some(raised) = owned_keys::raised(current.as_deref(), floor) else { return Ok(()) };
        let written: u8 = script
            .key(record_key(counter))
            .key(revision_key(counter))
            .arg(current.unwrap_or_default())
            .arg(raised)
            .invoke_async(connection)
            .await
            .map_err(unavailable)?;
        if written == 1 {
            return Ok(());
        }
    }
    Err(unavailable(format!("the key counter `{counter}` kept changing while it was raised")))
}

/// The store keys of the records whose keys begin with `prefix`.
async fn scan(connection: &mut ConnectionManager, prefix: &str) -> Result<Vec<StoreKey>, StoreError> {
    let pattern = format!("toolgate:{{{prefix}*}}:record");
    let (mut keys, mut cursor) = (Vec::new(), 0_u64);
    loop {
        let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(connection)
            .await
            .map_err(unavailable)?;
        keys.extend(found.iter().filter_map(|key| stored_key(key)).filter(|key| key.as_str().starts_with(prefix)));
        if next == 0 {
            keys.sort();
            keys.dedup();
            return Ok(keys);
        }
        cursor = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Data a newer toolgate only extended (more migrations, the same oldest reader) is
    /// served; data it changed past what this build reads (its oldest reader above this
    /// build's migrations) is refused, naming both. On a database of its own (11), since
    /// the other tests share database 0.
    #[tokio::test]
    async fn an_older_build_runs_on_data_a_newer_one_only_extended() {
        let Some(url) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
            eprintln!("SKIPPED: needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
            return;
        };
        let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
        let url = format!("{base}/11");
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::cmd("FLUSHDB").query_async(&mut connection).await.unwrap();
        drop(super::super::RedisStore::connect(&url).await.expect("a new store"));
        let oldest: u64 = redis::cmd("GET").arg(OLDEST_READER_KEY).query_async(&mut connection).await.unwrap();
        assert_eq!(oldest, OLDEST_READER);

        let _: () =
            redis::cmd("SET").arg(MIGRATIONS_KEY).arg(MIGRATIONS + 3).query_async(&mut connection).await.unwrap();
        drop(super::super::RedisStore::connect(&url).await.expect("extended: served"));

        let _: () =
            redis::cmd("SET").arg(OLDEST_READER_KEY).arg(MIGRATIONS + 2).query_async(&mut connection).await.unwrap();
        let refused = super::super::RedisStore::connect(&url).await.map(drop).unwrap_err().to_string();
        assert!(
            refused.contains("changed what") && refused.contains(&format!("knows {}", MIGRATIONS + 2)),
            "{refused}"
        );
        let _: () = redis::cmd("FLUSHDB").query_async(&mut connection).await.unwrap();
    }
}
