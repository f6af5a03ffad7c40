//! The operator's console (`--console ADDR`): read-only pages, served by the server itself,
//! on a listener of its own, about what the server's agents are doing. Every address asks
//! for an operator's credentials (`access.rs`); every asset is embedded in the binary
//! (`assets.rs`), served under a strict Content-Security-Policy.
//!
//! It serves the machines' diagram (`describe`'s SVG) with the live number of instances in
//! each state (`machines.rs`), one instance found by its key (`instance.rs`), and the
//! refusals of the last minutes and hours (`refusals.rs`), and the tasks running and ended
//! lately with the timers due next (`tasks.rs`), and the effects waiting to run and
//! dead-lettered (`effects.rs`).

mod access;
mod assets;
mod effects;
mod instance;
mod machines;
mod refusals;
mod session;
mod tasks;

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

pub use access::OPERATOR_SCOPE;

use crate::server::Server;

/// What the console's handlers share: the server they show.
pub(crate) struct Console {
    server: Server,
    /// The diagram, drawn once: the machines do not change while the server runs.
    diagram: String,
}

impl Server {
    /// The operator's console, as `--console ADDR` serves it. Every address needs a bearer
    /// token of a principal with the [`OPERATOR_SCOPE`] scope, or a console session its
    /// sign-in form opened for one (in the server's store, so every replica sharing it
    /// serves the session): 401 without, 403 with another principal's. `POST /login` and
    /// `POST /logout` sign in and out, from the console's own page only.
    ///
    /// A server without an authenticator (no `--token`, `--tokens` or JWT) has no console:
    /// `None`.
    pub fn console_router(&self) -> Option<axum::Router> {
        let authenticator = self.authenticator()?;
        let diagram = crate::inspect::describe(self.registry(), crate::inspect::Format::Svg);
        let console = Arc::new(Console { server: self.clone(), diagram });
        let sign_in = Arc::new(session::SignIn::new(authenticator, self.store()));
        let pages = axum::Router::new()
            .route("/", get(assets::index))
            .route("/assets/console.js", get(assets::script))
            .route("/assets/console.css", get(assets::style))
            .route("/diagram.svg", get(diagram_svg))
            // What a browser asks for by itself: nothing to show.
            .route("/favicon.ico", get(|| async { http::StatusCode::NO_CONTENT }))
            .route("/api/machines", get(machines::machines))
            .route("/api/instance", get(instance::instance))
            .route("/api/refusals", get(refusals::refusals))
            .route("/api/tasks", get(tasks::tasks))
            .route("/api/effects", get(effects::effects))
            // Even an address that does not exist asks who is asking first.
            .fallback(|| async { http::StatusCode::NOT_FOUND })
            .layer(axum::middleware::from_fn_with_state(sign_in.clone(), session::operator_only))
            .with_state(console);
        let login = axum::Router::new()
            .route("/login", post(session::login))
            .route("/logout", post(session::logout))
            .with_state(sign_in);
        Some(pages.merge(login).layer(axum::middleware::from_fn(assets::secure_headers)))
    }
}

/// The answer to a malformed query: 400 with what to send, in the console's words (never
/// the query parser's).
fn malformed(what_to_send: &str) -> Response {
    (http::StatusCode::BAD_REQUEST, axum::Json(json!({ "error": what_to_send }))).into_response()
}

/// The diagram `describe --format svg` draws, as an image: it is never inlined in a page.
async fn diagram_svg(State(console): State<Arc<Console>>) -> Response {
    ([(http::header::CONTENT_TYPE, "image/svg+xml")], console.diagram.clone()).into_response()
}
