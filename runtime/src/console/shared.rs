//! What the console's pages share: the [`Console`] they show, and the answers every page
//! may give (a malformed query, the diagram).

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::server::Server;

/// What the console's handlers share: the server they show.
pub(crate) struct Console {
    pub(super) server: Server,
    /// The diagram, drawn once: the machines do not change while the server runs.
    pub(super) diagram: String,
}

/// The answer to a malformed query: 400 with what to send, in the console's words (never
/// the query parser's).
pub(super) fn malformed(what_to_send: &str) -> Response {
    (http::StatusCode::BAD_REQUEST, axum::Json(json!({ "error": what_to_send }))).into_response()
}

/// The diagram `describe --format svg` draws, as an image: it is never inlined in a page.
pub(super) async fn diagram_svg(State(console): State<Arc<Console>>) -> Response {
    ([(http::header::CONTENT_TYPE, "image/svg+xml")], console.diagram.clone()).into_response()
}
