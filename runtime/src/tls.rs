//! TLS for what toolgate connects to (a JWKS or webhook over https, Redis over
//! `rediss://`): rustls with the `aws-lc-rs` provider (reqwest's own), made the process's
//! default the first time a TLS client is built — so that an application that compiles
//! in a second provider still gets a working client — unless it installed one itself.

/// Makes `aws-lc-rs` the process's rustls provider if none is installed yet.
pub(crate) fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // An error means the application installed its own provider first: it is kept.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}
