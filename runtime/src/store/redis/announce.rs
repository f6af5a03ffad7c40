//! The commits feed: the `toolgate:commits` channel, followed for as long as the store lives.

use std::time::Duration;

use crate::store::StoreKey;

/// Forwards the `toolgate:commits` channel to `commits` for as long as the store lives,
/// subscribing again after a lost connection.
pub(super) async fn announce_commits(client: redis::Client, commits: tokio::sync::broadcast::WeakSender<StoreKey>) {
    use futures_util::StreamExt;
    loop {
        let subscribed = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe("toolgate:commits").await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        match subscribed.await {
            Ok(mut pubsub) => {
                let mut messages = pubsub.on_message();
                while let Some(message) = messages.next().await {
                    // The store is gone: so is its feed.
                    let Some(commits) = commits.upgrade() else { return };
                    if let Ok(key) = message.get_payload::<String>() {
                        // Nobody listening is not an error.
                        let _ = commits.send(StoreKey::from_stored(key));
                    }
                }
            }
            Err(error) => tracing::debug!(%error, "cannot subscribe to the commit feed; retrying"),
        }
        if commits.upgrade().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
