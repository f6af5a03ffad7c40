//! [`Server::console_router`]: the console's addresses, each behind the operator's sign-in.

use std::sync::Arc;

use axum::routing::{get, post};

use super::shared::{Console, diagram_svg};
use super::{assets, effects, instance, machines, refusals, session, tasks};
use crate::server::Server;

impl Server {
    /// The operator's console, as `--console ADDR` serves it. Every address needs a bearer
    /// token of a principal with the [`OPERATOR_SCOPE`](crate::console::OPERATOR_SCOPE) scope, or a console session its
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
