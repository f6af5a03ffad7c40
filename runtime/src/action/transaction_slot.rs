//! [`TransactionSlot`]: where a call's database transaction lives between its handler,
//! whose [`Transaction`](super::Transaction) opens it, and its commit, which takes it.

use std::sync::Arc;

use crate::store::{FlowStore, StoreTransaction};

/// Where a call's transaction lives between its handler and its commit: opened by the
/// handler's first statement, taken by the commit. Empty for a handler that takes no
/// [`Transaction`].
#[derive(Clone, Default)]
pub(crate) struct TransactionSlot(pub(super) Option<Arc<Shared>>);

/// The slot and whether its driver is lent: a handler's statement while it is fails at
/// once rather than wait for a lock its own handler holds.
pub(super) struct Shared {
    pub(super) slot: Arc<tokio::sync::Mutex<Slot>>,
    /// A [`PostgresClient`](super::PostgresClient) holds the slot.
    pub(super) lent: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for TransactionSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "TransactionSlot" } else { "TransactionSlot(none)" })
    }
}

pub(super) struct Slot {
    pub(super) store: Arc<dyn FlowStore>,
    /// Statements to run once before the first transaction opens: the tables of yours the
    /// server creates.
    pub(super) tables: Option<Arc<crate::store::Tables>>,
    pub(super) open: Option<Box<dyn StoreTransaction>>,
    /// The commit took it: a statement now would be in no transaction.
    pub(super) ended: bool,
    /// A statement that may write ran (not only queries).
    pub(super) wrote: bool,
}

impl TransactionSlot {
    /// A slot for a call on `store`.
    pub(crate) fn new(store: Arc<dyn FlowStore>, tables: Option<Arc<crate::store::Tables>>) -> Self {
        let slot = Slot { store, tables, open: None, ended: false, wrote: false };
        Self(Some(Arc::new(Shared { slot: Arc::new(tokio::sync::Mutex::new(slot)), lent: Default::default() })))
    }

    /// The transaction the handler wrote in, for the call's commit; `None` if it wrote
    /// nothing (one it only read in is ended here).
    pub(crate) async fn take(&self) -> Option<Box<dyn StoreTransaction>> {
        let shared = self.0.as_ref()?;
        let mut slot = shared.slot.lock().await;
        slot.ended = true;
        let open = slot.open.take()?;
        if slot.wrote {
            return Some(open);
        }
        if let Err(error) = open.commit(Vec::new()).await {
            tracing::debug!(%error, "a transaction that only read could not be ended; it is dropped");
        }
        None
    }
}
