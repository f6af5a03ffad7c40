//! The tables of yours a server keeps beside its own ([`ServerBuilder::tables`](crate::ServerBuilder::tables)):
//! created once, as the server starts serving (and, should that have failed, before the
//! first call's [`Transaction`](crate::Transaction) opens).

use super::{FlowStore, StoreError};

/// Statements that create the tables of yours (`CREATE TABLE IF NOT EXISTS …`), run once.
pub(crate) struct Tables {
    sql: String,
    created: tokio::sync::OnceCell<()>,
    /// Held by the call creating them: others wait, then find them created.
    creating: tokio::sync::Mutex<()>,
}

impl Tables {
    pub(crate) fn new(sql: String) -> Self {
        Self { sql, created: tokio::sync::OnceCell::new(), creating: tokio::sync::Mutex::new(()) }
    }

    /// Creates the tables in `store`'s database, in a transaction of their own, unless that
    /// was done already; a failure is tried again by the next call.
    pub(crate) fn create<'a>(
        &'a self,
        store: &'a dyn FlowStore,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>> {
        // Boxed, and named `Send`: a handler's future awaits it, and must be `Send` for
        // every lifetime it is called with.
        Box::pin(async move {
            if self.created.initialized() {
                return Ok(());
            }
            let _once = self.creating.lock().await;
            if self.created.initialized() {
                return Ok(());
            }
            let Some(tables) = store.capabilities().tables else {
                return Err(StoreError::Statement("the store keeps no tables of yours".into()));
            };
            let mut transaction = tables.transaction().await?;
            transaction.execute_batch(&self.sql).await?;
            transaction.commit(Vec::new()).await?;
            let _ = self.created.set(());
            Ok(())
        })
    }
}
