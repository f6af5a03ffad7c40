//! Entry points for the fuzz targets in `fuzz/` (feature `fuzz`; not a public API): each
//! takes untrusted bytes as a client would send them and asserts what must hold — no
//! panic, work bounded by the input's size, and no tampered token accepted.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::Value;

use crate::arguments::ArgumentCheck;
use crate::flow::HandleSigner;

/// The wire check: any bytes get an answer, and duplicate detection compares at most a
/// few names per byte (a linear scan per member would be quadratic).
pub fn wire(bytes: &[u8]) {
    let (_outcome, comparisons) = crate::server::check_counting(bytes);
    assert!(comparisons <= 3 * bytes.len() + 64, "{comparisons} comparisons for {} bytes", bytes.len());
}

/// Arguments with every custom type, as a tool's input schema declares them.
#[derive(serde::Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is used
struct Typed {
    /// A key with one spelling.
    #[schemars(pattern(r"^INV-[1-9][0-9]{0,8}$"))]
    id: String,
    when: crate::types::DateTime,
    day: Option<crate::types::Date>,
    price: crate::types::Money,
    lines: Vec<crate::types::Money>,
    stay: Option<crate::types::Count<crate::types::Nights>>,
    length: Option<crate::types::Duration>,
    zone: Option<crate::types::TimeZone>,
}

fn typed_check() -> &'static ArgumentCheck {
    static CHECK: OnceLock<ArgumentCheck> = OnceLock::new();
    CHECK.get_or_init(|| {
        let mut schema = serde_json::to_value(schemars::schema_for!(Typed)).expect("a schema");
        schema["unevaluatedProperties"] = Value::Bool(false);
        ArgumentCheck::new(schema).expect("a valid schema")
    })
}

/// The argument check with the custom types: any JSON gets a verdict; a refusal lists at
/// most twenty fields, says so in words (no serde text), and has its `code`.
pub fn arguments(bytes: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else { return };
    if let Err(error) = typed_check().check(&value) {
        let structured = error.to_structured();
        assert_eq!(structured["code"], "INVALID_ARGUMENT", "{structured}");
        assert!(structured["errors"].as_array().is_some_and(|e| !e.is_empty() && e.len() <= 20), "{structured}");
        let text = structured.to_string();
        assert!(!text.contains("deserialize") && !text.contains("invalid type:"), "{text}");
    }
}

fn signer() -> &'static HandleSigner {
    static SIGNER: OnceLock<HandleSigner> = OnceLock::new();
    SIGNER.get_or_init(|| HandleSigner::new(&[7; 32], std::time::Duration::from_secs(3600)).expect("a key"))
}

/// `bytes` applied to `token`: each pair (position, value) XORed in, or, past the pairs,
/// the rest appended.
fn tampered(token: &str, bytes: &[u8]) -> Option<String> {
    let mut out = token.as_bytes().to_vec();
    for pair in bytes.chunks(2) {
        match pair {
            [at, value] if !out.is_empty() => {
                let at = *at as usize % out.len();
                out[at] ^= value;
            }
            rest => out.extend_from_slice(rest),
        }
    }
    String::from_utf8(out).ok()
}

/// State handles: a handle changed in any way never verifies, nor does any other text.
pub fn handle(bytes: &[u8]) {
    let signer = signer();
    let far = crate::store::now_ms() + 3_600_000;
    let valid = signer.mint("flow-1", far, None);
    if let Ok(text) = std::str::from_utf8(bytes) {
        assert!(text == valid || signer.verify(text, 0, None).is_err(), "forged: {text}");
    }
    if let Some(changed) = tampered(&valid, bytes) {
        assert!(changed == valid || signer.verify(&changed, 0, None).is_err(), "tampered: {changed}");
    }
}

/// Sealed `requestState`s: a state changed in any way never opens, for its call or another.
pub fn request_state(bytes: &[u8]) {
    let signer = signer();
    let call = "digest-of-a-call".to_string();
    let answered = std::collections::BTreeMap::from([("q".to_string(), Value::Bool(true))]);
    let valid = crate::input::seal(signer, call.clone(), answered);
    if let Ok(text) = std::str::from_utf8(bytes) {
        assert!(text == valid || crate::input::open(signer, text, &call).is_none(), "forged: {text}");
    }
    if let Some(changed) = tampered(&valid, bytes) {
        assert!(changed == valid || crate::input::open(signer, &changed, &call).is_none(), "tampered: {changed}");
    }
    // A handle is no request state, and a request state no handle.
    assert!(crate::input::open(signer, &signer.mint("flow-1", u64::MAX, None), &call).is_none());
    assert!(signer.verify(&valid, 0, None).is_err());
}

/// Bearer tokens up to the signature check: an `Authorization` value is read without
/// panicking, and no token but the one signed verifies as a JWT, however changed.
#[cfg(feature = "jwt")]
pub fn bearer(bytes: &[u8]) {
    use crate::auth::Authenticator;
    const SECRET: &[u8] = b"fuzzing-secret-of-32-bytes-or-more!";
    static JWT: OnceLock<(crate::auth::JwtAuthenticator, String)> = OnceLock::new();
    let (jwt, valid) = JWT.get_or_init(|| {
        let authenticator =
            crate::auth::JwtAuthenticator::hs256("https://issuer.test", "https://mcp.test", SECRET).expect("a key");
        let claims = serde_json::json!({ "iss": "https://issuer.test", "aud": "https://mcp.test", "sub": "alice",
            "exp": 4_000_000_000u64, "tenant": "acme" });
        let key = jsonwebtoken::EncodingKey::from_secret(SECRET).expect("a key");
        let token = jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).expect("a token");
        (authenticator, token)
    });
    let _ = crate::server::front::authentication::bearer_token(bytes);
    let verifies =
        |token: &str| futures_util::FutureExt::now_or_never(jwt.authenticate(token)).is_some_and(|r| r.is_ok());
    if let Ok(text) = std::str::from_utf8(bytes) {
        assert!(text == valid || !verifies(text), "forged: {text}");
    }
    if let Some(changed) = tampered(valid, bytes) {
        assert!(changed == *valid || !verifies(&changed), "tampered: {changed}");
    }
}

/// XState JSON import: any text gets a machine or the problems found, never a panic.
pub fn xstate(bytes: &[u8]) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = crate::fsm::Machine::from_xstate_json(text);
    }
}
