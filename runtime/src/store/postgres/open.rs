//! The Postgres store's line of the table of schemes ([`open`](fn@crate::store::open)):
//! `postgres://USER@HOST:PORT/DB`, or `postgresql://`.

use std::sync::Arc;

use super::store::PostgresStore;
use crate::store::options::{OpenStoreError, Opened, Opening, StoreOptions};

/// Connects, and creates or migrates toolgate's tables in the schema `toolgate` (a
/// Postgres that cannot be reached, or a schema a newer toolgate wrote, is an error).
pub(crate) fn open<'a>(url: &'a str, options: &'a StoreOptions) -> Opening<'a> {
    Box::pin(async move {
        let store =
            PostgresStore::connect(url).await.map_err(|error| OpenStoreError::Unavailable(error.to_string()))?;
        let store = match options.leases_live() {
            Some(ttl) => store.with_lease_ttl(ttl),
            None => store,
        };
        Ok(Opened::Store(Arc::new(store)))
    })
}
