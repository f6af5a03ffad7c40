//! [`Server`]: the handle a user holds — cheap to clone — and what it offers: connections,
//! the registry, the audit, prompts and resources at run time, the console and metrics.

use std::sync::Arc;

use super::accept;
use super::{Connection, ServeError, Shared};
use crate::registry::Registry;

/// A toolgate MCP server: the registry of tools, the machines, and the flow store.
///
/// Cheap to clone; clones serve the same flows.
#[derive(Clone)]
pub struct Server {
    pub(super) shared: Arc<Shared>,
}

impl crate::Ctx {
    /// The server serving the call: to offer another prompt, or to tell listening clients
    /// that something changed ([`Server::resource_updated`]).
    pub fn server(&self) -> Option<Server> {
        let host = self.engine.upgrade()?.host()?;
        Some(Server::from_shared(host.downcast::<Shared>().ok()?))
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.shared.implementation.name)
            .field("tools", &self.shared.engine.registry.tool_names().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// With a store other replicas write too: tells this process's sessions of the
    /// instances those replicas move (their `list_changed`), for as long as the server
    /// lives. Needs a Tokio runtime; built outside one, the server hears only its own
    /// sessions' commits.
    pub(super) fn follow_other_replicas(&self) {
        if let Some(replicas) = self.shared.engine.store.capabilities().replicas {
            let commits = replicas.commits();
            self.follow(commits, "missed commits of other replicas", |shared, key| shared.tell_watchers(&key, None));
        }
    }

    /// Tells this process's sessions, listeners and the engine's audit sinks of the
    /// transitions time fires here (another replica's reach them as its commits do).
    pub(super) fn follow_timers(&self) {
        self.follow(self.shared.engine.timers.subscribe(), "missed transitions time fired", |shared, commit| {
            shared.engine.record_timer(&commit);
            shared.tell_watchers(&commit.key, None);
        });
    }

    /// Hands what `feed` brings to `tell`, for as long as the server lives, on the current
    /// Tokio runtime (none: nothing is followed); `lagged` is logged when some was missed.
    fn follow<T: Clone + Send + 'static>(
        &self,
        mut feed: tokio::sync::broadcast::Receiver<T>,
        lagged: &'static str,
        tell: fn(&Arc<Shared>, T),
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let shared = Arc::downgrade(&self.shared);
        runtime.spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match feed.recv().await {
                    Ok(item) => {
                        let Some(shared) = shared.upgrade() else { return };
                        tell(&shared, item);
                    }
                    Err(RecvError::Lagged(missed)) => tracing::warn!(missed, "{lagged}"),
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    pub(crate) fn from_shared(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// A handler for one new client connection the caller keeps open (stdio-like), with
    /// its own flow, removed when the connection ends.
    pub fn connection(&self) -> Connection {
        Connection::new(self.shared.clone(), true)
    }

    /// A handler for Streamable HTTP: the session's, if an `initialize` creates one,
    /// else one sessionless request's.
    pub(crate) fn http_connection(&self) -> Connection {
        Connection::new(self.shared.clone(), false)
    }

    /// The checked registry this server serves.
    pub fn registry(&self) -> &Registry {
        &self.shared.engine.registry
    }

    /// The calls this process refused in the last day.
    pub(crate) fn refusals(&self) -> &crate::telemetry::Refusals {
        &self.shared.engine.refusals
    }

    /// The tasks this process started lately (the console's tasks page).
    pub(crate) fn task_log(&self) -> &crate::telemetry::TaskLog {
        &self.shared.engine.task_log
    }

    /// The instances this process dead-lettered an effect of lately (the console's effects
    /// page).
    pub(crate) fn dead_letters(&self) -> &crate::telemetry::DeadLetterLog {
        &self.shared.engine.dead_letters
    }

    /// How the effects are tried (the console's effects page says "2 of 5 attempts").
    pub(crate) fn effect_policy(&self) -> crate::effect::EffectPolicy {
        self.shared.engine.effects.policy
    }

    /// The store this server's flows and instances live in.
    pub(crate) fn store(&self) -> Arc<dyn crate::store::FlowStore> {
        self.shared.engine.store.clone()
    }

    /// Every tool graded against the routing checklist (what `audit` prints), its scopes
    /// against the principals this server can list (its tokens, its stdio principal).
    pub fn audit(&self) -> crate::inspect::Audit {
        let roster = self.shared.auth.roster(&[]);
        crate::inspect::audit(&self.shared.engine.registry, &roster)
    }

    /// Tells the clients listening for it (`subscriptions/listen` with `toolsListChanged`,
    /// MCP 2026-07-28) that the tool list changed, for a server whose tools change while it
    /// runs. (A session's own list, which follows its conversation and instances, tells its
    /// client by itself.)
    pub async fn tools_changed(&self) {
        self.shared.listeners.tools_changed().await;
    }

    /// Offers another prompt while the server runs (replacing one of the same name), and
    /// tells the clients that listen for it (`notifications/prompts/list_changed`).
    pub async fn add_prompt(&self, prompt: crate::prompt::Prompt) {
        {
            let mut prompts = self.shared.catalog.prompts.write().unwrap_or_else(|p| p.into_inner());
            prompts.retain(|p| p.name() != prompt.name());
            prompts.push(prompt);
        }
        self.prompts_changed().await;
    }

    /// Stops offering the prompt `name`, telling listening clients; whether it was offered.
    pub async fn remove_prompt(&self, name: &str) -> bool {
        let removed = {
            let mut prompts = self.shared.catalog.prompts.write().unwrap_or_else(|p| p.into_inner());
            let before = prompts.len();
            prompts.retain(|p| p.name() != name);
            prompts.len() != before
        };
        if removed {
            self.prompts_changed().await;
        }
        removed
    }

    /// Offers another resource while the server runs (replacing one at the same URI), and
    /// tells the clients that listen for it (`notifications/resources/list_changed`).
    pub async fn add_resource(&self, resource: crate::resource::Resource) {
        {
            let mut resources = self.shared.catalog.resources.write().unwrap_or_else(|p| p.into_inner());
            resources.retain(|r| r.uri() != resource.uri());
            resources.push(Arc::new(resource));
        }
        self.resources_changed().await;
    }

    /// Stops offering the resource at `uri`, telling listening clients; whether it was
    /// offered.
    pub async fn remove_resource(&self, uri: &str) -> bool {
        let removed = {
            let mut resources = self.shared.catalog.resources.write().unwrap_or_else(|p| p.into_inner());
            let before = resources.len();
            resources.retain(|r| r.uri() != uri);
            resources.len() != before
        };
        if removed {
            self.resources_changed().await;
        }
        removed
    }

    /// Tells the clients subscribed to `uri` (a 2025-11-25 session's `resources/subscribe`,
    /// a 2026-07-28 `subscriptions/listen`) that its content changed. (The resources of a
    /// template bound to instances are told by the commits that move them.)
    pub async fn resource_updated(&self, uri: &str) {
        for session in self.shared.open_sessions() {
            session.resource_updated(uri.to_string()).await;
        }
        self.shared.listeners.resource_updated(uri).await;
    }

    /// Tells every session and listening client that the prompt list changed.
    async fn prompts_changed(&self) {
        let changed = rmcp::model::PromptListChangedNotification::default();
        for session in self.shared.open_sessions() {
            session.notify(rmcp::model::ServerNotification::PromptListChangedNotification(changed.clone())).await;
        }
        self.shared.listeners.prompts_changed().await;
    }

    /// Tells every session and listening client that the resource list changed.
    async fn resources_changed(&self) {
        let changed = rmcp::model::ResourceListChangedNotification::default();
        for session in self.shared.open_sessions() {
            session.notify(rmcp::model::ServerNotification::ResourceListChangedNotification(changed.clone())).await;
        }
        self.shared.listeners.resources_changed().await;
    }

    /// An axum router serving `metrics` at `/metrics` (the Prometheus text format), with
    /// this server's live sessions and open listening streams, and the store's live flows
    /// and instances, measured at each scrape.
    /// What `--metrics ADDR` serves.
    pub fn metrics_router(&self, metrics: &crate::telemetry::PrometheusMetrics) -> axum::Router {
        let (server, metrics) = (self.clone(), metrics.clone());
        axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let (server, metrics) = (server.clone(), metrics.clone());
                async move {
                    let names = crate::telemetry::names::SESSIONS;
                    ::metrics::gauge!(names).set(server.shared.open_sessions().len() as f64);
                    ::metrics::gauge!(crate::telemetry::names::LISTENING_STREAMS)
                        .set(server.listening_streams() as f64);
                    let counted = match server.shared.engine.store.capabilities().counts {
                        Some(counts) => counts.live().await.map(Some),
                        None => Ok(None),
                    };
                    match counted {
                        Ok(Some(live)) => {
                            ::metrics::gauge!(crate::telemetry::names::LIVE_FLOWS).set(live.flows as f64);
                            ::metrics::gauge!(crate::telemetry::names::LIVE_INSTANCES).set(live.instances as f64);
                        }
                        Ok(None) => {}
                        Err(error) => tracing::warn!(%error, "the store could not count its live records"),
                    }
                    ([(::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], metrics.render())
                }
            }),
        )
    }

    /// Creates the tables of yours (`ServerBuilder::tables`) before the first call is
    /// served, so that a query of them — a report, another program — finds them from the
    /// start, not only after the first call that writes (a call that finds them missing
    /// still creates them).
    pub(super) async fn create_your_tables(&self) -> Result<(), ServeError> {
        let engine = &self.shared.engine;
        let Some(tables) = &engine.tables else { return Ok(()) };
        let created = tables.create(engine.store.as_ref()).await;
        created.map_err(|error| ServeError::Store(format!("the tables of yours could not be created: {error}")))
    }

    /// Serves [`Server::metrics_router`] on `listener`, with `/healthz` and `/readyz`
    /// beside it, until the server stops (SIGTERM, SIGINT, [`Server::shutdown`]), through
    /// the accept path every listener shares: few connections (8 from one address, 64 in all), the
    /// read timeout of [`ServerBuilder::request_read_timeout`](crate::ServerBuilder::request_read_timeout), and the `Host`s of
    /// [`ServerBuilder::allowed_hosts`](crate::ServerBuilder::allowed_hosts) — and also any IP address, or no `Host` at all,
    /// which is what a scraper or a probe sends (DNS rebinding needs a name).
    pub async fn serve_metrics(
        &self,
        listener: tokio::net::TcpListener,
        metrics: &crate::telemetry::PrometheusMetrics,
    ) -> Result<(), ServeError> {
        let router = self.metrics_router(metrics);
        let (admission, lifecycle) = (self.shared.http.probe_admission(), self.shared.lifecycle.clone());
        let probes = Some(super::probes::probes(self.shared.clone()));
        let served = accept::serve(listener, router, admission, lifecycle, probes);
        let (served, ()) = tokio::join!(served, self.begin_on(super::terminate_signal()));
        served?;
        Ok(())
    }

    /// Serves the operator's console ([`Server::console_router`]) on `listener` until the
    /// server stops (SIGTERM, SIGINT, [`Server::shutdown`]), through the accept path every listener shares: few connections (32 from one
    /// address, 256 in all, so the console never holds the descriptors MCP calls need), the
    /// read timeout of [`ServerBuilder::request_read_timeout`](crate::ServerBuilder::request_read_timeout), and only the `Host`s of
    /// [`ServerBuilder::allowed_hosts`](crate::ServerBuilder::allowed_hosts). `None` for a server without an authenticator (it
    /// has no console).
    pub async fn serve_console(&self, listener: tokio::net::TcpListener) -> Option<Result<(), ServeError>> {
        let router = self.console_router()?;
        let (admission, lifecycle) = (self.shared.http.console_admission(), self.shared.lifecycle.clone());
        let served = accept::serve(listener, router, admission, lifecycle, None);
        let (served, ()) = tokio::join!(served, self.begin_on(super::terminate_signal()));
        Some(served.map_err(ServeError::from))
    }

    /// What authenticates this server's HTTP requests, if anything does.
    pub(crate) fn authenticator(&self) -> Option<Arc<dyn crate::auth::Authenticator>> {
        self.shared.auth.authenticator.clone()
    }

    /// How many `subscriptions/listen` streams are open on this server.
    pub fn listening_streams(&self) -> usize {
        self.shared.listeners.len()
    }
}

impl Server {
    /// Begins this server's shutdown, as a SIGTERM does to [`Server::serve_http`]: `/readyz`
    /// fails at once, new requests are served for the drain delay
    /// ([`ServerBuilder::drain_delay`](super::ServerBuilder::drain_delay)), then every
    /// listener of this server stops accepting and its `serve_*` returns once the calls in
    /// flight and the tasks have ended (at most [`ServerBuilder::shutdown_grace`](super::ServerBuilder::shutdown_grace)).
    pub fn shutdown(&self) {
        self.shared.lifecycle.begin();
    }

    /// Completes when `signal` does, or when the shutdown began otherwise: then it begins
    /// it (for every listener of this server).
    pub(super) async fn begin_on(&self, signal: impl Future<Output = ()>) {
        tokio::select! {
            () = signal => self.shared.lifecycle.begin(),
            () = self.shared.lifecycle.draining() => {}
        }
    }
}
