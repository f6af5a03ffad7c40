//! Signed state handles: how a conversation is named where there is no session (MCP
//! 2026-07-28, sessionless HTTP).
//!
//! A handle is `tg1.<payload>.<tag>`: the payload (base64url JSON) holds the flow's random
//! id and the handle's expiry, and room for the principal it will be bound to; the tag is
//! HMAC-SHA256 over `tg1.<payload>` with the server's key. The model can copy a handle but
//! not forge, alter or extend one, and a flow id is only ever minted by the server.

use crate::auth::Principal;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The environment variable a server reads its handle key from when none is configured.
pub const HANDLE_KEY_ENV: &str = "TOOLGATE_HANDLE_KEY";

/// The environment variable a server reads its handle keys from, comma-separated, for key
/// rotation: the first signs, every one verifies. It wins over [`HANDLE_KEY_ENV`].
pub const HANDLE_KEYS_ENV: &str = "TOOLGATE_HANDLE_KEYS";

/// The shortest key accepted, in bytes (HMAC-SHA256's output size).
pub const MIN_KEY_BYTES: usize = 32;

const PREFIX: &str = "tg1";

/// What a handle asserts once its tag is verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Claims {
    /// The flow's id, minted by the server.
    #[serde(rename = "f")]
    flow: String,
    /// Expiry, milliseconds since the Unix epoch.
    #[serde(rename = "e")]
    expires_at_ms: u64,
    /// The principal the flow belongs to (its [`Principal::digest`]), if one started it.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
}

/// Why a handle was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandleError {
    /// Not a handle this server signed: forged, altered, truncated, or another key's.
    Invalid,
    /// Signed by this server, but past its expiry.
    Expired,
}

/// A verified handle: the flow it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verified {
    pub(crate) flow_id: String,
}

/// Mints handles with one key and verifies them with that key and any older ones still
/// accepted (key rotation).
#[derive(Clone)]
pub struct HandleSigner {
    /// The first signs; all verify.
    macs: Vec<Hmac<Sha256>>,
    ttl: Duration,
}

impl std::fmt::Debug for HandleSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleSigner").field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

/// A handle key that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a state-handle key must have at least {MIN_KEY_BYTES} bytes; this one has {0}")]
pub struct WeakKey(pub usize);

impl HandleSigner {
    /// A signer with `key` (at least [`MIN_KEY_BYTES`] bytes) whose handles live `ttl`
    /// after their last use.
    pub fn new(key: &[u8], ttl: Duration) -> Result<Self, WeakKey> {
        Self::with_keys([key], ttl)
    }

