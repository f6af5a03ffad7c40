//! The SQLite store's line of the table of schemes ([`open`](fn@crate::store::open)):
//! `sqlite:PATH`.

use crate::store::options::{OpenStoreError, Opened, Opening, StoreOptions};

/// Names the file after `sqlite:`, to be opened by whoever holds it once nothing else
/// stops its start ([`SqliteStore::open`](super::SqliteStore::open)).
pub(crate) fn open<'a>(url: &'a str, _options: &'a StoreOptions) -> Opening<'a> {
    let path = url.strip_prefix("sqlite:").unwrap_or(url);
    Box::pin(async move { Ok::<_, OpenStoreError>(Opened::File(path.into())) })
}
