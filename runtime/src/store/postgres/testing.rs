//! What the Postgres store's tests share.

use super::store::PostgresStore;

/// The Postgres the tests use (`TOOLGATE_TEST_POSTGRES_URL`); without it they are
/// skipped, saying so.
pub(super) fn test_url() -> Option<String> {
    let url = std::env::var("TOOLGATE_TEST_POSTGRES_URL").ok();
    if url.is_none() {
        eprintln!("skipped: set TOOLGATE_TEST_POSTGRES_URL to run the Postgres store's tests");
    }
    url
}

/// A store in a schema of its own, so that tests (and their runs) never share records.
pub(super) async fn fresh_store(url: &str) -> PostgresStore {
    let schema = format!("toolgate_test_{}", uuid::Uuid::new_v4().simple());
    PostgresStore::connect_in_schema(url, &schema).await.expect("connect")
}
