//! [`open`]: a store by URL, through the one table of schemes ([`SCHEMES`]).
//!
//! Adding a backend is its folder (with an `open.rs` whose `open` is an [`OpenFn`]) and
//! one line here. The command line (`--store`, `TOOLGATE_STORE`) and
//! [`ServerBuilder::store_url`](crate::ServerBuilder::store_url) both open stores here.

use super::options::{OpenFn, OpenStoreError, Opened, StoreOptions};

/// How a URL names a backend.
enum Form {
    /// The URL is this, whole (`memory`).
    Whole(&'static str),
    /// The URL begins with this (`redis://`).
    Begins(&'static str),
    /// The URL begins with this and goes on (`sqlite:` and a path).
    BeginsAndMore(&'static str),
}

/// One line of the table: the backend a URL's form names.
struct Scheme {
    /// The form as an error lists it (`sqlite:PATH`).
    shown: &'static str,
    /// The URLs it answers.
    forms: &'static [Form],
    /// Its `open`; `None` in a build without it, which `missing` names.
    open: Option<OpenFn>,
    /// What a build without it lacks (the store, and the feature that brings it).
    missing: &'static str,
}

/// A backend's `open` in a build with `$feature`, `None` in one without.
macro_rules! with_feature {
    ($feature:literal, $open:path) => {{
        #[cfg(feature = $feature)]
        let open: Option<OpenFn> = Some($open);
        #[cfg(not(feature = $feature))]
        let open: Option<OpenFn> = None;
        open
    }};
}

/// The one table of schemes, in the order an error lists them.
const SCHEMES: &[Scheme] = &[
    Scheme {
        shown: "sqlite:PATH",
        forms: &[Form::BeginsAndMore("sqlite:")],
        open: Some(super::sqlite::open),
        missing: "",
    },
    Scheme {
        shown: "redis://HOST:PORT/DB",
        forms: &[Form::Begins("redis://"), Form::Begins("rediss://")],
        open: with_feature!("redis", super::redis::open),
        missing: "Redis (toolgate's `redis` feature)",
    },
    Scheme {
        shown: "postgres://USER@HOST:PORT/DB",
        forms: &[Form::Begins("postgres://"), Form::Begins("postgresql://")],
        open: with_feature!("postgres", super::postgres::open),
        missing: "Postgres (toolgate's `postgres` feature)",
    },
    Scheme { shown: "memory", forms: &[Form::Whole("memory")], open: Some(super::memory::open), missing: "" },
];

/// Opens the store `url` names — `sqlite:PATH`, `redis://HOST:PORT/DB` (`rediss://` for
/// TLS), `postgres://USER@HOST:PORT/DB` (or `postgresql://`), or `memory` — as `options`
/// say. A shared store is reached (and its schema migrated) now; a SQLite file is only
/// named ([`Opened::File`]), to be opened by whoever holds it once nothing else stops its
/// start.
pub async fn open(url: &str, options: &StoreOptions) -> Result<Opened, OpenStoreError> {
    let answers = |form: &Form| match *form {
        Form::Whole(whole) => url == whole,
        Form::Begins(begins) => url.starts_with(begins),
        Form::BeginsAndMore(begins) => url.starts_with(begins) && url.len() > begins.len(),
    };
    let Some(scheme) = SCHEMES.iter().find(|scheme| scheme.forms.iter().any(answers)) else {
        return Err(OpenStoreError::UnknownScheme(known()));
    };
    match scheme.open {
        Some(open) => open(url, options).await,
        None => Err(OpenStoreError::NotBuilt(scheme.missing.to_string())),
    }
}

/// The forms of the table, as an error lists them: `` `a`, `b` or `c` ``.
fn known() -> String {
    let shown: Vec<String> = SCHEMES.iter().map(|scheme| format!("`{}`", scheme.shown)).collect();
    match shown.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_url_of_no_scheme_lists_the_table() {
        let error = open("nowhere", &StoreOptions::default()).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "a store is `sqlite:PATH`, `redis://HOST:PORT/DB`, `postgres://USER@HOST:PORT/DB` or `memory`"
        );
        // A scheme's prefix alone names no file.
        assert!(matches!(open("sqlite:", &StoreOptions::default()).await, Err(OpenStoreError::UnknownScheme(_))));
    }

    #[tokio::test]
    async fn memory_and_sqlite_open_through_the_table() {
        let options = StoreOptions::default();
        assert!(matches!(open("memory", &options).await, Ok(Opened::Store(_))));
        match open("sqlite:some/where.db", &options).await {
            Ok(Opened::File(path)) => assert_eq!(path, std::path::Path::new("some/where.db")),
            other => panic!("{other:?}"),
        }
    }
}
