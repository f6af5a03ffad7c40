//! The operator's console (`--console ADDR`), first step: every address needs an
//! operator's credentials (401 without, 403 with another principal's), every answer carries
//! the security headers, the login form sets a cookie the browser sends back, and the
//! machines are listed with `describe`'s diagram.

use crate::common::spawn_http_example;

const OPERATOR: &str = "console-operator-token-0000000001";
const CLERK: &str = "console-clerk-token-000000000002";

/// The invoice example with an operator and a clerk, and its console's address.
async fn serve() -> (tokio::process::Child, String, std::path::PathBuf) {
    let dir = crate::common::scratch_dir("console");
    let tokens = dir.join("tokens.toml");
    let file = format!(
        "[[token]]\nsecret = \"{OPERATOR}\"\nprincipal = \"olga\"\ntenant = \"acme\"\nscopes = [\"toolgate:operator\"]\n\n\
         [[token]]\nsecret = \"{CLERK}\"\nprincipal = \"carl\"\ntenant = \"acme\"\nscopes = []\n"
    );
    std::fs::write(&tokens, file).unwrap();
    let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let args = ["--tokens", tokens.to_str().unwrap(), "--console", &console];
    let (server, _) = spawn_http_example("invoice", &args, &[]).await;
    (server, format!("http://{console}"), dir)
}

/// The login form's POST with `token`.
fn login(http: &reqwest::Client, console: &str, token: &str) -> reqwest::RequestBuilder {
    let form = format!("token={token}");
    http.post(format!("{console}/login")).header("content-type", "application/x-www-form-urlencoded").body(form)
}

fn assert_secure(response: &reqwest::Response) {
    let headers = response.headers();
    let csp = headers.get("content-security-policy").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(headers.get("x-content-type-options").unwrap(), "nosniff");
    assert_eq!(headers.get("x-frame-options").unwrap(), "DENY");
}

#[tokio::test]
async fn only_an_operator_sees_the_console() {
    let (_server, console, dir) = serve().await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for path in ["/", "/api/machines", "/diagram.svg", "/assets/console.js", "/no-such-page"] {
        let anonymous = http.get(format!("{console}{path}")).send().await.unwrap();
        assert_eq!(anonymous.status(), 401, "{path}");
        assert_secure(&anonymous);
        let clerk = http.get(format!("{console}{path}")).bearer_auth(CLERK).send().await.unwrap();
        assert_eq!(clerk.status(), 403, "{path}");
        let wrong = http.get(format!("{console}{path}")).bearer_auth("not-a-token-at-all-0000").send().await.unwrap();
        assert_eq!(wrong.status(), 401, "{path}");
    }
    let page = http.get(format!("{console}/")).bearer_auth(OPERATOR).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_secure(&page);
    assert!(page.text().await.unwrap().contains("/assets/console.js"));

    let machines = http.get(format!("{console}/api/machines")).bearer_auth(OPERATOR).send().await.unwrap();
    let machines: serde_json::Value = machines.json().await.unwrap();
    assert_eq!(machines["machines"][0]["id"], "invoice", "{machines}");
    let diagram = http.get(format!("{console}/diagram.svg")).bearer_auth(OPERATOR).send().await.unwrap();
    assert_eq!(diagram.headers()["content-type"], "image/svg+xml");
    assert!(diagram.text().await.unwrap().contains("<svg"));

    // The login form: a clerk's token is refused; an operator's is set as a cookie that
    // only this console gets back, and opens the pages.
    let refused = login(&http, &console, CLERK).send().await.unwrap();
    assert_eq!(refused.status(), 403);
    assert!(refused.headers().get("set-cookie").is_none());
    let signed_in = login(&http, &console, OPERATOR).send().await.unwrap();
    assert_eq!(signed_in.status(), 303);
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let pair = cookie.split(';').next().unwrap();
    let with_cookie = http.get(format!("{console}/api/machines")).header("cookie", pair).send().await.unwrap();
    assert_eq!(with_cookie.status(), 200);
    let _ = std::fs::remove_dir_all(&dir);
}
