//! The stores a run is measured on: a fresh one per size, made and emptied by the harness —
//! a SQLite file in a temporary directory, a Postgres database of its own
//! (`toolgate_scale_<n>`, dropped afterwards), or a Redis database number, flushed first.

use std::path::PathBuf;
use std::sync::Arc;

use toolgate::store::{FlowStore, PostgresStore, RedisStore, SqliteStore};

/// Which backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Sqlite,
    Postgres,
    Redis,
}

impl Kind {
    /// `sqlite`, `postgres` or `redis`.
    pub(crate) fn parse(name: &str) -> Self {
        match name {
            "sqlite" => Kind::Sqlite,
            "postgres" => Kind::Postgres,
            "redis" => Kind::Redis,
            other => panic!("STORES names sqlite, postgres or redis, not {other}"),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
            Kind::Redis => "redis",
        }
    }
}

/// One fresh store.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) kind: Kind,
    /// What `--store` is given.
    pub(crate) url: String,
    file: Option<PathBuf>,
    database: Option<(String, String)>,
}

/// `SCALE_POSTGRES_URL`, else `TOOLGATE_TEST_POSTGRES_URL`: a server the harness may
/// create databases on.
fn postgres_admin() -> String {
    std::env::var("SCALE_POSTGRES_URL")
        .or_else(|_| std::env::var("TOOLGATE_TEST_POSTGRES_URL"))
        .expect("a Postgres store needs SCALE_POSTGRES_URL (or TOOLGATE_TEST_POSTGRES_URL)")
}

/// `SCALE_REDIS_URL`, else `TOOLGATE_TEST_REDIS_URL`, without its database number.
fn redis_base() -> String {
    let url = std::env::var("SCALE_REDIS_URL")
        .or_else(|_| std::env::var("TOOLGATE_TEST_REDIS_URL"))
        .expect("a Redis store needs SCALE_REDIS_URL (or TOOLGATE_TEST_REDIS_URL)");
    let rest = url.trim_start_matches("redis://");
    match rest.split_once('/') {
        Some((host, _)) => format!("redis://{host}"),
        None => url.trim_end_matches('/').to_string(),
    }
}

async fn postgres_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("Postgres");
    tokio::spawn(connection);
    client
}

impl Target {
    /// A fresh, empty store of `kind`, the `slot`-th of the run (Redis: database 8 +
    /// `slot`; Postgres: database `toolgate_scale_<slot>`).
    pub(crate) async fn fresh(kind: Kind, slot: usize, dir: &std::path::Path) -> Self {
        match kind {
            Kind::Sqlite => {
                let file = dir.join(format!("scale-{slot}.db"));
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
                }
                Target { kind, url: format!("sqlite:{}", file.display()), file: Some(file), database: None }
            }
            Kind::Postgres => {
                let admin = postgres_admin();
                let name = format!("toolgate_scale_{slot}");
                let client = postgres_client(&admin).await;
                client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.expect("drop");
                client.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("create a database");
                let (base, _) = admin.rsplit_once('/').expect("a Postgres URL names its database");
                Target { kind, url: format!("{base}/{name}"), file: None, database: Some((admin, name)) }
            }
            Kind::Redis => {
                let url = format!("{}/{}", redis_base(), 8 + slot);
                let client = redis::Client::open(url.as_str()).expect("a Redis URL");
                let mut connection = client.get_multiplexed_async_connection().await.expect("Redis");
                let _: () = redis::cmd("FLUSHDB").query_async(&mut connection).await.expect("FLUSHDB");
                Target { kind, url, file: None, database: None }
            }
        }
    }

    /// The store, opened in this process (SQLite: only while no server has the file).
    pub(crate) async fn open(&self) -> Arc<dyn FlowStore> {
        match self.kind {
            Kind::Sqlite => Arc::new(SqliteStore::open(self.file.as_ref().unwrap()).expect("the SQLite file")),
            Kind::Postgres => Arc::new(PostgresStore::connect(&self.url).await.expect("Postgres")),
            Kind::Redis => Arc::new(RedisStore::connect(&self.url).await.expect("Redis")),
        }
    }

    /// A SQL session on the Postgres database (`None` for the other stores).
    pub(crate) async fn postgres(&self) -> Option<tokio_postgres::Client> {
        if self.kind != Kind::Postgres {
            return None;
        }
        Some(postgres_client(&self.url).await)
    }

    /// The store's size: the SQLite file with its write-ahead log, the Postgres database,
    /// or (Redis, whose databases share one memory) the server's `used_memory`.
    pub(crate) async fn size_bytes(&self) -> u64 {
        match self.kind {
            Kind::Sqlite => {
                let file = self.file.as_ref().unwrap();
                let len =
                    |suffix: &str| std::fs::metadata(format!("{}{suffix}", file.display())).map_or(0, |m| m.len());
                len("") + len("-wal")
            }
            Kind::Postgres => {
                let client = postgres_client(&self.url).await;
                let row = client.query_one("SELECT pg_database_size(current_database())", &[]).await.expect("size");
                row.get::<_, i64>(0) as u64
            }
            Kind::Redis => {
                let client = redis::Client::open(self.url.as_str()).expect("a Redis URL");
                let mut connection = client.get_multiplexed_async_connection().await.expect("Redis");
                let info: String = redis::cmd("INFO").arg("memory").query_async(&mut connection).await.expect("INFO");
                info.lines()
                    .find_map(|line| line.strip_prefix("used_memory:"))
                    .and_then(|n| n.trim().parse().ok())
                    .expect("used_memory")
            }
        }
    }

    /// Removes the store (the Postgres database; the SQLite file goes with its directory).
    pub(crate) async fn drop_store(self) {
        if let Some((admin, name)) = self.database {
            let client = postgres_client(&admin).await;
            let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        }
        if self.kind == Kind::Redis {
            let client = redis::Client::open(self.url.as_str()).expect("a Redis URL");
            if let Ok(mut connection) = client.get_multiplexed_async_connection().await {
                let _: Result<(), _> = redis::cmd("FLUSHDB").query_async(&mut connection).await;
            }
        }
    }
}
