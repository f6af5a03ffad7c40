//! [`StoreKey`]: where a flow or a keyed machine's instance lives in the store.

use std::fmt;

/// Where a record lives in the store. Only the server builds keys: a flow's key comes
/// from what the server created (a connection, a minted handle), an instance's from the
/// machine and the object's own id — never from a header or an id a client chose.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(String);

// How each kind of key begins: spelled here only. Code elsewhere builds keys with
// [`StoreKey`]'s constructors and asks a key its kind with its methods.
const CONNECTION: &str = "connection:";
const HANDLE: &str = "handle:";
const INSTANCE: &str = "instance:";
const TENANT_INSTANCE: &str = "tenant-instance:";
const MINTED: &str = "minted:";
// What toolgate wrote before a principal-owned machine's instances were keyed by tenant:
// read only by the migrations that rewrite them (`store/owned_keys.rs`).
const LEGACY_OWNED_INSTANCE: &str = "owned-instance:";
const LEGACY_MINTED_OWNED: &str = "minted-owned:";

impl StoreKey {
    /// How the keys of flows begin (a connection's, a handle's).
    pub const FLOW_PREFIXES: [&'static str; 2] = [CONNECTION, HANDLE];

    /// How the keys of keyed machines' instances begin (in no tenant, in a tenant: a
    /// principal-owned machine's instances are in their owner's tenant).
    pub const INSTANCE_PREFIXES: [&'static str; 2] = [INSTANCE, TENANT_INSTANCE];

    /// How the keys of principal-owned instances began before they were keyed by tenant
    /// (`owned-instance:<len>:<owner digest>:<len>:<machine>:<id>`), and their key
    /// counters (`minted-owned:<len>:<owner digest>:<machine>`): what the stores'
    /// migrations look for.
    pub(crate) const LEGACY_OWNED_PREFIXES: [&'static str; 2] = [LEGACY_OWNED_INSTANCE, LEGACY_MINTED_OWNED];

    /// The flow of one connection: stdio, or one stateful Streamable HTTP session.
    /// `connection_id` is random per connection, so replicas sharing a store never collide.
    pub fn connection(connection_id: &str) -> Self {
        Self(format!("{CONNECTION}{connection_id}"))
    }

    /// The flow a signed state handle names (`flow_id` is the random id minted with it).
    pub fn handle(flow_id: &str) -> Self {
        Self(format!("{HANDLE}{flow_id}"))
    }

    /// The instance of keyed machine `machine` for the object `key` (invoice `INV-7`).
    /// The machine id's length is part of the key, so no id/key pair can spell another's.
    pub fn instance(machine: &str, key: &str) -> Self {
        Self(format!("{INSTANCE}{}:{machine}:{key}", machine.len()))
    }

    /// The instance of tenant-scoped machine `machine` for the object `key` of `tenant`:
    /// `INV-1` of tenant A and `INV-1` of tenant B are two records. Lengths are part of the
    /// key, so no tenant/machine/key triple can spell another's. A principal-owned
    /// machine's instances are keyed so too, in their owner's tenant (`""` for none): the
    /// owner is a field of the record ([`Snapshot::owner`](super::Snapshot::owner)), which
    /// the gate judges, so one id names one instance in a tenant.
    pub fn tenant_instance(tenant: &str, machine: &str, key: &str) -> Self {
        Self(format!("{TENANT_INSTANCE}{}:{tenant}:{}:{machine}:{key}", tenant.len(), machine.len()))
    }

    /// The key an older toolgate gave the instance `key` of principal-owned `machine`
    /// owned by the principal whose digest is `owner` (the migrations' tests write it).
    #[cfg(test)]
    pub(crate) fn legacy_owned_instance(owner: &str, machine: &str, key: &str) -> Self {
        Self(format!("{LEGACY_OWNED_INSTANCE}{}:{owner}:{}:{machine}:{key}", owner.len(), machine.len()))
    }

    /// The per-owner key counter an older toolgate kept for principal-owned `machine`.
    #[cfg(test)]
    pub(crate) fn legacy_minted_for_owner(machine: &str, owner: &str) -> Self {
        Self(format!("{LEGACY_MINTED_OWNED}{}:{owner}:{machine}", owner.len()))
    }

    /// The counter new keys of `machine` are minted from (`mint: "PAY-{n}"`), per tenant
    /// for a tenant-scoped machine and for a principal-owned one (its owner's tenant, `""`
    /// for none).
    pub fn minted(machine: &str, tenant: Option<&str>) -> Self {
        match tenant {
            Some(tenant) => Self(format!("{MINTED}{}:{tenant}:{machine}", tenant.len())),
            None => Self(format!("{MINTED}{machine}")),
        }
    }

    /// An operator's console session, by the digest of the random id its cookie carries
    /// (the store never holds the id itself, so a copy of the store signs no one in).
    pub fn console_session(id_digest: &str) -> Self {
        Self(format!("console-session:{id_digest}"))
    }

    /// The record readiness reads (`/readyz`): never written, so reading it costs the store
    /// one lookup of nothing, and proves it answers.
    pub(crate) fn readiness_probe() -> Self {
        Self("readiness-probe".to_string())
    }

    /// An MCP task (`task_id` is random, minted by the server).
    pub fn task(task_id: &str) -> Self {
        Self(format!("task:{task_id}"))
    }

    /// A confirmation challenge (`challenge_id` is random, minted by the server).
    pub fn challenge(challenge_id: &str) -> Self {
        Self(format!("challenge:{challenge_id}"))
    }

    /// The guard on confirming `tool` for `who` (a principal's digest, or an instance's
    /// key, prefixed with which): the wrong codes it was given, its locks, the challenges
    /// it was issued.
    pub fn confirmation_guard(who: &str, tool: &str) -> Self {
        Self(format!("confirmation-guard:{}:{who}:{tool}", who.len()))
    }

    /// The record of an idempotent call: `tool` called by the principal whose digest is
    /// `principal` with the idempotency key `key`.
    pub fn idempotency(principal: &str, tool: &str, key: &str) -> Self {
        Self(format!("idempotency:{}:{principal}:{}:{tool}:{key}", principal.len(), tool.len()))
    }

    /// The machine and the object's id of an instance's key (and its tenant, for a
    /// tenant-scoped or principal-owned machine); `None` for any other key.
    pub(crate) fn instance_parts(&self) -> Option<(Option<&str>, &str, &str)> {
        if let Some(rest) = self.0.strip_prefix(INSTANCE) {
            let (machine, id) = counted(rest)?;
            return Some((None, machine, id));
        }
        let (tenant, rest) = counted(self.0.strip_prefix(TENANT_INSTANCE)?)?;
        let (machine, id) = counted(rest)?;
        Some((Some(tenant), machine, id))
    }

    /// The owner's digest, the machine and the id of a key an older toolgate gave a
    /// principal-owned instance (`owned-instance:…`); `None` for any other key.
    pub(crate) fn legacy_owned_parts(&self) -> Option<(&str, &str, &str)> {
        let (owner, rest) = counted(self.0.strip_prefix(LEGACY_OWNED_INSTANCE)?)?;
        let (machine, id) = counted(rest)?;
        Some((owner, machine, id))
    }

    /// The machine of a per-owner key counter an older toolgate kept
    /// (`minted-owned:<len>:<owner>:<machine>`); `None` for any other key.
    pub(crate) fn legacy_owner_counter_machine(&self) -> Option<&str> {
        let (_owner, machine) = counted(self.0.strip_prefix(LEGACY_MINTED_OWNED)?)?;
        Some(machine)
    }

    /// A key as a store wrote it (a shared store's commit feed).
    pub(crate) fn from_stored(text: String) -> Self {
        Self(text)
    }

    /// Whether the key names a flow a state handle names (such flows expire).
    pub(crate) fn is_handle_flow(&self) -> bool {
        self.0.starts_with(HANDLE)
    }

    /// Whether the key names a counter keys are minted from ([`StoreKey::minted`], or an
    /// older toolgate's per-owner one).
    #[cfg(any(feature = "redis", test))]
    pub(crate) fn is_mint_counter(&self) -> bool {
        self.0.starts_with(MINTED) || self.0.starts_with(LEGACY_MINTED_OWNED)
    }

    /// An SQL condition on the text column `column` that holds for the keys of instances
    /// ([`StoreKey::INSTANCE_PREFIXES`]): `(key LIKE 'instance:%' OR …)`.
    #[cfg(any(feature = "postgres", test))]
    pub(crate) fn sql_is_instance(column: &str) -> String {
        let each: Vec<String> = Self::INSTANCE_PREFIXES.iter().map(|p| format!("{column} LIKE '{p}%'")).collect();
        format!("({})", each.join(" OR "))
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `"{len}:{text}:{rest}"` → `(text, rest)`.
fn counted(text: &str) -> Option<(&str, &str)> {
    let (len, rest) = text.split_once(':')?;
    let len: usize = len.parse().ok()?;
    let (value, rest) = (rest.get(..len)?, rest.get(len..)?);
    Some((value, rest.strip_prefix(':')?))
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_keys_cannot_collide_across_machines() {
        assert_ne!(StoreKey::instance("a:b", "c"), StoreKey::instance("a", "b:c"));
        assert_ne!(StoreKey::tenant_instance("t:1", "m", "k"), StoreKey::tenant_instance("t", "1:m", "k"));
        assert_ne!(StoreKey::tenant_instance("t", "m", "k"), StoreKey::instance("m", "k"));
    }

    #[test]
    fn instance_keys_give_back_their_parts() {
        assert_eq!(StoreKey::instance("a:b", "c:d").instance_parts(), Some((None, "a:b", "c:d")));
        assert_eq!(StoreKey::tenant_instance("t:1", "m", "k").instance_parts(), Some((Some("t:1"), "m", "k")));
        assert_eq!(StoreKey::legacy_owned_instance("ab", "m", "k").instance_parts(), None);
        assert_eq!(StoreKey::legacy_owned_instance("a:b", "m:1", "k").legacy_owned_parts(), Some(("a:b", "m:1", "k")));
        assert_eq!(StoreKey::tenant_instance("t", "m", "k").legacy_owned_parts(), None);
        assert_eq!(StoreKey::legacy_minted_for_owner("m:1", "a:b").legacy_owner_counter_machine(), Some("m:1"));
        assert_eq!(StoreKey::minted("m", Some("t")).legacy_owner_counter_machine(), None);
        assert_eq!(StoreKey::connection("x").instance_parts(), None);
    }

    #[test]
    fn keys_tell_their_kind() {
        assert!(StoreKey::minted("payment", Some("acme")).is_mint_counter());
        assert!(StoreKey::minted("payment", None).is_mint_counter());
        assert!(StoreKey::legacy_minted_for_owner("quote", "digest").is_mint_counter());
        assert!(!StoreKey::instance("payment", "PAY-1").is_mint_counter());
        assert_eq!(StoreKey::sql_is_instance("key"), "(key LIKE 'instance:%' OR key LIKE 'tenant-instance:%')");
    }
}
