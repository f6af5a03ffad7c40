//! The stdio transport: rmcp's line transport, except that every line goes through the
//! JSON check ([`super::wire`]) first, and a line that is not one well-formed JSON-RPC
//! message is answered here with its error (rmcp would not answer it at all).

use std::sync::Arc;

use futures_util::StreamExt;
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::wire::{Refusal, check};
use super::{ServeError, Server};

/// The stdio side: rmcp's line transport, except that a line that is not one well-formed
/// JSON-RPC message is answered here (a request that cannot be parsed gets its error
/// instead of no reply at all).
pub(crate) struct CheckedStdio {
    lines: FramedRead<tokio::io::Stdin, LinesCodec>,
    out: Arc<tokio::sync::Mutex<tokio::io::Stdout>>,
    /// Cancelled when stdin ends: what is still running for the client (a listening
    /// stream) stops, and the server can exit.
    ended: tokio_util::sync::CancellationToken,
}

/// The longest line read from stdin; a longer one is skipped.
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

impl CheckedStdio {
    /// `ended` is cancelled when stdin ends.
    pub(crate) fn new(ended: tokio_util::sync::CancellationToken) -> Self {
        Self {
            lines: FramedRead::new(tokio::io::stdin(), LinesCodec::new_with_max_length(MAX_LINE_BYTES)),
            out: Arc::new(tokio::sync::Mutex::new(tokio::io::stdout())),
            ended,
        }
    }
}

async fn write_line(out: &tokio::sync::Mutex<tokio::io::Stdout>, line: &[u8]) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

impl rmcp::transport::Transport<RoleServer> for CheckedStdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&out, &line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.next_message().await;
        if message.is_none() {
            self.ended.cancel();
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl CheckedStdio {
    /// The next well-formed message; `None` when stdin ends.
    async fn next_message(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = match self.lines.next().await? {
                Ok(line) => line,
                Err(LinesCodecError::MaxLineLengthExceeded) => {
                    tracing::warn!(max = MAX_LINE_BYTES, "skipped a stdin line longer than the limit");
                    continue;
                }
                Err(LinesCodecError::Io(_)) => return None,
            };
            let line = line.trim_start_matches('\u{feff}').trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let refusal = match check(line.as_bytes()) {
                Ok(_) => match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line) {
                    Ok(message) => return Some(message),
                    // A well-formed message rmcp does not know (its own checks differ).
                    Err(_) => Refusal::not_understood(
                        serde_json::from_str::<Value>(line)
                            .ok()
                            .and_then(|v| v.get("id").cloned())
                            .unwrap_or(Value::Null),
                    ),
                },
                Err(refusal) => refusal,
            };
            let body = refusal.body();
            if write_line(&self.out, body.as_bytes()).await.is_err() {
                return None;
            }
        }
    }
}

impl Server {
    /// Serves one client over this process's stdin/stdout until it disconnects (its input
    /// closes), or SIGTERM or SIGINT. Then it stops as HTTP does, without the drain: the
    /// tasks still running finish within the shutdown grace or are given up, the effects'
    /// attempts end, and the store releases every lease it holds.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        let signal = super::terminate_signal();
        self.create_your_tables().await?;
        // rmcp's line transport, but a line that is not one JSON-RPC message is answered.
        let connection = self.connection();
        let ended = connection.ended();
        let running = rmcp::ServiceExt::serve(connection, CheckedStdio::new(ended)).await?;
        let cancel = running.cancellation_token();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let quit = tokio::select! {
            quit = &mut waiting => quit,
            () = self.begin_on(signal) => {
                cancel.cancel();
                waiting.await
            }
        };
        quit?;
        let deadline = std::time::Instant::now() + self.shared.lifecycle.grace;
        self.shared.engine.calls_ended(deadline).await;
        self.shared.engine.stop(deadline).await;
        Ok(())
    }
}
