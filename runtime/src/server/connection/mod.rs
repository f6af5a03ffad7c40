//! [`Connection`]: rmcp's `ServerHandler` for one client connection — stdio, one stateful
//! Streamable HTTP session, or one sessionless request.

mod call;
mod catalog;
mod errors;
mod handler;
mod session;
mod state;
mod watch;

pub(crate) use call::{CallRequest, Served};
pub(crate) use session::OwnedCallGuard;
pub use state::Connection;
pub(crate) use state::{CallSink, SessionTag};
