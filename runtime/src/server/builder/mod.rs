//! [`ServerBuilder`]: everything a server is configured with, checked once in
//! [`ServerBuilder::build`].

mod auth;
mod build;
mod http;
mod server_builder;

pub use server_builder::ServerBuilder;
