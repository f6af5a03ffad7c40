//! How a one-time code reaches the person who must confirm: [`OtpSender`] delivers a code
//! the server generated ([`OutboxSender`] for development, [`WebhookSender`] to a service
//! of yours), or [`TotpSecrets`] checks the code an authenticator app shows.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Mutex;

use serde::Serialize;

use crate::auth::Principal;

/// One code to deliver. It is a secret: a sender must not log it.
#[derive(Clone, Serialize)]
pub struct OtpDelivery {
    /// The challenge the code confirms.
    pub challenge_id: String,
    /// The code.
    pub otp: String,
    /// Who must confirm (the principal's subject).
    pub principal: String,
    /// The principal's tenant, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The tool whose call is being confirmed.
    pub tool: String,
    /// When the challenge expires, RFC 3339.
    pub expires_at: String,
}

/// Shows the challenge, never the code.
impl std::fmt::Debug for OtpDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtpDelivery")
            .field("challenge_id", &self.challenge_id)
            .field("principal", &self.principal)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

/// Why a code could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the one-time code could not be delivered: {0}")]
pub struct OtpError(pub String);

/// The future an [`OtpSender`] returns.
pub type OtpFuture<'a> = Pin<Box<dyn Future<Output = Result<(), OtpError>> + Send + 'a>>;

/// Delivers one-time codes to the person behind a principal, out of the model's reach:
/// SMS, e-mail, a push notification — a channel the model cannot read.
pub trait OtpSender: Send + Sync + 'static {
    /// The channel's name, as the model is told (`sms`, `email`, `outbox`).
    fn channel(&self) -> &str;

    /// Delivers `delivery.otp` for `delivery.challenge_id`.
    fn send<'a>(&'a self, delivery: &'a OtpDelivery) -> OtpFuture<'a>;
}

/// Development only: appends each code as one JSON line (`challenge_id`, `otp`,
/// `principal`, `tool`, `expires_at`) to a file, where a developer or a test reads it. The
/// file holds live codes: never use it in production.
#[derive(Debug)]
pub struct OutboxSender {
    path: PathBuf,
    /// One writer at a time: lines never interleave.
    lock: Mutex<()>,
}

impl OutboxSender {
    /// Appends codes to `path` (created if missing).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), lock: Mutex::new(()) }
    }
}

impl OtpSender for OutboxSender {
    fn channel(&self) -> &str {
        "outbox"
    }

    fn send<'a>(&'a self, delivery: &'a OtpDelivery) -> OtpFuture<'a> {
        let result = (|| {
            let mut line = serde_json::to_string(delivery).map_err(|e| OtpError(e.to_string()))?;
            line.push('\n');
            let _one_writer = self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| OtpError(format!("cannot open the outbox: {e}")))?;
            file.write_all(line.as_bytes()).map_err(|e| OtpError(format!("cannot write the outbox: {e}")))
        })();
        Box::pin(async move { result })
    }
}

/// POSTs each code as JSON (the fields of [`OtpDelivery`]) to a URL of yours, which
/// forwards it to the person (SMS, e-mail…); any 2xx answer counts as delivered. Plain
/// HTTP unless toolgate is built with the `webhook-tls` feature.
#[cfg(feature = "webhook")]
#[derive(Debug, Clone)]
pub struct WebhookSender {
    url: String,
    channel: String,
    client: reqwest::Client,
}

#[cfg(feature = "webhook")]
impl WebhookSender {
    /// Posts codes to `url`; the model is told they went by `channel` (`sms`, `email`).
    pub fn new(url: impl Into<String>, channel: impl Into<String>) -> Self {
        #[cfg(feature = "tls")]
        crate::tls::install_crypto_provider();
        let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build().unwrap_or_default();
        Self { url: url.into(), channel: channel.into(), client }
    }
}

#[cfg(feature = "webhook")]
impl OtpSender for WebhookSender {
    fn channel(&self) -> &str {
        &self.channel
    }

    fn send<'a>(&'a self, delivery: &'a OtpDelivery) -> OtpFuture<'a> {
        Box::pin(async move {
            let response = self
                .client
                .post(&self.url)
                .json(delivery)
                .send()
                .await
                .map_err(|e| OtpError(format!("the webhook did not answer: {}", e.without_url())))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(OtpError(format!("the webhook answered {}", response.status())))
            }
        })
    }
}

/// TOTP (RFC 6238) secrets by principal: the person confirms with the six digits their
/// authenticator app shows, so no code travels at all. SHA-1, 6 digits, 30-second steps,
/// one step of clock skew either way (what authenticator apps use).
#[derive(Default, Clone)]
pub struct TotpSecrets {
    by_principal: HashMap<String, Vec<u8>>,
}

impl TotpSecrets {
    /// No secrets yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `principal`'s raw secret (at least 16 bytes; the base32 text an app was given
    /// decodes to it).
    pub fn secret(mut self, principal: &Principal, secret: impl Into<Vec<u8>>) -> Self {
        self.by_principal.insert(principal.key(), secret.into());
        self
    }

    /// Whether `code` is `principal`'s current code (within one step of skew).
    pub(crate) fn check(&self, principal: &Principal, code: &str, now_s: u64) -> bool {
        let Some(secret) = self.by_principal.get(&principal.key()) else { return false };
        let totp = totp_rs::Builder::new()
            .with_algorithm(totp_rs::Algorithm::SHA1)
            .with_digits(6)
            .with_skew(1)
            .with_step_duration(30)
            .with_secret(secret.clone())
            .build();
        totp.is_ok_and(|totp| totp.check(code, now_s).is_some())
    }

    /// Whether `principal` has a secret.
    pub(crate) fn knows(&self, principal: &Principal) -> bool {
        self.by_principal.contains_key(&principal.key())
    }
}

/// Shows how many principals, never a secret.
impl std::fmt::Debug for TotpSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TotpSecrets").field("principals", &self.by_principal.len()).finish()
    }
}
