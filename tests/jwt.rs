//! Bearer tokens that are JWTs: HS256 with a configured secret, RS256 and ES256 with keys
//! from a JWKS served on loopback. A wrong issuer, audience or algorithm, an expired or
//! not-yet-valid token and a tampered signature are each refused with 401; a good token
//! becomes the principal its claims name.

mod common;

use std::path::Path;

use common::clients::Lifecycle;
use common::raw::SessionlessClient;
use common::{TestClient, serve_in_process};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};
use toolgate::prelude::*;
use toolgate_runtime::JwtAuthenticator;

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "https://mcp.test/mcp";
const SECRET: &[u8] = b"a-test-secret-of-at-least-32-bytes!!";

#[derive(Serialize, JsonSchema)]
struct Who {
    subject: String,
    tenant: Option<String>,
    scopes: Vec<String>,
}

/// Say who the token says is calling. Does not change anything.
#[action(domain = "ident")]
async fn ident_whoami(principal: Principal) -> Result<Who, ToolError> {
    Ok(Who {
        subject: principal.subject().to_string(),
        tenant: principal.tenant().map(str::to_string),
        scopes: principal.scopes().map(str::to_string).collect(),
    })
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jwt").join(name)).unwrap()
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn claims() -> Value {
    json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "tenant": "acme", "scope": "ledger:read ledger:close", "exp": now() + 300 })
}

fn with(mut claims: Value, key: &str, value: Value) -> Value {
    claims[key] = value;
    claims
}

fn sign(algorithm: Algorithm, kid: Option<&str>, claims: &Value) -> String {
    let key = match algorithm {
        Algorithm::HS256 => EncodingKey::from_secret(SECRET).unwrap(),
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&fixture("rsa-1.pem")).unwrap(),
        Algorithm::ES256 => EncodingKey::from_ec_pem(&fixture("ec-1.pem")).unwrap(),
        other => panic!("no test key for {other:?}"),
    };
    let mut header = Header::new(algorithm);
    header.kid = kid.map(str::to_string);
    encode(&header, claims, &key).unwrap()
}

async fn serve(authenticator: JwtAuthenticator) -> String {
    serve_in_process(Server::from_registry("ident").authenticator(authenticator).build().expect("server")).await
}

/// An issuer's JWKS on loopback.
async fn jwks_url() -> String {
    let jwks: Value = serde_json::from_slice(&fixture("jwks.json")).unwrap();
    let router = axum::Router::new().route("/jwks.json", axum::routing::get(move || async move { axum::Json(jwks) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

async fn status_of(url: &str, token: &str) -> (u16, String) {
    let bearer = format!("Bearer {token}");
    let reply = SessionlessClient::new(url).request("tools/list", json!({}), &[("Authorization", &bearer)]).await;
    let challenge = reply.headers.get("www-authenticate").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    (reply.status.as_u16(), challenge)
}

#[tokio::test]
async fn a_good_token_names_the_principal_with_its_tenant_and_scopes() {
    let url = serve(JwtAuthenticator::jwks(ISSUER, AUDIENCE, jwks_url().await)).await;
    for (algorithm, kid) in [(Algorithm::RS256, "rsa-1"), (Algorithm::ES256, "ec-1")] {
        let token = sign(algorithm, Some(kid), &claims());
        let client = TestClient::http_as(&url, Lifecycle::Sessionless, Some(&token)).await;
        let who = client.ok("ident_whoami", json!({ "domain": "ident" })).await;
        assert_eq!((who["subject"].as_str(), who["tenant"].as_str()), (Some("alice"), Some("acme")), "{algorithm:?}");
        assert_eq!(who["scopes"], json!(["ledger:close", "ledger:read"]));
    }
    let hs = serve(JwtAuthenticator::hs256(ISSUER, AUDIENCE, SECRET).unwrap()).await;
    let client = TestClient::http_as(&hs, Lifecycle::Session, Some(&sign(Algorithm::HS256, None, &claims()))).await;
    assert_eq!(client.ok("ident_whoami", json!({ "domain": "ident" })).await["subject"], "alice");
}

/// A table of tokens and a JWT issuer together (`--tokens FILE` with `--jwt-issuer`): each
/// is tried, neither replaces the other.
#[tokio::test]
async fn a_table_of_tokens_and_an_issuer_both_authenticate() {
    let tokens = toolgate::StaticTokens::new().token("service-token-0123456789", Principal::new("batch"));
    let server = Server::from_registry("ident")
        .authenticator(tokens)
        .authenticator(JwtAuthenticator::hs256(ISSUER, AUDIENCE, SECRET).unwrap())
        .build()
        .expect("server");
    let url = serve_in_process(server).await;
    let service = TestClient::http_as(&url, Lifecycle::Sessionless, Some("service-token-0123456789")).await;
    assert_eq!(service.ok("ident_whoami", json!({ "domain": "ident" })).await["subject"], "batch");
    let jwt = sign(Algorithm::HS256, None, &claims());
    let user = TestClient::http_as(&url, Lifecycle::Sessionless, Some(&jwt)).await;
    assert_eq!(user.ok("ident_whoami", json!({ "domain": "ident" })).await["subject"], "alice");
    assert_eq!(status_of(&url, "neither-0123456789").await.0, 401);
}

#[tokio::test]
async fn every_bad_token_is_refused_with_401() {
    let url = serve(JwtAuthenticator::jwks(ISSUER, AUDIENCE, jwks_url().await)).await;
    let good = sign(Algorithm::RS256, Some("rsa-1"), &claims());
    assert_eq!(status_of(&url, &good).await.0, 200);

    let mut tampered = good.clone();
    let signature_start = tampered.rfind('.').unwrap() + 1;
    let flipped = if &tampered[signature_start..signature_start + 1] == "A" { "B" } else { "A" };
    tampered.replace_range(signature_start..signature_start + 1, flipped);
    // A token whose payload was changed after signing (another subject, same signature).
    let parts: Vec<&str> = good.split('.').collect();
    let other_payload = sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "sub", json!("mallory")));
    let spliced = format!("{}.{}.{}", parts[0], other_payload.split('.').nth(1).unwrap(), parts[2]);

    let cases = [
        ("wrong issuer", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "iss", json!("https://evil.test")))),
        (
            "wrong audience",
            sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "aud", json!("https://other.test/mcp"))),
        ),
        ("expired", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "exp", json!(now() - 120)))),
        ("not yet valid", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "nbf", json!(now() + 600)))),
        ("no subject", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "sub", json!("")))),
        ("tampered signature", tampered),
        ("tampered payload", spliced),
        // The algorithm is the key's: an HS256 token (signed with some secret) naming the
        // RSA key, and an ES256 token naming it, are both refused.
        ("HS256 against an RSA key", sign(Algorithm::HS256, Some("rsa-1"), &claims())),
        ("ES256 naming the RSA key", sign(Algorithm::ES256, Some("rsa-1"), &claims())),
        ("an unknown key", sign(Algorithm::RS256, Some("rsa-9"), &claims())),
        ("not a JWT", "opaque-token-value".to_string()),
        // A tenant claim that names no tenant is no "no tenant": served as one, it would
        // share the default tenant's instances with every principal that has none.
        ("a tenant list", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "tenant", json!(["acme"])))),
        ("a tenant number", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "tenant", json!(7)))),
        ("an empty tenant", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "tenant", json!("")))),
        ("a null tenant", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "tenant", json!(null)))),
        ("a tenant object", sign(Algorithm::RS256, Some("rsa-1"), &with(claims(), "tenant", json!({ "id": "acme" })))),
    ];
    for (case, token) in cases {
        let (status, challenge) = status_of(&url, &token).await;
        assert_eq!(status, 401, "{case}");
        assert!(challenge.contains("error=\"invalid_token\""), "{case}: {challenge}");
        assert!(!challenge.contains(&token), "{case}: the token is never echoed");
    }
}

