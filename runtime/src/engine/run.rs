//! Running a handler: under its deadline, the client's cancellation and a panic guard. A
//! call that does not finish — its handler failed, timed out, panicked or was cancelled —
//! commits nothing (the caller commits only an `Ok`).

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::{Map, Value};

use super::Limits;
use crate::action::{ActionRegistration, Ctx, Output};
use crate::error::ToolError;

/// Runs the handler under its deadline, the client's cancellation and a panic guard;
/// the synchronous part of the call (deserializing the input, creating the future) is
/// inside all three. A cancelled or timed-out handler's future is dropped.
///
/// Most handlers finish at their first poll: the deadline's timer and the
/// cancellation's waiter are set up only for one that does not, since arming a timer
/// wakes the runtime's timer thread on every call.
pub(crate) async fn run_handler(
    limits: Limits,
    registration: &'static ActionRegistration,
    arguments: Map<String, Value>,
    ctx: Ctx,
) -> Result<Output, ToolError> {
    let deadline = registration.timeout_ms.map_or(limits.handler_timeout, Duration::from_millis);
    let cancellation = ctx.client.cancellation().clone();
    let first_wait = ctx.client.first_wait().cloned();
    // Creating the handler's future runs none of its code (the generated call function
    // boxes an `async` block), but stays behind the panic guard all the same.
    let called = std::panic::catch_unwind(AssertUnwindSafe(|| (registration.handler.call)(arguments, ctx)));
    let finished = match called {
        Err(panic) => Ok(Err(panic)),
        Ok(called) => {
            let mut running = AssertUnwindSafe(called).catch_unwind();
            // Most handlers finish at their first poll: they need neither the deadline's
            // timer nor a place among the cancellation's waiters, and the future that
            // would hold both is built (boxed, off this call's own future) only for
            // one that does not.
            match crate::wait::poll_once(Pin::new(&mut running)).await {
                Poll::Ready(finished) => Ok(finished),
                Poll::Pending => {
                    // A call that runs as a task becomes one now.
                    if let Some(first_wait) = first_wait {
                        (first_wait.0)();
                    }
                    let waited = Box::pin(async move {
                        tokio::select! {
                            biased;
                            finished = tokio::time::timeout(deadline, running) => Some(finished.map_err(|_| ())),
                            () = cancellation.cancelled() => None,
                        }
                    });
                    match waited.await {
                        Some(finished) => finished,
                        None => {
                            tracing::info!(tool = registration.name, "call cancelled by the client; nothing committed");
                            return Err(ToolError::cancelled());
                        }
                    }
                }
            }
        }
    };
    match finished {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => Err(ToolError::internal(format_args!(
            "`{}`'s handler panicked: {}",
            registration.name,
            panic_message(&*panic)
        ))),
        Err(_) => {
            tracing::warn!(tool = registration.name, deadline_ms = deadline.as_millis() as u64, "handler timed out");
            Err(ToolError::timeout(deadline.as_millis() as u64))
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}
