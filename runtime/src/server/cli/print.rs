//! `describe`, `export --xstate` and `audit`: what the server is, printed to stdout from its
//! checked registry alone — no store is opened, nothing is served.

use std::io::Write;

use super::ServeError;
use super::args::{AuditArgs, AuditFormat};
use crate::auth::Roster;
use crate::inspect::{self, Format};
use crate::server::ServerBuilder;

impl ServerBuilder {
    /// `describe --format FORMAT`: the machines as state diagrams.
    pub(super) fn print_description(self, format: Format) -> Result<(), ServeError> {
        let registry = self.into_registry()?;
        print(&inspect::describe(&registry, format))
    }

    /// `export --xstate`: the machines as XState v5 JSON, by machine id.
    pub(super) fn print_xstate(self) -> Result<(), ServeError> {
        let registry = self.into_registry()?;
        let machines =
            serde_json::to_string_pretty(&inspect::export_xstate(&registry)).map_err(std::io::Error::other)?;
        print(&machines)
    }

    /// `audit --format FORMAT`: every tool graded against the routing checklist, its
    /// scopes against the principals the options give. The report is printed either way; a
    /// failure makes the result an error, so that the process exits with a failure status.
    pub(super) fn print_audit(self, args: AuditArgs) -> Result<(), ServeError> {
        let issuer = if args.jwt_issuer { Roster::open() } else { Roster::empty() };
        let server = match args.context_budget {
            Some(tokens) => self.context_budget(tokens),
            None => self,
        };
        let audit = server.with_callers(args.callers, &args.sources)?.into_audit(issuer)?;
        let report = match args.format {
            AuditFormat::Table => audit.table(),
            AuditFormat::Json => serde_json::to_string_pretty(&audit.to_json()).map_err(std::io::Error::other)?,
        };
        print(&report)?;
        if audit.passed() { Ok(()) } else { Err(ServeError::AuditFailed { failures: audit.failures().count() }) }
    }
}

/// Writes `text` to stdout, ending in one newline. A reader that went away (`| head`) is
/// not an error.
fn print(text: &str) -> Result<(), ServeError> {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.trim_end_matches('\n').as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    unless_unread(written)
}

/// `--help`: clap's text, to stdout.
pub(super) fn print_help(help: &clap::Error) -> Result<(), ServeError> {
    unless_unread(help.print())
}

/// The error of a write to stdout, unless it is that the reader went away (`| head`).
fn unless_unread(written: std::io::Result<()>) -> Result<(), ServeError> {
    match written {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(error.into()),
        _ => Ok(()),
    }
}
