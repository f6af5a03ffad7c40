//! The migration every backend runs once on what an older toolgate wrote for principal-owned
//! machines: an instance keyed by its owner (`owned-instance:<len>:<owner
//! digest>:<len>:<machine>:<id>`) moves to its tenant's key
//! ([`StoreKey::tenant_instance`], the tenant its record kept in
//! [`Snapshot::tenant`](super::Snapshot::tenant), `""` for none) with its owner written in
//! the record ([`Snapshot::owner`](super::Snapshot::owner)), its history with it; the
//! per-owner key counters (`minted-owned:…`) are folded into the per-tenant ones.
//!
//! What is decided here, the same for every backend (each moves the records in its own
//! atomic steps: `sqlite/migrations.rs`, `postgres/migrations.rs`, `redis/migrate.rs`):
//!
//! - **Two owners with one id in one tenant** (two travellers' `Q-1`, minted by their own
//!   counters): the first moved keeps the id, each other one is kept under the first free
//!   suffixed id, `Q-1~2`, `Q-1~3`, … — never dropped, never merged — and a warning names
//!   both keys. The SQL stores move them in key order (the owner digest's), Redis in the
//!   order its scan finds them.
//! - **Counters.** A per-owner counter's tenant cannot be told from its key (it names the
//!   owner by digest), so each machine's per-tenant counter, in every tenant one of its
//!   instances moved to, is raised to the highest of all its per-owner counters: numbers
//!   may be skipped, none is minted twice. The per-owner counters are removed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::{StoreKey, counts};

/// What separates an id from the suffix that keeps it apart from another owner's.
const SUFFIX: char = '~';

/// How many suffixes are tried before the migration gives up on a record (a store would
/// need that many owners holding one id in one tenant).
pub(crate) const MAX_SUFFIX: u32 = 10_000;

/// One owned instance to move: where, and as what.
#[derive(Debug, Clone)]
pub(crate) struct Rekey {
    /// Its key as the older toolgate wrote it.
    pub(crate) old: StoreKey,
    tenant: String,
    machine: String,
    id: String,
    /// Its snapshot's JSON with its owner written in and the tenant taken out.
    pub(crate) snapshot: String,
}

impl Rekey {
    /// The move of the record at `old` holding `snapshot` (JSON), if `old` is an older
    /// toolgate's owned instance key; `None` for another key, or a snapshot that is not a
    /// JSON object (left where it is, and said).
    pub(crate) fn of(old: &StoreKey, snapshot: &str) -> Option<Self> {
        let (owner, machine, id) = old.legacy_owned_parts()?;
        let Ok(Value::Object(mut record)) = serde_json::from_str::<Value>(snapshot) else {
            tracing::warn!(key = %old, "an owned instance's record does not read as one: left under its old key");
            return None;
        };
        let tenant = match record.remove("tenant") {
            Some(Value::String(tenant)) => tenant,
            _ => String::new(),
        };
        record.insert("owner".into(), json!(owner));
        Some(Self {
            old: old.clone(),
            tenant,
            machine: machine.to_string(),
            id: id.to_string(),
            snapshot: Value::Object(record).to_string(),
        })
    }

    /// The key to try on attempt `attempt`: the id itself first, then `id~2`, `id~3`, …
    pub(crate) fn key(&self, attempt: u32) -> StoreKey {
        let id = match attempt {
            0 => self.id.clone(),
            n => format!("{}{SUFFIX}{}", self.id, n + 1),
        };
        StoreKey::tenant_instance(&self.tenant, &self.machine, &id)
    }

    /// The names the moved record counts under at `key` ([`counts::counted`]), as SQL
    /// stores keep them beside it.
    pub(crate) fn counted(&self, key: &StoreKey) -> Option<counts::Counted> {
        let snapshot = serde_json::from_str(&self.snapshot).ok()?;
        counts::counted(key, &snapshot)
    }

    /// Says that the record moved to `key` (with a warning when under a suffixed id).
    pub(crate) fn moved(&self, key: &StoreKey, attempt: u32) {
        if attempt == 0 {
            tracing::info!(from = %self.old, to = %key, "moved an owned instance to its tenant's key");
        } else {
            tracing::warn!(
                from = %self.old, to = %key,
                "another owner's instance of the tenant holds this id: moved under a suffixed id, which its owner names from now on"
            );
        }
    }
}

/// The key counters a migration raises: per machine, the highest number any of its
/// per-owner counters reached, and the tenants its instances moved to.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    highest: BTreeMap<String, u64>,
    tenants: BTreeMap<String, BTreeSet<String>>,
}

impl Counters {
    /// Notes the per-owner counter at `key` holding `snapshot` (JSON); `false` for a key
    /// that is not one.
    pub(crate) fn saw_counter(&mut self, key: &StoreKey, snapshot: &str) -> bool {
        let Some(machine) = key.legacy_owner_counter_machine() else { return false };
        let n = counter_value(snapshot);
        let highest = self.highest.entry(machine.to_string()).or_default();
        *highest = (*highest).max(n);
        true
    }