    /// A signer that signs with the first of `keys` and accepts handles signed with any of
    /// them: to rotate, put the new key first and keep the old one for one handle TTL,
    /// after which no handle it signed is alive. Every key needs [`MIN_KEY_BYTES`] bytes;
    /// an empty list is a weak key.
    pub fn with_keys<K: AsRef<[u8]>>(keys: impl IntoIterator<Item = K>, ttl: Duration) -> Result<Self, WeakKey> {
        let macs = keys
            .into_iter()
            .map(|key| {
                let key = key.as_ref();
                if key.len() < MIN_KEY_BYTES {
                    return Err(WeakKey(key.len()));
                }
                Hmac::<Sha256>::new_from_slice(key).map_err(|_| WeakKey(key.len()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if macs.is_empty() {
            return Err(WeakKey(0));
        }
        Ok(Self { macs, ttl })
    }

    /// A signer with a random key of this process: its handles mean nothing to another
    /// process or after a restart.
    pub fn ephemeral(ttl: Duration) -> Self {
        let mut key = [0u8; MIN_KEY_BYTES];
        // Without an OS random source there is no safe key to sign with at all.
        getrandom::fill(&mut key).expect("the OS random number generator is unavailable");
        Self::new(&key, ttl).expect("a 32-byte key is long enough")
    }

    /// How long a handle lives after it was minted.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// A fresh random flow id.
    pub(crate) fn new_flow_id() -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }

    /// When a flow used at `now_ms` expires: one TTL later.
    pub(crate) fn expiry_from(&self, now_ms: u64) -> u64 {
        now_ms.saturating_add(self.ttl.as_millis() as u64)
    }

    /// A handle for `flow_id` that expires at `expires_at_ms` (its flow's expiry), bound to
    /// `principal`: only that principal (or, without one, only unauthenticated callers)
    /// can present it.
    pub(crate) fn mint(&self, flow_id: &str, expires_at_ms: u64, principal: Option<&Principal>) -> String {
        let claims = Claims { flow: flow_id.to_string(), expires_at_ms, principal: principal.map(Principal::digest) };
        self.seal(PREFIX, &serde_json::to_vec(&claims).expect("claims serialize"))
    }

    /// Checks the tag first (in constant time), then that `principal` is the one the handle
    /// was minted for (another principal's handle is as invalid as a forged one), then the
    /// expiry.
    pub(crate) fn verify(
        &self,
        handle: &str,
        now_ms: u64,
        principal: Option<&Principal>,
    ) -> Result<Verified, HandleError> {
        let bytes = self.open(PREFIX, handle).ok_or(HandleError::Invalid)?;
        let claims: Claims = serde_json::from_slice(&bytes).map_err(|_| HandleError::Invalid)?;
        if claims.principal != principal.map(Principal::digest) {
            return Err(HandleError::Invalid);
        }
        if claims.expires_at_ms <= now_ms {
            return Err(HandleError::Expired);
        }
        Ok(Verified { flow_id: claims.flow })
    }

    /// `payload` signed with the signing key for `purpose` (a prefix naming what the token
    /// is, `tg1` for a handle: a token sealed for one purpose never opens as another).
    /// Signed, not encrypted: the payload is readable.
    pub(crate) fn seal(&self, purpose: &str, payload: &[u8]) -> String {
        let signed = format!("{purpose}.{}", URL_SAFE_NO_PAD.encode(payload));
        let tag = URL_SAFE_NO_PAD.encode(self.tag(&signed));
        format!("{signed}.{tag}")
    }

    /// The payload of a token [`seal`](Self::seal)ed for `purpose` by any accepted key;
    /// `None` for anything else (forged, altered, another purpose's).
    pub(crate) fn open(&self, purpose: &str, token: &str) -> Option<Vec<u8>> {
        let (signed, tag) = token.rsplit_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let matched = self.macs.iter().fold(false, |matched, mac| {
            let mut mac = mac.clone();
            mac.update(signed.as_bytes());
            mac.verify_slice(&tag).is_ok() | matched
        });
        let payload = signed.strip_prefix(purpose)?.strip_prefix('.')?;
        if !matched {
            return None;
        }
        URL_SAFE_NO_PAD.decode(payload).ok()
    }

    fn tag(&self, signed: &str) -> Vec<u8> {
        let mut mac = self.macs[0].clone();
        mac.update(signed.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_keys_verify_until_they_are_dropped() {
        let ttl = Duration::from_secs(60);
        let old = HandleSigner::new(&[1; 32], ttl).unwrap();
        let rotated = HandleSigner::with_keys([[2; 32], [1; 32]], ttl).unwrap();
        let dropped = HandleSigner::with_keys([[2; 32]], ttl).unwrap();
        let before = old.mint("abc", NOW + 60_000, None);
        assert_eq!(rotated.verify(&before, NOW, None), Ok(Verified { flow_id: "abc".into() }), "the previous key");
        assert_eq!(dropped.verify(&before, NOW, None), Err(HandleError::Invalid), "a dropped key");
        let after = rotated.mint("abc", NOW + 60_000, None);
        assert_eq!(dropped.verify(&after, NOW, None), Ok(Verified { flow_id: "abc".into() }), "the first key signs");
        assert_eq!(old.verify(&after, NOW, None), Err(HandleError::Invalid));
        assert!(HandleSigner::with_keys(Vec::<Vec<u8>>::new(), ttl).is_err());
        assert!(HandleSigner::with_keys([vec![2; 32], vec![1; 31]], ttl).is_err(), "every key is long enough");
    }

    #[test]
    fn a_handle_serves_only_the_principal_it_was_minted_for() {
        let (alice, bob) = (Principal::new("alice").with_tenant("a"), Principal::new("bob").with_tenant("a"));
        let handle = signer(1).mint("abc", NOW + 60_000, Some(&alice));
        assert_eq!(signer(1).verify(&handle, NOW, Some(&alice)), Ok(Verified { flow_id: "abc".into() }));
        assert_eq!(signer(1).verify(&handle, NOW, Some(&bob)), Err(HandleError::Invalid));
        assert_eq!(signer(1).verify(&handle, NOW, None), Err(HandleError::Invalid));
        let anonymous = signer(1).mint("abc", NOW + 60_000, None);
        assert_eq!(signer(1).verify(&anonymous, NOW, Some(&alice)), Err(HandleError::Invalid));
        // The same subject in another tenant is another principal.
        let other_tenant = Principal::new("alice").with_tenant("b");
        assert_eq!(signer(1).verify(&handle, NOW, Some(&other_tenant)), Err(HandleError::Invalid));
    }

    const NOW: u64 = 1_800_000_000_000;

    fn signer(key: u8) -> HandleSigner {
        HandleSigner::new(&[key; 32], Duration::from_secs(60)).unwrap()
    }

    #[test]
    fn a_minted_handle_verifies_until_it_expires() {
        let expires = signer(1).expiry_from(NOW);
        assert_eq!(expires, NOW + 60_000);
        let handle = signer(1).mint("abc", expires, None);
        assert_eq!(signer(1).verify(&handle, NOW + 59_999, None), Ok(Verified { flow_id: "abc".into() }));
        assert_eq!(signer(1).verify(&handle, NOW + 60_000, None), Err(HandleError::Expired));
    }

    #[test]
    fn forged_altered_and_foreign_handles_are_invalid() {
        let handle = signer(1).mint("abc", NOW + 60_000, None);
        assert_eq!(signer(2).verify(&handle, NOW, None), Err(HandleError::Invalid), "another key's handle");
        for at in [4, handle.len() / 2, handle.len() - 2] {
            let mut bytes = handle.clone().into_bytes();
            bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap();
            assert_eq!(signer(1).verify(&altered, NOW, None), Err(HandleError::Invalid), "altered at {at}");
        }
        // A longer expiry with the old tag: the payload is signed.
        let claims = Claims { flow: "abc".into(), expires_at_ms: u64::MAX, principal: None };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
        let tag = handle.rsplit_once('.').unwrap().1;
        assert_eq!(signer(1).verify(&format!("tg1.{payload}.{tag}"), NOW, None), Err(HandleError::Invalid));
        for junk in ["", "abc", "tg1..", "tg1.x.y", "....", "tg1.ééé.ééé"] {
            assert_eq!(signer(1).verify(junk, NOW, None), Err(HandleError::Invalid), "{junk:?}");
        }
    }

    #[test]
    fn short_keys_are_refused() {
        assert_eq!(HandleSigner::new(&[0; 16], Duration::from_secs(1)).unwrap_err(), WeakKey(16));
    }
}
