//! [`FlowId`]: a flow as a handler may see it.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::store::StoreKey;

/// The identity of the flow (conversation) a call runs in, for a handler to tell flows
/// apart: to key its own per-conversation data, or to correlate log lines.
///
/// Two calls in one flow get equal ids, whichever session, connection or handle carried
/// them; calls in different flows get different ones. It shows as a short hex digest of
/// where the flow is stored, the same on every replica sharing a store, and says nothing
/// else: a handler can neither build one nor read from it how the flow was identified,
/// so nothing it does with the id can name another conversation's state.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct FlowId(StoreKey);

impl FlowId {
    pub(crate) fn of(key: &StoreKey) -> Self {
        Self(key.clone())
    }

    /// 16 hex digits: collisions are out of reach for any number of live flows, and a
    /// log line stays short.
    fn digest(&self) -> String {
        let digest = Sha256::digest(self.0.as_str().as_bytes());
        digest[..8].iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

impl fmt::Display for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.digest())
    }
}

impl fmt::Debug for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FlowId").field(&format_args!("{}", self.digest())).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_a_digest_and_not_the_key() {
        let id = FlowId::of(&StoreKey::connection("abc123"));
        let shown = id.to_string();
        assert_eq!(shown.len(), 16);
        assert!(shown.chars().all(|c| c.is_ascii_hexdigit()), "{shown}");
        assert!(!format!("{id:?}").contains("connection") && !format!("{id:?}").contains("abc123"), "{id:?}");
    }

    #[test]
    fn equal_flows_have_equal_ids() {
        let a = FlowId::of(&StoreKey::handle("f1"));
        assert_eq!(a, FlowId::of(&StoreKey::handle("f1")));
        assert_eq!(a.to_string(), FlowId::of(&StoreKey::handle("f1")).to_string());
        assert_ne!(a, FlowId::of(&StoreKey::handle("f2")));
        assert_ne!(a.to_string(), FlowId::of(&StoreKey::connection("f1")).to_string());
    }
}
