//! What opening a store by URL ([`open`](fn@super::open)) takes and gives: [`StoreOptions`],
//! [`Opened`], [`OpenStoreError`].

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::FlowStore;

/// How a store named by URL is opened, beyond its URL: what the command line's
/// `--lease-ttl`, `--redis-ca` and `--redis-volatile` say. Each backend reads what applies
/// to it and ignores the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreOptions {
    lease_ttl: Option<Duration>,
    redis_ca: Option<PathBuf>,
    redis_volatile: bool,
}

impl StoreOptions {
    /// Leases of a shared store (Redis, Postgres) live `ttl` unless renewed, instead of
    /// the store's default.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = Some(ttl);
        self
    }

    /// A `rediss://` store trusts only the certificate authorities in the PEM file at
    /// `path` (read only when the URL names Redis).
    pub fn redis_ca(mut self, path: impl Into<PathBuf>) -> Self {
        self.redis_ca = Some(path.into());
        self
    }

    /// A Redis that would lose acknowledged writes when it restarts is accepted instead
    /// of refused ([`RedisStoreBuilder::accept_volatile`](super::RedisStoreBuilder)).
    pub fn redis_volatile(mut self) -> Self {
        self.redis_volatile = true;
        self
    }

    /// The lease time asked for, if any.
    pub fn leases_live(&self) -> Option<Duration> {
        self.lease_ttl
    }

    /// The certificate authorities' file asked for, if any.
    pub fn redis_ca_file(&self) -> Option<&Path> {
        self.redis_ca.as_deref()
    }

    /// Whether a Redis that forgets is accepted.
    pub fn accepts_volatile_redis(&self) -> bool {
        self.redis_volatile
    }
}

/// A store [`open`](fn@super::open) opened.
#[derive(Clone)]
pub enum Opened {
    /// A store open now (a server reached, its schema migrated).
    Store(Arc<dyn FlowStore>),
    /// A SQLite file, not yet opened: whoever holds it opens it (creating and locking the
    /// file) once nothing else stops its start, as
    /// [`ServerBuilder::store_file`](crate::ServerBuilder::store_file) does.
    File(PathBuf),
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Store(_) => f.write_str("Opened::Store(..)"),
            Self::File(path) => f.debug_tuple("Opened::File").field(path).finish(),
        }
    }
}

/// Why a store named by URL could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenStoreError {
    /// The URL names no store: `0` lists the forms there are.
    #[error("a store is {0}")]
    UnknownScheme(String),
    /// The URL names a store this build was compiled without: `0` says which, and the
    /// feature that brings it.
    #[error("this server was built without {0}")]
    NotBuilt(String),
    /// The certificate authorities' file ([`StoreOptions::redis_ca`]) cannot be read.
    #[error("cannot read {}: {problem}", path.display())]
    CertificateAuthorities {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        problem: String,
    },
    /// The store cannot be reached or opened, as its backend says.
    #[error("{0}")]
    Unavailable(String),
}

/// What a backend's `open` returns: the store opened, in time.
pub(crate) type Opening<'a> = Pin<Box<dyn Future<Output = Result<Opened, OpenStoreError>> + Send + 'a>>;

/// A backend's `open`: the URL whole (its scheme included), and the options.
pub(crate) type OpenFn = for<'a> fn(&'a str, &'a StoreOptions) -> Opening<'a>;
