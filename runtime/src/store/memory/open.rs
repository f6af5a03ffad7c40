//! The memory store's line of the table of schemes ([`open`](fn@crate::store::open)): `memory`.

use std::sync::Arc;

use super::store::MemoryStore;
use crate::store::options::{OpenStoreError, Opened, Opening, StoreOptions};

/// Opens a store in this process's memory.
pub(crate) fn open<'a>(_url: &'a str, _options: &'a StoreOptions) -> Opening<'a> {
    tracing::warn!("state is kept in memory (`--store memory`): a restart forgets every transition");
    Box::pin(async { Ok::<_, OpenStoreError>(Opened::Store(Arc::new(MemoryStore::new()))) })
}
