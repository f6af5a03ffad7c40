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
const OWNED_INSTANCE: &str = "owned-instance:";
const MINTED: &str = "minted:";
const MINTED_OWNED: &str = "minted-owned:";

impl StoreKey {
    /// How the keys of flows begin (a connection's, a handle's).
    pub const FLOW_PREFIXES: [&'static str; 2] = [CONNECTION, HANDLE];

    /// How the keys of keyed machines' instances begin (in no tenant, in a tenant, of a
    /// principal).
    pub const INSTANCE_PREFIXES: [&'static str; 3] = [INSTANCE, TENANT_INSTANCE, OWNED_INSTANCE];

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
    /// key, so no tenant/machine/key triple can spell another's.
    pub fn tenant_instance(tenant: &str, machine: &str, key: &str) -> Self {
        Self(format!("{TENANT_INSTANCE}{}:{tenant}:{}:{machine}:{key}", tenant.len(), machine.len()))
    }

    /// The instance of principal-owned machine `machine` for the object `key` of the
    /// principal whose digest is `owner`: another principal's `Q-1` is another record.
    /// Lengths are part of the key, so no owner/machine/key triple can spell another's.
    pub fn owned_instance(owner: &str, machine: &str, key: &str) -> Self {
        Self(format!("{OWNED_INSTANCE}{}:{owner}:{}:{machine}:{key}", owner.len(), machine.len()))
    }

    /// The counter new keys of a principal-owned `machine` are minted from, per owner (the
    /// principal's digest).
    pub fn minted_for_owner(machine: &str, owner: &str) -> Self {
        Self(format!("{MINTED_OWNED}{}:{owner}:{machine}", owner.len()))
    }

    /// The counter new keys of `machine` are minted from (`mint: "PAY-{n}"`), per tenant
    /// for a tenant-scoped machine.
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
    /// tenant-scoped machine, or its owner's digest, for a principal-owned one); `None` for
    /// any other key.
    pub(crate) fn instance_parts(&self) -> Option<(Option<&str>, &str, &str)> {
        /// `"{len}:{text}:{rest}"` → `(text, rest)`.
        fn counted(text: &str) -> Option<(&str, &str)> {
            let (len, rest) = text.split_once(':')?;
            let len: usize = len.parse().ok()?;
            let (value, rest) = (rest.get(..len)?, rest.get(len..)?);
            Some((value, rest.strip_prefix(':')?))
        }
        if let Some(rest) = self.0.strip_prefix(INSTANCE) {
            let (machine, id) = counted(rest)?;
            return Some((None, machine, id));
        }
        let rest = (self.0.strip_prefix(TENANT_INSTANCE)).or_else(|| self.0.strip_prefix(OWNED_INSTANCE))?;
        let (tenant, rest) = counted(rest)?;
        let (machine, id) = counted(rest)?;
        Some((Some(tenant), machine, id))
    }

    /// A key as a store wrote it (a shared store's commit feed).
    pub(crate) fn from_stored(text: String) -> Self {
        Self(text)
    }

    /// Whether the key names a flow a state handle names (such flows expire).
    pub(crate) fn is_handle_flow(&self) -> bool {
        self.0.starts_with(HANDLE)
    }

    /// Whether the key names a principal-owned machine's instance
    /// ([`StoreKey::owned_instance`]): its scope is its owner's, not a tenant.
    pub(crate) fn is_owned_instance(&self) -> bool {
        self.0.starts_with(OWNED_INSTANCE)
    }

    /// Whether the key names a counter keys are minted from ([`StoreKey::minted`],
    /// [`StoreKey::minted_for_owner`]).
    #[cfg(any(feature = "redis", test))]
    pub(crate) fn is_mint_counter(&self) -> bool {
        self.0.starts_with(MINTED) || self.0.starts_with(MINTED_OWNED)
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
        assert_eq!(StoreKey::owned_instance("ab", "m", "k").instance_parts(), Some((Some("ab"), "m", "k")));
        assert_ne!(StoreKey::owned_instance("t", "m", "k"), StoreKey::tenant_instance("t", "m", "k"));
        assert_ne!(StoreKey::minted_for_owner("m", "t"), StoreKey::minted("m", Some("t")));
        assert_eq!(StoreKey::connection("x").instance_parts(), None);
    }

    #[test]
    fn keys_tell_their_kind() {
        assert!(StoreKey::owned_instance("ab", "m", "k").is_owned_instance());
        assert!(!StoreKey::tenant_instance("ab", "m", "k").is_owned_instance());
        assert!(StoreKey::minted("payment", Some("acme")).is_mint_counter());
        assert!(StoreKey::minted("payment", None).is_mint_counter());
        assert!(StoreKey::minted_for_owner("quote", "digest").is_mint_counter());
        assert!(!StoreKey::instance("payment", "PAY-1").is_mint_counter());
        assert_eq!(
            StoreKey::sql_is_instance("key"),
            "(key LIKE 'instance:%' OR key LIKE 'tenant-instance:%' OR key LIKE 'owned-instance:%')"
        );
    }
}
