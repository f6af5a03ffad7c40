//! The integration tests that declare no action of their own, in one test binary: the
//! example servers driven through real clients (rmcp's, the official Python and TypeScript
//! SDKs, raw HTTP), the command line, replicas on Redis, and the checks of the repository
//! itself (its architecture, its docs). One binary links once where twenty-one did, and
//! its tests share the two test threads instead of running file after file.
//!
//! A test file that declares actions or machines stays a test binary of its own: each
//! serves what its own binary registered (`Server::from_registry`).
//!
//! Run one file's tests with `cargo test -p toolgate --test integration invoice::`.

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod cli;
mod console;
mod console_owned;
mod describe;
mod docs;
mod durability;
mod effect_cut_offs;
mod exposition;
mod faults;
mod hardening;
mod invoice;
mod json_schema;
mod listeners;
mod older_stores;
mod other_sessions;
mod output_schemas;
mod own_postgres;
mod own_redis;
mod own_tables;
mod owned_path;
mod payments;
mod postgres_replicas;
mod postgres_sweep;
mod python_sdk;
mod redis_persistence;
mod replicas;
mod roll;
mod session_owner;
mod sessionless;
mod shutdown;
mod tasks;
mod travel;
mod typescript_sdk;
mod wire;
