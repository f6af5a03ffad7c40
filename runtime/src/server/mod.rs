//! The MCP server: a [`Server`] holds the registry and the flow store; each client
//! connection (stdio, or one Streamable HTTP session) is served by a [`Connection`].

mod accept;
mod builder;
mod catalog;
mod cli;
mod connection;
pub(crate) mod front;
mod handle;
mod http_options;
pub(crate) mod lifecycle;
mod listeners;
mod probes;
mod refusal_log;
mod rmcp_client;
mod rounds;
mod serve_error;
mod shared;
mod stdio;
mod watchers;
mod wire;

#[cfg(feature = "fuzz")]
pub(crate) use wire::check_counting;
pub use wire::{MAX_MEMBERS_PER_MESSAGE, MAX_MEMBERS_PER_OBJECT};

pub use builder::ServerBuilder;
pub use connection::Connection;
pub use http_options::{
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_CLIENT, DEFAULT_MAX_LISTEN_STREAMS,
    DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT, DEFAULT_MAX_REQUEST_BODY_BYTES, DEFAULT_MAX_SESSIONS,
    DEFAULT_REQUEST_READ_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT,
};
pub use rmcp_client::RmcpPeer;
pub use serve_error::ServeError;

pub use crate::engine::{
    DEFAULT_HANDLER_TIMEOUT, DEFAULT_LEASE_WAIT, DEFAULT_TASK_TTL, DEFAULT_TASKS_PER_PRINCIPAL,
    DEFAULT_TASKS_PER_SERVER,
};

pub use handle::Server;
pub use lifecycle::{DEFAULT_DRAIN_DELAY, DEFAULT_SHUTDOWN_GRACE, terminate_signal};
pub(crate) use shared::{AuthOptions, ConnectionState, Shared};
