//! Driving the payments example, for the items that need its timers and effects (`timers`,
//! `backlog`): tenants with a token each, payments created and moved on a connection per
//! tenant, and the notices log its effects write, read back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Config;
use crate::driver::Caller;
use crate::server::Server;
use crate::stores::Target;

/// Tenants, each with one principal and one connection while seeding.
pub(crate) const TENANTS: usize = 32;

/// The bearer token of `tenant`'s clerk.
pub(crate) fn token(tenant: usize) -> String {
    format!("scale-token-of-clerk-{tenant:04}-00000000000000")
}

fn tokens_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.toml");
    let entries: String = (0..TENANTS)
        .map(|t| {
            format!(
                "[[token]]\nsecret = \"{}\"\nprincipal = \"clerk-{t}\"\ntenant = \"t{t}\"\nscopes = [\"payments:create\", \"payments:capture\"]\n\n",
                token(t)
            )
        })
        .collect();
    std::fs::write(&path, entries).expect("the tokens file");
    path
}

/// The payments server's arguments: its tokens, notices log, and how long an
/// authorization lasts.
pub(crate) fn payments_args(config: &Config, dir: &Path, lapse_s: u64) -> Vec<String> {
    let mut args: Vec<String> = config.server_args().into_iter().map(String::from).collect();
    args.extend([
        "--tokens".into(),
        tokens_file(dir).display().to_string(),
        "--notices-log".into(),
        dir.join("notices.jsonl").display().to_string(),
        "--otp-outbox".into(),
        dir.join("otp.jsonl").display().to_string(),
        "--after".into(),
        format!("authorized={lapse_s}s"),
    ]);
    args
}

/// Starts the payments example on `target` with `args`.
pub(crate) async fn start(target: &Target, args: &[String]) -> Server {
    start_with(target, args, &[]).await
}

/// Starts the payments example on `target` with `args` and the environment `env`.
pub(crate) async fn start_with(target: &Target, args: &[String], env: &[(&str, String)]) -> Server {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start_with("payments", &target.url, &args, env).await
}

/// A creation's arguments.
pub(crate) const NEW_PAYMENT: &str =
    r#"{"description":"scale","amount":{"amount":"25.00","currency":"USD"},"domain":"payment"}"#;

/// The arguments naming payment `id`.
pub(crate) fn payment(id: &str) -> String {
    format!(r#"{{"payment_id":"{id}","domain":"payment"}}"#)
}

/// Each tenant's payments, by the ids the server gave them.
pub(crate) type Made = Arc<Vec<Vec<String>>>;

/// Creates `count` payments, spread over the tenants, a connection each (tenant `t`'s on
/// `urls[t % urls.len()]`).
pub(crate) async fn create(urls: &[String], count: u64) -> (Made, Duration) {
    let started = Instant::now();
    let workers: Vec<_> = (0..TENANTS)
        .map(|tenant| {
            let url = urls[tenant % urls.len()].clone();
            let mine = count / TENANTS as u64 + u64::from((tenant as u64) < count % TENANTS as u64);
            tokio::spawn(async move {
                let mut caller = Caller::with_token(&url, &token(tenant));
                let mut ids = Vec::with_capacity(mine as usize);
                for _ in 0..mine {
                    let (_, made) = caller.call_for("payment_create", NEW_PAYMENT).await.expect("a creation");
                    ids.push(made["payment_id"].as_str().expect("a payment id").to_string());
                }
                ids
            })
        })
        .collect();
    let mut made = Vec::new();
    for worker in workers {
        made.push(worker.await.expect("a creating worker"));
    }
    (Arc::new(made), started.elapsed())
}

/// Calls `tool` on every payment, each tenant on its connection (tenant `t`'s on
/// `urls[t % urls.len()]`): `payment_authorize`, `payment_settle`.
pub(crate) async fn each(urls: &[String], made: &Made, tool: &'static str) -> Duration {
    let started = Instant::now();
    let workers: Vec<_> = (0..TENANTS)
        .map(|tenant| {
            let (url, made) = (urls[tenant % urls.len()].clone(), made.clone());
            tokio::spawn(async move {
                let mut caller = Caller::with_token(&url, &token(tenant));
                for id in &made[tenant] {
                    if let Err(error) = caller.call(tool, &payment(id)).await {
                        panic!("{tool} of {id}: {error}");
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("a worker");
    }
    started.elapsed()
}

/// The notices log's lines of one notice (`released`, `settled`), read as the log grows:
/// each poll reads only what was appended since the last, so that polling a log of a
/// hundred thousand lines does not take the cores the servers it measures need.
pub(crate) struct Notices {
    path: std::path::PathBuf,
    needle: String,
    /// How far the log was read, and the start of a line not yet ended there.
    read: u64,
    partial: String,
    lines: usize,
    keys: std::collections::HashSet<String>,
}

impl Notices {
    /// The lines of `notice` in `dir`'s notices log, none read yet.
    pub(crate) fn new(dir: &Path, notice: &str) -> Self {
        Notices {
            path: dir.join("notices.jsonl"),
            needle: format!(r#""notice":"{notice}""#),
            read: 0,
            partial: String::new(),
            lines: 0,
            keys: Default::default(),
        }
    }

    /// How many lines of the notice, and how many distinct idempotency keys, so far.
    pub(crate) fn count(&mut self) -> (usize, usize) {
        use std::io::{Read, Seek, SeekFrom};
        let mut appended = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.path) {
            file.seek(SeekFrom::Start(self.read)).expect("the log seeks");
            self.read += file.read_to_string(&mut appended).expect("the log reads") as u64;
        }
        self.partial.push_str(&appended);
        let ended = self.partial.rfind('\n').map_or(0, |at| at + 1);
        for line in self.partial[..ended].lines().filter(|l| l.contains(&self.needle)) {
            self.lines += 1;
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(line) {
                self.keys.insert(value["key"].as_str().unwrap_or_default().to_string());
            }
        }
        self.partial.drain(..ended);
        (self.lines, self.keys.len())
    }
}
