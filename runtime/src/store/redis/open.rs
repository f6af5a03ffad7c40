//! The Redis store's line of the table of schemes ([`open`](fn@crate::store::open)):
//! `redis://HOST:PORT/DB`, and `rediss://` for TLS.

use std::sync::Arc;

use super::store::RedisStore;
use crate::store::StoreError;
use crate::store::options::{OpenStoreError, Opened, Opening, StoreOptions};

/// Connects (a Redis that cannot be reached, or that would forget unless accepted, is an
/// error), trusting the options' certificate authorities and living leases as they say.
pub(crate) fn open<'a>(url: &'a str, options: &'a StoreOptions) -> Opening<'a> {
    Box::pin(async move {
        #[cfg(not(feature = "redis-tls"))]
        if url.starts_with("rediss://") {
            return Err(OpenStoreError::NotBuilt("Redis over TLS (toolgate's `redis-tls` feature)".into()));
        }
        let mut connecting = RedisStore::builder(url);
        if let Some(path) = options.redis_ca_file() {
            let pem = std::fs::read(path).map_err(|e| OpenStoreError::CertificateAuthorities {
                path: path.to_path_buf(),
                problem: e.to_string(),
            })?;
            connecting = connecting.trusting(&pem);
        }
        if options.accepts_volatile_redis() {
            connecting = connecting.accept_volatile();
        }
        let store = connecting.connect().await.map_err(|error| {
            OpenStoreError::Unavailable(match error {
                StoreError::Unavailable(why) => why,
                other => other.to_string(),
            })
        })?;
        let store = match options.leases_live() {
            Some(ttl) => store.with_lease_ttl(ttl),
            None => store,
        };
        Ok(Opened::Store(Arc::new(store)))
    })
}
