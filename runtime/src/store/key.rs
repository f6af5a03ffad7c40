//! [`StoreKey`]: where a flow or a keyed machine's instance lives in the store.

use std::fmt;

/// Where a record lives in the store. Only the server builds keys: a flow's key comes
/// from what the server created (a connection, a minted handle), an instance's from the
/// machine and the object's own id — never from a header or an id a client chose.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(String);

impl StoreKey {
    /// How the keys of flows begin (a connection's, a handle's).
    pub const FLOW_PREFIXES: [&'static str; 2] = ["connection:", "handle:"];

    /// How the keys of keyed machines' instances begin (in no tenant, in a tenant, of a
    /// principal).
    pub const INSTANCE_PREFIXES: [&'static str; 3] = ["instance:", "tenant-instance:", "owned-instance:"];

    /// The flow of one connection: stdio, or one stateful Streamable HTTP session.
    /// `connection_id` is random per connection, so replicas sharing a store never collide.
    pub fn connection(connection_id: &str) -> Self {
        Self(format!("connection:{connection_id}"))
    }

    /// The flow a signed state handle names (`flow_id` is the random id minted with it).
    pub fn handle(flow_id: &str) -> Self {
        Self(format!("handle:{flow_id}"))
    }

    /// The instance of keyed machine `machine` for the object `key` (invoice `INV-7`).
    /// The machine id's length is part of the key, so no id/key pair can spell another's.
    pub fn instance(machine: &str, key: &str) -> Self {
        Self(format!("instance:{}:{machine}:{key}", machine.len()))
    }

    /// The instance of tenant-scoped machine `machine` for the object `key` of `tenant`:
    /// `INV-1` of tenant A and `INV-1` of tenant B are two records. Lengths are part of the
    /// key, so no tenant/machine/key triple can spell another's.
    pub fn tenant_instance(tenant: &str, machine: &str, key: &str) -> Self {
        Self(format!("tenant-instance:{}:{tenant}:{}:{machine}:{key}", tenant.len(), machine.len()))
    }

    /// The instance of principal-owned machine `machine` for the object `key` of the
    /// principal whose digest is `owner`: another principal's `Q-1` is another record.
    /// Lengths are part of the key, so no owner/machine/key triple can spell another's.
    pub fn owned_instance(owner: &str, machine: &str, key: &str) -> Self {
        Self(format!("owned-instance:{}:{owner}:{}:{machine}:{key}", owner.len(), machine.len()))
    }

    /// The counter new keys of a principal-owned `machine` are minted from, per owner (the
    /// principal's digest).
    pub fn minted_for_owner(machine: &str, owner: &str) -> Self {
        Self(format!("minted-owned:{}:{owner}:{machine}", owner.len()))
    }

    /// The counter new keys of `machine` are minted from (`mint: "PAY-{n}"`), per tenant
    /// for a tenant-scoped machine.
    pub fn minted(machine: &str, tenant: Option<&str>) -> Self {
        match tenant {
            Some(tenant) => Self(format!("minted:{}:{tenant}:{machine}", tenant.len())),
            None => Self(format!("minted:{machine}")),
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
        if let Some(rest) = self.0.strip_prefix("instance:") {
            let (machine, id) = counted(rest)?;
            return Some((None, machine, id));
        }
        let rest = (self.0.strip_prefix("tenant-instance:")).or_else(|| self.0.strip_prefix("owned-instance:"))?;
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
        self.0.starts_with("handle:")
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
}
