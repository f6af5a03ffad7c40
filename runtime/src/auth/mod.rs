//! Who is calling: the [`Principal`] an [`Authenticator`] resolves from the credentials a
//! request presents, and how a Streamable HTTP server asks for them. The call pipeline's
//! second step (see `docs/call-pipeline.md`) refuses a tool that needs a principal, or a
//! scope, it does not have.

mod authenticator;
#[cfg(feature = "jwt")]
mod jwt;
pub(crate) mod metadata;
mod principal;

pub(crate) use authenticator::FirstOf;
pub use authenticator::{AuthError, AuthFuture, Authenticator, Roster, StaticTokens};
#[cfg(feature = "jwt")]
pub use jwt::JwtAuthenticator;
pub use principal::Principal;
