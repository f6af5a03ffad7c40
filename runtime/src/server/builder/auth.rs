//! Who may call, and how a call is confirmed: authenticators, the stdio principal, and
//! the confirmation channels.

use super::server_builder::ServerBuilder;
use crate::auth::{Authenticator, Principal};
use crate::confirm::{Channel, OtpSender, TotpSecrets};
use std::sync::Arc;
use std::time::Duration;

impl ServerBuilder {
    /// Resolves the `Authorization: Bearer …` token of every Streamable HTTP request to a
    /// [`Principal`] (a request whose token it refuses gets 401 with `WWW-Authenticate`).
    /// Tools that are `transactional`, require a `scope` or take a `Principal` refuse
    /// callers without one; tools requiring a scope are listed only to principals holding
    /// it.
    ///
    /// ```
    /// # use toolgate_runtime::{Principal, Server, StaticTokens};
    /// let tokens = StaticTokens::new().token("s3cret", Principal::new("clerk").with_scopes(["payments:capture"]));
    /// let builder = Server::from_registry("payments").authenticator(tokens).require_authentication();
    /// ```
    ///
    /// Given more than one (a tokens file and a JWT issuer, say), they are tried in the
    /// order given: a token one refuses as invalid goes to the next.
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        let next: Arc<dyn Authenticator> = Arc::new(authenticator);
        self.auth.authenticator = Some(match self.auth.authenticator.take() {
            Some(first) => Arc::new(crate::auth::FirstOf(first, next)),
            None => next,
        });
        self
    }

    /// Declares this server an OAuth 2.0 protected resource (RFC 9728), as the MCP
    /// authorization specification asks of servers that take tokens from an authorization
    /// server: `resource` is the MCP endpoint's absolute URL (tokens name it as their
    /// audience), `authorization_servers` the issuers. [`Server::serve_http`](crate::Server::serve_http) then serves
    /// the metadata at `/.well-known/oauth-protected-resource/mcp` (see
    /// [`Server::well_known_router`](crate::Server::well_known_router) for your own router), and every 401's
    /// `WWW-Authenticate` names it in `resource_metadata`.
    pub fn protected_resource(
        mut self,
        resource: impl Into<String>,
        authorization_servers: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let servers = authorization_servers.into_iter().map(Into::into).collect();
        self.auth.protected_resource = Some((resource.into(), servers));
        self
    }

    /// Refuses every Streamable HTTP request without credentials with 401 and a
    /// `WWW-Authenticate: Bearer` challenge, as the MCP authorization specification asks,
    /// instead of serving it anonymously. Needs an [`authenticator`](Self::authenticator).
    pub fn require_authentication(mut self) -> Self {
        self.auth.required = true;
        self
    }

    /// Who a stdio connection (or one from [`Server::connection`](crate::Server::connection)) is: stdio carries no
    /// credentials, so the deployment says.
    pub fn stdio_principal(mut self, principal: Principal) -> Self {
        self.auth.stdio_principal = Some(principal);
        self
    }

    /// A bearer token standing for the principal `subject`, in no tenant, with every scope
    /// the server's tools declare: for development and tests (`--token clerk=s3cret` on
    /// the command line). Combined with an [`authenticator`](Self::authenticator), these
    /// tokens are tried first.
    pub fn token_with_every_scope(mut self, subject: impl Into<String>, secret: impl Into<String>) -> Self {
        self.auth.every_scope_tokens.push((subject.into(), secret.into()));
        self
    }

    /// Delivers the one-time codes of `confirm`ed tools ([`OutboxSender`](crate::confirm::OutboxSender)
    /// for development, a [`WebhookSender`](crate::confirm) or your own [`OtpSender`]). A
    /// server with a confirmed tool and no channel does not start.
    pub fn otp_sender(mut self, sender: impl OtpSender) -> Self {
        self.confirmations.channel = Some(Channel::Sender(Arc::new(sender)));
        self
    }

    /// Offers the one-time codes of `confirm`ed tools on a confirmation page to clients that
    /// take URL-mode elicitation (MCP 2025-11-25 sessions and stdio): the client shows the
    /// person `url` (this server's `/confirm`, as the person's browser reaches it, e.g.
    /// `https://mcp.example.com/confirm`) with the code in its fragment, never through the
    /// model. Other clients get the code by the configured channel ([`otp_sender`](Self::otp_sender),
    /// [`totp`](Self::totp)). [`Server::serve_http`](crate::Server::serve_http) serves the page at `/confirm`.
    pub fn confirmation_page(mut self, url: impl Into<String>) -> Self {
        self.confirmations.page = Some(url.into());
        self
    }

    /// Confirms `confirm`ed tools with the TOTP code of each principal's authenticator app
    /// instead of a delivered code.
    pub fn totp(mut self, secrets: TotpSecrets) -> Self {
        self.confirmations.channel = Some(Channel::Totp(secrets));
        self
    }

    /// How long a confirmation challenge lives (default 5 minutes).
    pub fn challenge_ttl(mut self, ttl: Duration) -> Self {
        self.confirmations.ttl = ttl;
        self
    }

    /// How long a confirmation challenge lives (default 5 minutes), how many wrong codes it
    /// takes (default 5), and how long confirmations of a tool stay locked for a principal
    /// after that (default 15 minutes).
    pub fn confirmation_limits(mut self, ttl: Duration, max_attempts: u32, lock: Duration) -> Self {
        self.confirmations.ttl = ttl;
        self.confirmations.max_attempts = max_attempts.max(1);
        self.confirmations.lock = lock;
        self
    }

    /// How many confirmation challenges one principal may be issued for one tool in every
    /// `window` (default 10 in 10 minutes): past it a challenge is refused `RATE_LIMITED`
    /// until the oldest leaves the window. A desk where one manager confirms a queue of
    /// approvals raises it (`challenges_per(60, Duration::from_secs(600))`).
    pub fn challenges_per(mut self, challenges: u32, window: Duration) -> Self {
        self.confirmations.challenges = (challenges.max(1), window.max(Duration::from_secs(1)));
        self
    }

    /// Who a stdio connection is: the principal `subject`, in no tenant, with every scope
    /// the server's tools declare (`--stdio-principal NAME`).
    pub fn stdio_principal_with_every_scope(mut self, subject: impl Into<String>) -> Self {
        self.auth.stdio_every_scope = Some(subject.into());
        self
    }
}
