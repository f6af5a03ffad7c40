//! The command line every toolgate server understands.

use std::net::SocketAddr;

use super::Server;
use crate::registry::StartupError;

const USAGE: &str = "usage: <server> [--http ADDR]\n\n  (no flag)     serve MCP over stdio\n  --http ADDR   serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080; port 0 picks one)";

/// Why a server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The registry is invalid.
    #[error(transparent)]
    Startup(#[from] StartupError),
    /// The command line is wrong.
    #[error("{0}\n\n{USAGE}")]
    Usage(String),
    /// Binding or serving failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The MCP session could not start.
    #[error("MCP session failed: {0}")]
    Session(String),
}

enum Mode {
    Stdio,
    Http(SocketAddr),
    Help,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Mode, ServeError> {
    let mode = match args.next().as_deref() {
        None => Mode::Stdio,
        Some("-h" | "--help") => Mode::Help,
        Some("--http") => {
            let addr = args.next().ok_or_else(|| ServeError::Usage("`--http` needs an address".into()))?;
            let addr =
                addr.parse().map_err(|e| ServeError::Usage(format!("`--http {addr}`: not a socket address ({e})")))?;
            Mode::Http(addr)
        }
        Some(other) => return Err(ServeError::Usage(format!("unknown argument `{other}`"))),
    };
    match args.next() {
        Some(extra) => Err(ServeError::Usage(format!("unexpected argument `{extra}`"))),
        None => Ok(mode),
    }
}

impl Server {
    /// Serves as the command line says: stdio by default, `--http ADDR` for Streamable
    /// HTTP. Logs go to stderr (stdout is the protocol on stdio); `RUST_LOG` filters them.
    pub async fn run_cli(self) -> Result<(), ServeError> {
        init_logging();
        match parse(std::env::args().skip(1))? {
            Mode::Help => {
                println!("{USAGE}");
                Ok(())
            }
            Mode::Stdio => self.serve_stdio().await,
            Mode::Http(addr) => {
                let listener = tokio::net::TcpListener::bind(addr).await?;
                self.serve_http(listener).await
            }
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // A binary that already installed a subscriber keeps it.
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter().map(|s| s.to_string()).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn parses_the_two_modes() {
        assert!(matches!(parse(args(&[])), Ok(Mode::Stdio)));
        assert!(matches!(parse(args(&["--http", "127.0.0.1:0"])), Ok(Mode::Http(a)) if a.port() == 0));
        assert!(matches!(parse(args(&["--help"])), Ok(Mode::Help)));
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        for (line, expected) in [
            (&["--http"][..], "`--http` needs an address"),
            (&["--http", "localhost"][..], "not a socket address"),
            (&["--stdio"][..], "unknown argument `--stdio`"),
            (&["--http", "127.0.0.1:1", "x"][..], "unexpected argument `x`"),
        ] {
            let error = parse(args(line)).err().expect("must fail").to_string();
            assert!(error.contains(expected) && error.contains("usage:"), "{line:?}: {error}");
        }
    }
}