#[tokio::test]
async fn an_hs256_server_refuses_tokens_signed_with_another_secret_or_algorithm() {
    let url = serve(JwtAuthenticator::hs256(ISSUER, AUDIENCE, SECRET).unwrap()).await;
    assert_eq!(status_of(&url, &sign(Algorithm::HS256, None, &claims())).await.0, 200);
    let other = encode(
        &Header::new(Algorithm::HS256),
        &claims(),
        &EncodingKey::from_secret(b"another-secret-of-at-least-32-bytes!").unwrap(),
    )
    .unwrap();
    assert_eq!(status_of(&url, &other).await.0, 401, "another secret");
    assert_eq!(status_of(&url, &sign(Algorithm::RS256, None, &claims())).await.0, 401, "RS256 against a secret");
    assert!(JwtAuthenticator::hs256(ISSUER, AUDIENCE, b"short").is_err(), "a short secret is refused");
}

#[tokio::test]
async fn an_unreachable_jwks_is_a_503_not_a_pass() {
    let url = serve(JwtAuthenticator::jwks(ISSUER, AUDIENCE, "http://127.0.0.1:9/jwks.json")).await;
    let (status, _) = status_of(&url, &sign(Algorithm::RS256, Some("rsa-1"), &claims())).await;
    assert_eq!(status, 503);
}

/// The command line's HS256 secret from a mounted file (`--jwt-secret-file PATH`): its
/// trailing newline is not part of the secret, so a token signed with the secret alone is
/// accepted, and one signed with the newline too is not.
#[tokio::test]
async fn the_command_line_reads_the_hs256_secret_from_a_file() {
    let dir = std::env::temp_dir().join(format!("toolgate-jwt-secret-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jwt.secret");
    let with_newline = [SECRET, b"\n"].concat();
    std::fs::write(&path, &with_newline).unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let args = [
        "ident",
        "--http",
        &addr.to_string(),
        "--store",
        "memory",
        "--require-auth",
        "--jwt-issuer",
        ISSUER,
        "--jwt-audience",
        AUDIENCE,
        "--jwt-secret-file",
        path.to_str().unwrap(),
    ]
    .map(String::from);
    tokio::spawn(Server::from_registry("ident").run_cli_from(args));
    let listening = async {
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(common::PATIENCE, listening).await.expect("the server did not listen");
    let url = format!("http://{addr}/mcp");
    assert_eq!(status_of(&url, &sign(Algorithm::HS256, None, &claims())).await.0, 200);
    let key = EncodingKey::from_secret(&with_newline).unwrap();
    let with_the_newline = encode(&Header::new(Algorithm::HS256), &claims(), &key).unwrap();
    assert_eq!(status_of(&url, &with_the_newline).await.0, 401, "the newline is part of no secret");
    let _ = std::fs::remove_dir_all(&dir);
}
