//! `redis-restored`: the step of the restore procedure that keeps keys from being minted
//! twice after Redis was restored from a backup (`docs/stores-and-replicas.md`). It writes
//! a new marker and advances every key counter by a margin
//! ([`RedisStoreBuilder::restored_from_backup`](crate::store::RedisStoreBuilder::restored_from_backup)),
//! then says what it did on stdout. Nothing is served.

use std::path::PathBuf;

use super::ServeError;
use super::args::{RestoredArgs, usage};
use super::serve::redacted;
use crate::server::ServerBuilder;

impl ServerBuilder {
    /// `redis-restored`: prepares the restored Redis (`--store`, or `TOOLGATE_STORE`), and
    /// says what it did.
    pub(super) async fn mark_restored(self, args: RestoredArgs) -> Result<(), ServeError> {
        let Some(url) = args.store.filter(|s| s.starts_with("redis://") || s.starts_with("rediss://")) else {
            return Err(usage("`redis-restored` needs the restored Redis: `--store redis://HOST:PORT/DB`"));
        };
        restored(&url, args.redis_ca, args.redis_volatile, args.mint_margin).await
    }
}

#[cfg(feature = "redis")]
async fn restored(url: &str, ca: Option<PathBuf>, volatile: bool, margin: Option<u64>) -> Result<(), ServeError> {
    use crate::store::{DEFAULT_MINT_MARGIN, RedisStore, StoreError};
    let mut builder = RedisStore::builder(url);
    if let Some(path) = &ca {
        let pem = std::fs::read(path).map_err(|e| usage(format!("`--redis-ca {}`: {e}", path.display())))?;
        builder = builder.trusting(&pem);
    }
    if volatile {
        builder = builder.accept_volatile();
    }
    let restored = builder.restored_from_backup(margin.unwrap_or(DEFAULT_MINT_MARGIN)).await.map_err(|error| {
        let error = match error {
            StoreError::Unavailable(why) => why,
            other => other.to_string(),
        };
        ServeError::Store(format!("`--store {}`: {error}", redacted(url)))
    })?;
    let mut said = format!(
        "toolgate: {} prepared after its restore: a new marker ({}), and every key counter advanced by {}\n",
        redacted(url),
        restored.marker,
        restored.margin
    );
    for (counter, before, after) in &restored.counters {
        said.push_str(&format!("  {counter}: {before} -> {after}\n"));
    }
    said.push_str(&format!(
        "  a counter the backup does not have starts past {}\n\
         Start the servers now; restart any still running (it refuses every call until then).\n",
        restored.floor
    ));
    use std::io::Write;
    std::io::stdout().lock().write_all(said.as_bytes())?;
    Ok(())
}

#[cfg(not(feature = "redis"))]
async fn restored(url: &str, _: Option<PathBuf>, _: bool, _: Option<u64>) -> Result<(), ServeError> {
    Err(usage(format!("`--store {}`: this server was built without Redis (toolgate's `redis` feature)", redacted(url))))
}
