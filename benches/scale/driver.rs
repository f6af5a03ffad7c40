//! The load's client: sessionless MCP 2026-07-28 `tools/call` requests over HTTP/1.1, one
//! connection per [`Caller`], each call's latency kept, and any answer that is not a
//! successful tool result counted as bad (a scale figure with bad calls is not a figure).

use std::time::{Duration, Instant};

/// One connection's client, for one tool at a time.
pub(crate) struct Caller {
    http: reqwest::Client,
    url: String,
    next_id: u64,
    bearer: Option<String>,
}

impl Caller {
    /// A client of the server at `url` (`http://…/mcp`) that keeps one connection.
    pub(crate) fn new(url: &str) -> Self {
        Self { http: Self::client(), url: url.to_string(), next_id: 0, bearer: None }
    }

    /// An HTTP client that keeps one idle connection: building one costs milliseconds of
    /// CPU (measured: 4–5 ms on a quiet machine), so a load that calls often shares one
    /// ([`Caller::sharing`]).
    pub(crate) fn client() -> reqwest::Client {
        (reqwest::Client::builder()).pool_max_idle_per_host(1).tcp_nodelay(true).build().expect("an HTTP client")
    }

    /// A caller through `http`, presenting `token`: its calls take a connection `http`
    /// holds idle, or one of their own.
    pub(crate) fn sharing(http: &reqwest::Client, url: &str, token: &str) -> Self {
        Self { http: http.clone(), url: url.to_string(), next_id: 0, bearer: Some(format!("Bearer {token}")) }
    }

    /// A client that presents `token` as its bearer token.
    pub(crate) fn with_token(url: &str, token: &str) -> Self {
        Self::sharing(&Self::client(), url, token)
    }

    /// Calls `tool` with `arguments` (a JSON object's text); `Ok` with the latency when
    /// the answer is a successful tool result, `Err` with what came back otherwise.
    pub(crate) async fn call(&mut self, tool: &str, arguments: &str) -> Result<Duration, String> {
        self.send(tool, arguments).await.map(|(took, _)| took)
    }

    /// [`Caller::call`], with the tool result's `structuredContent`.
    pub(crate) async fn call_for(
        &mut self,
        tool: &str,
        arguments: &str,
    ) -> Result<(Duration, serde_json::Value), String> {
        let (took, text) = self.send(tool, arguments).await?;
        let mut reply: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{tool}: {e}"))?;
        Ok((took, reply["result"]["structuredContent"].take()))
    }

    /// One call; the latency and the reply's text when it is a successful tool result.
    async fn send(&mut self, tool: &str, arguments: &str) -> Result<(Duration, String), String> {
        self.next_id += 1;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#,
            self.next_id
        );
        let started = Instant::now();
        let mut request = self.http.post(&self.url);
        if let Some(bearer) = &self.bearer {
            request = request.header("Authorization", bearer);
        }
        let response = request
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", tool)
            .timeout(Duration::from_secs(60))
            .body(body)
            .send()
            .await
            .map_err(|error| format!("{tool}: {error}"))?;
        let status = response.status();
        let text = response.text().await.map_err(|error| format!("{tool}: {error}"))?;
        let took = started.elapsed();
        if status.is_success() && text.contains(r#""isError":false"#) {
            Ok((took, text))
        } else {
            Err(format!("{tool} {arguments}: HTTP {status}: {}", text.chars().take(300).collect::<String>()))
        }
    }
}

/// Latencies, summarized.
#[derive(Debug, Default, Clone)]
pub(crate) struct Latencies {
    micros: Vec<u32>,
}

impl Latencies {
    /// Keeps one.
    pub(crate) fn push(&mut self, took: Duration) {
        self.micros.push(took.as_micros().min(u32::MAX as u128) as u32);
    }

    /// Takes in another's.
    pub(crate) fn extend(&mut self, other: Latencies) {
        self.micros.extend(other.micros);
    }

    /// How many.
    pub(crate) fn len(&self) -> usize {
        self.micros.len()
    }

    /// The `q` quantile (0.5: the median), in milliseconds.
    pub(crate) fn quantile_ms(&mut self, q: f64) -> f64 {
        if self.micros.is_empty() {
            return f64::NAN;
        }
        self.micros.sort_unstable();
        let at = ((self.micros.len() - 1) as f64 * q).round() as usize;
        f64::from(self.micros[at]) / 1e3
    }

    /// The slowest, in milliseconds.
    pub(crate) fn max_ms(&self) -> f64 {
        self.micros.iter().max().map_or(f64::NAN, |m| f64::from(*m) / 1e3)
    }
}

/// A small, fast, seeded generator (SplitMix64): the ids a run picks are uniform and the
/// same from run to run.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A number below `bound` (> 0).
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((u128::from(z) * u128::from(bound)) >> 64) as u64
    }
}
