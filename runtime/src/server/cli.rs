//! The command line every toolgate server understands.

use std::net::SocketAddr;
use std::time::Duration;

use super::ServerBuilder;
use crate::registry::StartupError;

const USAGE: &str = "usage: <server> [--http ADDR [--stateless]] [--handle-ttl SECONDS]

  (no flag)             serve MCP over stdio
  --http ADDR           serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080; port 0 picks one)
  --stateless           with --http: no sessions (MCP 2026-07-28); conversations travel in state handles
  --handle-ttl SECONDS  how long a state handle lives after its last use (default 3600)

  TOOLGATE_HANDLE_KEY   the key (32 bytes or more) that signs state handles; set the same one on every replica";

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

#[derive(Debug, PartialEq)]
enum Mode {
    Stdio,
    Http(SocketAddr),
    Help,
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Command {
    mode: Mode,
    stateless: bool,
    handle_ttl: Option<Duration>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Command, ServeError> {
    let usage = |message: String| ServeError::Usage(message);
    let mut command = Command { mode: Mode::Stdio, stateless: false, handle_ttl: None };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => command.mode = Mode::Help,
            "--http" if command.mode == Mode::Stdio => {
                let addr = args.next().ok_or_else(|| usage("`--http` needs an address".into()))?;
                let addr = addr.parse().map_err(|e| usage(format!("`--http {addr}`: not a socket address ({e})")))?;
                command.mode = Mode::Http(addr);
            }
            "--stateless" if !command.stateless => command.stateless = true,
            "--handle-ttl" if command.handle_ttl.is_none() => {
                let seconds = args.next().ok_or_else(|| usage("`--handle-ttl` needs a number of seconds".into()))?;
                let seconds: u64 =
                    seconds.parse().ok().filter(|&s| s > 0).ok_or_else(|| {
                        usage(format!("`--handle-ttl {seconds}`: not a whole number of seconds above 0"))
                    })?;
                command.handle_ttl = Some(Duration::from_secs(seconds));
            }
            "--http" | "--stateless" | "--handle-ttl" => return Err(usage(format!("`{arg}` is given twice"))),
            other if other.starts_with('-') => return Err(usage(format!("unknown argument `{other}`"))),
            other => return Err(usage(format!("unexpected argument `{other}`"))),
        }
    }
    if command.stateless && !matches!(command.mode, Mode::Http(_)) {
        return Err(usage("`--stateless` needs `--http ADDR`".into()));
    }
    Ok(command)
}

impl ServerBuilder {
    /// Builds the server and serves it as the command line says: stdio by default,
    /// `--http ADDR` for Streamable HTTP at `http://ADDR/mcp`, `--stateless` without
    /// sessions. Logs go to stderr (stdout is the protocol on stdio); `RUST_LOG` filters
    /// them.
    pub async fn run_cli(mut self) -> Result<(), ServeError> {
        init_logging();
        let command = parse(std::env::args().skip(1))?;
        if command.stateless {
            self = self.sessionless();
        }
        if let Some(ttl) = command.handle_ttl {
            self = self.handle_ttl(ttl);
        }
        if command.mode == Mode::Help {
            println!("{USAGE}");
            return Ok(());
        }
        let server = self.build()?;
        match command.mode {
            Mode::Http(addr) => {
                let listener = tokio::net::TcpListener::bind(addr).await?;
                server.serve_http(listener).await
            }
            Mode::Stdio | Mode::Help => server.serve_stdio().await,
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
    fn parses_the_modes_and_options() {
        assert_eq!(parse(args(&[])).unwrap(), Command { mode: Mode::Stdio, stateless: false, handle_ttl: None });
        let http = parse(args(&["--http", "127.0.0.1:0", "--stateless", "--handle-ttl", "5"])).unwrap();
        assert!(matches!(http.mode, Mode::Http(a) if a.port() == 0));
        assert_eq!((http.stateless, http.handle_ttl), (true, Some(Duration::from_secs(5))));
        assert_eq!(parse(args(&["--help"])).unwrap().mode, Mode::Help);
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        for (line, expected) in [
            (&["--http"][..], "`--http` needs an address"),
            (&["--http", "localhost"][..], "not a socket address"),
            (&["--stdio"][..], "unknown argument `--stdio`"),
            (&["--http", "127.0.0.1:1", "x"][..], "unexpected argument `x`"),
            (&["--stateless"][..], "`--stateless` needs `--http ADDR`"),
            (&["--http", "127.0.0.1:1", "--http", "127.0.0.1:2"][..], "`--http` is given twice"),
            (&["--handle-ttl", "0"][..], "not a whole number of seconds"),
        ] {
            let error = parse(args(line)).expect_err("must fail").to_string();
            assert!(error.contains(expected) && error.contains("usage:"), "{line:?}: {error}");
        }
    }
}
