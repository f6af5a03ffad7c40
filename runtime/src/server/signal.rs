//! The signals that stop a server.

/// Completes on Ctrl-C (or when the signal cannot be watched).
pub(super) async fn ctrl_c() {
    let _ = tokio::signal::ctrl_c().await;
}