    /// The highest number `rekey`'s machine's per-owner counters reached, and the
    /// per-tenant counter to raise to it; `None` without such counters.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn floor_for(&self, rekey: &Rekey) -> Option<(StoreKey, u64)> {
        let highest = *self.highest.get(&rekey.machine)?;
        Some((StoreKey::minted(&rekey.machine, Some(&rekey.tenant)), highest))
    }

    /// Notes that an instance moved (its machine and tenant).
    pub(crate) fn saw_instance(&mut self, rekey: &Rekey) {
        self.tenants.entry(rekey.machine.clone()).or_default().insert(rekey.tenant.clone());
    }

    /// Each per-tenant counter to raise, and the number it must be at least at.
    pub(crate) fn floors(&self) -> Vec<(StoreKey, u64)> {
        let mut floors = Vec::new();
        for (machine, highest) in &self.highest {
            for tenant in self.tenants.get(machine).into_iter().flatten() {
                floors.push((StoreKey::minted(machine, Some(tenant)), *highest));
            }
        }
        floors
    }
}

/// The last number a key counter's snapshot (JSON) holds (`{"record": {"n": 4}}`), 0 for
/// none.
pub(crate) fn counter_value(snapshot: &str) -> u64 {
    serde_json::from_str::<Value>(snapshot)
        .ok()
        .and_then(|s| s.pointer("/record/n").and_then(Value::as_u64))
        .unwrap_or(0)
}

/// The snapshot (JSON) of a key counter at `floor` at least: `current` (a counter's
/// snapshot, or none) raised, everything else in it kept; `None` when it is there already.
pub(crate) fn raised(current: Option<&str>, floor: u64) -> Option<String> {
    if current.is_some_and(|current| counter_value(current) >= floor) {
        return None;
    }
    let mut snapshot = current.and_then(|text| serde_json::from_str::<Value>(text).ok()).unwrap_or_else(
        || json!({ "states": {}, "active_domain": null, "version": 0, "updated_at_ms": super::now_ms() }),
    );
    snapshot["record"] = json!({ "n": floor });
    Some(snapshot.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Snapshot;

    #[test]
    fn an_owned_instance_moves_to_its_tenants_key_with_its_owner() {
        let old = StoreKey::legacy_owned_instance("d1", "quote", "Q-1");
        let text = r#"{"states":{"quote":"sent"},"version":0,"updated_at_ms":1,"context":{"x":0.1},"tenant":"acme"}"#;
        let rekey = Rekey::of(&old, text).unwrap();
        assert_eq!(rekey.key(0), StoreKey::tenant_instance("acme", "quote", "Q-1"));
        assert_eq!(rekey.key(1), StoreKey::tenant_instance("acme", "quote", "Q-1~2"));
        let moved: Snapshot = serde_json::from_str(&rekey.snapshot).unwrap();
        assert_eq!(
            (moved.owner.as_deref(), moved.tenant, moved.context),
            (Some("d1"), None, Some(json!({ "x": 0.1 })))
        );
        assert_eq!(rekey.counted(&rekey.key(0)).unwrap().names, ["4:acme:5:quote:state:sent"]);
        let no_tenant = Rekey::of(&old, r#"{"states":{}}"#).unwrap();
        assert_eq!(no_tenant.key(0), StoreKey::tenant_instance("", "quote", "Q-1"));
        assert!(Rekey::of(&StoreKey::tenant_instance("acme", "quote", "Q-1"), text).is_none());
    }

    #[test]
    fn counters_are_raised_to_the_highest_owner_s_in_every_tenant_moved_to() {
        let mut counters = Counters::default();
        assert!(counters.saw_counter(&StoreKey::legacy_minted_for_owner("memo", "d1"), r#"{"record":{"n":3}}"#));
        assert!(counters.saw_counter(&StoreKey::legacy_minted_for_owner("memo", "d2"), r#"{"record":{"n":5}}"#));
        assert!(!counters.saw_counter(&StoreKey::minted("memo", None), r#"{"record":{"n":9}}"#));
        for tenant in ["a", "b"] {
            let old = StoreKey::legacy_owned_instance("d1", "memo", "M-1");
            counters.saw_instance(&Rekey::of(&old, &format!(r#"{{"tenant":"{tenant}"}}"#)).unwrap());
        }
        assert_eq!(
            counters.floors(),
            [(StoreKey::minted("memo", Some("a")), 5), (StoreKey::minted("memo", Some("b")), 5)]
        );
        assert_eq!(raised(Some(r#"{"record":{"n":7}}"#), 5), None);
        let raised = raised(Some(r#"{"record":{"n":2},"updated_at_ms":3}"#), 5).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&raised).unwrap(),
            json!({ "record": { "n": 5 }, "updated_at_ms": 3 })
        );
        let new: Snapshot = serde_json::from_str(&super::raised(None, 5).unwrap()).unwrap();
        assert_eq!(new.record, Some(json!({ "n": 5 })));
    }
}
