//! The commits feed: commits announced with `pg_notify` (a JSON array of keys a
//! notification), and followed on a connection of its own with `LISTEN`.

use std::time::Duration;

use tokio_postgres::NoTls;

use crate::store::StoreKey;

const PAYLOAD_BYTES: usize = 7_900;

/// Keys as notifications' payloads: JSON arrays of keys, each under [`PAYLOAD_BYTES`] (a
/// key too long to share one is an array alone; one over the limit, which Postgres would
/// refuse and no replica could be told of, is left out and logged). One notification a
/// batch, not one a key: each costs Postgres and every listening replica the same, small
/// or not (measured: one a key cost a transition ~9% of its calls a second).
pub(super) fn payloads(keys: &[String]) -> Vec<String> {
    let mut payloads = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut size = 2;
    for key in keys {
        let encoded = serde_json::to_string(key).unwrap_or_default().len();
        if encoded + 2 > PAYLOAD_BYTES {
            tracing::warn!(key, "a key too long for a notification: other replicas are not told of its commit");
            continue;
        }
        if !current.is_empty() && size + 1 + encoded > PAYLOAD_BYTES {
            payloads.push(serde_json::to_string(&current).unwrap_or_default());
            (current, size) = (Vec::new(), 2);
        }
        size += encoded + usize::from(!current.is_empty());
        current.push(key);
    }
    if !current.is_empty() {
        payloads.push(serde_json::to_string(&current).unwrap_or_default());
    }
    payloads
}

/// The keys one notification announces: a JSON array of keys (or, from a toolgate that
/// announced one key a notification, the key itself).
fn announced_keys(payload: &str) -> Vec<String> {
    if payload.starts_with('[') { serde_json::from_str(payload).unwrap_or_default() } else { vec![payload.to_string()] }
}

/// Follows the schema's commit channel on a connection of its own, and hands each key to
/// `commits` (this process's own commits too); reconnects after a failure, and ends when
/// the store is gone.
pub(super) async fn announce_commits(
    url: String,
    channel: String,
    commits: tokio::sync::broadcast::WeakSender<StoreKey>,
) {
    use futures_util::StreamExt;
    loop {
        let Ok(config) = url.parse::<tokio_postgres::Config>() else { return };
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                let statement = format!("LISTEN \"{channel}\"");
                let listen = client.batch_execute(&statement);
                let mut listen = std::pin::pin!(listen);
                // The connection must be driven for the LISTEN to complete.
                let listened = loop {
                    tokio::select! {
                        done = &mut listen => break done.is_ok(),
                        message = messages.next() => if message.is_none() { break false },
                    }
                };
                if listened {
                    while let Some(message) = messages.next().await {
                        let Some(sender) = commits.upgrade() else { return };
                        match message {
                            Ok(tokio_postgres::AsyncMessage::Notification(notice)) => {
                                for key in announced_keys(notice.payload()) {
                                    let _ = sender.send(StoreKey::from_stored(key));
                                }
                            }
                            Ok(_) => {}
                            Err(_) => break,
                        }
                    }
                }
            }
            Err(error) => tracing::debug!(%error, "cannot follow the Postgres store's commits; retrying"),
        }
        if commits.upgrade().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_announced_in_as_few_notifications_as_fit_them() {
        let keys: Vec<String> = (0..400).map(|n| format!("instance:7:invoice:INV-{n:04}-\"quoted\"")).collect();
        let sent = payloads(&keys);
        assert!(sent.len() > 1, "400 keys of ~35 bytes need more than one payload");
        assert!(sent.iter().all(|payload| payload.len() <= PAYLOAD_BYTES));
        let heard: Vec<String> = sent.iter().flat_map(|payload| announced_keys(payload)).collect();
        assert_eq!(heard, keys);
        let one = vec!["instance:7:invoice:INV-1".to_string()];
        assert_eq!(payloads(&one), vec![r#"["instance:7:invoice:INV-1"]"#.to_string()]);
        // An older toolgate's notification: the key itself.
        assert_eq!(announced_keys("instance:7:invoice:INV-1"), one);
        // A key no notification can hold is left out, not sent to fail its batch.
        let long = vec!["k".repeat(PAYLOAD_BYTES), "short".to_string()];
        assert_eq!(payloads(&long), vec![r#"["short"]"#.to_string()]);
    }
}
