//! The operator's console (`--console ADDR`), first step: every address needs an
//! operator's credentials (401 without, 403 with another principal's), every answer carries
//! the security headers, the login form sets a cookie the browser sends back, and the
//! machines are listed with `describe`'s diagram.

use crate::common::spawn_http_example;

const OPERATOR: &str = "console-operator-token-0000000001";
const CLERK: &str = "console-clerk-token-000000000002";

/// The invoice example with an operator and a clerk: the server, its MCP endpoint, its
/// console's address and its scratch directory.
async fn serve() -> (tokio::process::Child, String, String, std::path::PathBuf) {
    let dir = crate::common::scratch_dir("console");
    let tokens = dir.join("tokens.toml");
    let file = format!(
        "[[token]]\nsecret = \"{OPERATOR}\"\nprincipal = \"olga\"\ntenant = \"acme\"\nscopes = [\"toolgate:operator\"]\n\n\
         [[token]]\nsecret = \"{CLERK}\"\nprincipal = \"carl\"\ntenant = \"acme\"\nscopes = []\n"
    );
    std::fs::write(&tokens, file).unwrap();
    let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let args = ["--tokens", tokens.to_str().unwrap(), "--console", &console];
    let (server, url) = spawn_http_example("invoice", &args, &[]).await;
    (server, url, format!("http://{console}"), dir)
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
    let (_server, _, console, dir) = serve().await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for path in ["/", "/api/machines", "/api/effects", "/diagram.svg", "/assets/console.js", "/no-such-page"] {
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
    assert!(!cookie.contains(OPERATOR), "the cookie carries the credential: {cookie}");
    let pair = cookie.split(';').next().unwrap();
    let with_cookie = http.get(format!("{console}/api/machines")).header("cookie", pair).send().await.unwrap();
    assert_eq!(with_cookie.status(), 200);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The invoice example's console, and an rmcp client of the same server as the clerk.
async fn invoice_with_client() -> (tokio::process::Child, String, crate::common::TestClient, std::path::PathBuf) {
    let (server, url, console, dir) = serve().await;
    let client =
        crate::common::TestClient::http_as(&url, crate::common::clients::Lifecycle::Sessionless, Some(CLERK)).await;
    (server, console, client, dir)
}

#[tokio::test]
async fn an_instance_is_found_by_its_key_with_its_timeline_in_order() {
    let (_server, console, client, dir) = invoice_with_client().await;
    let http = reqwest::Client::new();
    for tool in ["invoice_submit", "invoice_reject", "invoice_submit", "invoice_approve"] {
        client.ok(tool, serde_json::json!({ "domain": "invoice", "id": "INV-7" })).await;
    }
    let found = http.get(format!("{console}/api/instance?machine=invoice&key=INV-7")).bearer_auth(OPERATOR);
    let found = found.send().await.unwrap();
    assert_eq!(found.status(), 200);
    assert_secure(&found);
    let found: serde_json::Value = found.json().await.unwrap();
    assert_eq!(found["state"], "approved", "{found}");
    let steps: Vec<(String, String, String)> = found["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (e["tool"].as_str().unwrap().into(), e["from"].as_str().unwrap().into(), e["to"].as_str().unwrap().into())
        })
        .collect();
    let expected = [
        ("invoice_submit", "draft", "review"),
        ("invoice_reject", "review", "draft"),
        ("invoice_submit", "draft", "review"),
        ("invoice_approve", "review", "approved"),
    ];
    let expected: Vec<(String, String, String)> =
        expected.iter().map(|(t, f, to)| (t.to_string(), f.to_string(), to.to_string())).collect();
    assert_eq!(steps, expected, "{found}");
    assert_eq!(found["timeline"][0]["principal"], "carl");

    // An instance nobody touched, a machine that does not exist, and a key that is markup:
    // 404, answered as JSON (never as a page that could run what the key holds).
    for search in [
        "machine=invoice&key=INV-8",
        "machine=nope&key=INV-7",
        "machine=invoice&key=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    ] {
        let missing = http.get(format!("{console}/api/instance?{search}")).bearer_auth(OPERATOR).send().await.unwrap();
        assert_eq!(missing.status(), 404, "{search}");
        assert_eq!(missing.headers()["content-type"], "application/json", "{search}");
        assert_secure(&missing);
    }
    // A malformed query is told what to send, in the console's words, not the parser's.
    for query in ["instance?machine=invoice", "instance?key=INV-7", "refusals?minutes=an-hour", "refusals?minutes=-1"] {
        let malformed = http.get(format!("{console}/api/{query}")).bearer_auth(OPERATOR).send().await.unwrap();
        assert_eq!(malformed.status(), 400, "{query}");
        let body = malformed.text().await.unwrap();
        assert!(body.starts_with("{\"error\":") && !body.contains("deserialize"), "{query}: {body}");
    }
    // Only an operator searches.
    let clerk = http.get(format!("{console}/api/instance?machine=invoice&key=INV-7")).bearer_auth(CLERK);
    assert_eq!(clerk.send().await.unwrap().status(), 403);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_operator_never_finds_another_tenants_instance() {
    const ACME_OPERATOR: &str = "console-acme-operator-000000000003";
    const GLOBEX_OPERATOR: &str = "console-globex-operator-0000000004";
    const GLOBEX_CLERK: &str = "console-globex-clerk-000000000005";
    let dir = crate::common::scratch_dir("console-tenants");
    let tokens = dir.join("tokens.toml");
    let file = format!(
        "[[token]]\nsecret = \"{ACME_OPERATOR}\"\nprincipal = \"olga\"\ntenant = \"acme\"\nscopes = [\"toolgate:operator\"]\n\n\
         [[token]]\nsecret = \"{GLOBEX_OPERATOR}\"\nprincipal = \"gus\"\ntenant = \"globex\"\nscopes = [\"toolgate:operator\"]\n\n\
         [[token]]\nsecret = \"{GLOBEX_CLERK}\"\nprincipal = \"gina\"\ntenant = \"globex\"\nscopes = [\"payments:create\", \"payments:capture\"]\n"
    );
    std::fs::write(&tokens, file).unwrap();
    let outbox = dir.join("otp.jsonl");
    let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let args = ["--tokens", tokens.to_str().unwrap(), "--otp-outbox", outbox.to_str().unwrap(), "--console", &console];
    let (_server, url) = spawn_http_example("payments", &args, &[]).await;
    let console = format!("http://{console}");
    let clerk =
        crate::common::TestClient::http_as(&url, crate::common::clients::Lifecycle::Sessionless, Some(GLOBEX_CLERK))
            .await;
    // A client's text in the context: shown as text, never as markup.
    let markup = "<script>alert('context')</script>";
    let amount_of = |amount: &str| serde_json::json!({ "amount": amount, "currency": "USD" });
    let amount = amount_of("25.00");
    let created = clerk
        .ok("payment_create", serde_json::json!({ "domain": "payment", "description": markup, "amount": amount }))
        .await;
    let id = created["payment_id"].as_str().unwrap().to_string();

    let http = reqwest::Client::new();
    let search = format!("{console}/api/instance?machine=payment&key={id}");
    let globex = http.get(&search).bearer_auth(GLOBEX_OPERATOR).send().await.unwrap();
    assert_eq!(globex.status(), 200);
    assert_eq!(globex.headers()["content-type"], "application/json");
    let globex: serde_json::Value = globex.json().await.unwrap();
    assert_eq!(globex["state"], "created", "{globex}");
    assert!(globex["context"].to_string().contains("<script>"), "the context as the client wrote it: {globex}");
    // The same key in the other tenant is another record, and there is none.
    let acme = http.get(&search).bearer_auth(ACME_OPERATOR).send().await.unwrap();
    assert_eq!(acme.status(), 404, "tenant acme's operator found globex's {id}");
    // Counted in globex only: its operator sees one payment created, acme's none.
    let created_count = |token: &'static str| {
        let (http, url) = (http.clone(), format!("{console}/api/machines"));
        async move {
            let answer = http.get(url).bearer_auth(token).send().await.unwrap();
            let machines: serde_json::Value = answer.json().await.unwrap();
            let payment = machines["machines"].as_array().unwrap().iter().find(|m| m["id"] == "payment").cloned();
            let payment = payment.expect("the payment machine is listed");
            let created = payment["states"].as_array().unwrap().iter().find(|s| s["name"] == "created").cloned();
            created.expect("its created state")["instances"].clone()
        }
    };
    assert_eq!(created_count(GLOBEX_OPERATOR).await, 1, "globex's operator counts globex's payment");
    assert_eq!(created_count(ACME_OPERATOR).await, 0, "tenant acme's operator counts globex's payment");

    // A refusal in globex is globex's: its operator sees it, acme's sees none.
    let capture = serde_json::json!({ "domain": "payment", "payment_id": id, "amount": amount_of("25.00"),
        "request_id": "req-00000001" });
    let refused = clerk.refused("payment_capture", capture).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    let tally = |token: &'static str| {
        let http = http.clone();
        let url = format!("{console}/api/refusals?minutes=5");
        async move {
            let answer = http.get(url).bearer_auth(token).send().await.unwrap();
            assert_eq!(answer.status(), 200);
            answer.json::<serde_json::Value>().await.unwrap()["refusals"].clone()
        }
    };
    let globex = tally(GLOBEX_OPERATOR).await;
    assert_eq!(globex["by_code"], serde_json::json!([["FORBIDDEN", 1]]), "{globex}");
    assert_eq!(globex["by_principal"], serde_json::json!([["gina", 1]]), "{globex}");
    assert_eq!(globex["by_tool"], serde_json::json!([["payment_capture", 1]]), "{globex}");
    let acme = tally(ACME_OPERATOR).await;
    assert_eq!(acme["total"], 0, "tenant acme's operator sees globex's refusals: {acme}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sign-in form's POST with `token`, as the console's own page sends it (a browser
/// sends the page's `Origin`).
fn login_from(http: &reqwest::Client, console: &str, origin: &str, token: &str) -> reqwest::RequestBuilder {
    login(http, console, token).header("origin", origin)
}

/// The `name=value` a `Set-Cookie` sets.
fn cookie_pair(response: &reqwest::Response) -> String {
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_string()
}

/// Signing in (issue 53, item 4): another site's page cannot sign a browser in (Chromium
/// sends its `Origin`); the cookie carries a console session, not the token (`HttpOnly`,
/// `SameSite=Strict`, an expiry, `Secure` from an HTTPS page); signing out ends the session;
/// an address that keeps failing is told to wait.
#[tokio::test]
async fn only_the_console_s_own_page_signs_in_and_the_cookie_is_a_session() {
    let (_server, _, console, dir) = serve().await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    // Another site's page, posting the form to the console: refused, no cookie set.
    for origin in ["https://evil.example", "null", "http://127.0.0.2:8080"] {
        let forged = login_from(&http, &console, origin, OPERATOR).send().await.unwrap();
        assert_eq!(forged.status(), 403, "{origin}");
        assert!(forged.headers().get("set-cookie").is_none(), "{origin}");
    }
    let cross_site = login(&http, &console, OPERATOR).header("sec-fetch-site", "cross-site").send().await.unwrap();
    assert_eq!(cross_site.status(), 403);

    // The console's own page: a session, not the credential.
    let signed_in = login_from(&http, &console, &console, OPERATOR).send().await.unwrap();
    assert_eq!(signed_in.status(), 303);
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(!cookie.contains(OPERATOR), "the cookie carries the credential: {cookie}");
    for part in ["HttpOnly", "SameSite=Strict", "Max-Age=28800", "Path=/"] {
        assert!(cookie.contains(part), "{part}: {cookie}");
    }
    assert!(!cookie.contains("Secure"), "a cookie over plain HTTP is never sent back if Secure: {cookie}");
    let over_https = console.replacen("http://", "https://", 1);
    let secure = login_from(&http, &console, &over_https, OPERATOR).send().await.unwrap();
    assert!(secure.headers()["set-cookie"].to_str().unwrap().contains("; Secure"));
    let session = cookie_pair(&signed_in);
    let opened = http.get(format!("{console}/api/machines")).header("cookie", &session).send().await.unwrap();
    assert_eq!(opened.status(), 200);
    // The old cookie, the token itself, opens nothing.
    let token_cookie = http.get(format!("{console}/")).header("cookie", format!("toolgate_console={OPERATOR}"));
    assert_eq!(token_cookie.send().await.unwrap().status(), 401);

    // Signing out: from another site, refused; from the console's page, the session ends.
    let forged =
        http.post(format!("{console}/logout")).header("cookie", &session).header("origin", "https://evil.example");
    assert_eq!(forged.send().await.unwrap().status(), 403);
    let signed_out = http
        .post(format!("{console}/logout"))
        .header("cookie", &session)
        .header("origin", &console)
        .send()
        .await
        .unwrap();
    assert_eq!(signed_out.status(), 303);
    assert!(signed_out.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    let after = http.get(format!("{console}/api/machines")).header("cookie", &session).send().await.unwrap();
    assert_eq!(after.status(), 401, "a signed-out session still opens the console");

    // Ten sign-ins a minute from one address, successful ones given back: then 429 for
    // every sign-in from it, the right token's too.
    for _ in 0..10 {
        let wrong = login_from(&http, &console, &console, "not-a-token-at-all-0000").send().await.unwrap();
        assert_eq!(wrong.status(), 401);
    }
    let limited = login_from(&http, &console, &console, "not-a-token-at-all-0000").send().await.unwrap();
    assert_eq!(limited.status(), 429);
    let retry_after: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let right = login_from(&http, &console, &console, OPERATOR).send().await.unwrap();
    assert_eq!(right.status(), 429, "the right token is tried past the limit");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A console session lives in the store: behind a load balancer, one opened on one
/// replica is served by another sharing the store, and signing out on one ends it on
/// both. On Redis and Postgres when the tests have them (skipped, saying so, without).
#[tokio::test]
async fn a_console_session_is_served_by_every_replica_sharing_the_store() {
    let mut stores = Vec::new();
    for (variable, name) in [("TOOLGATE_TEST_REDIS_URL", "Redis"), ("TOOLGATE_TEST_POSTGRES_URL", "Postgres")] {
        match std::env::var(variable).ok().filter(|url| !url.is_empty()) {
            Some(url) => stores.push(url),
            None => eprintln!("skipped on {name}: set {variable} (`.ci/run` does)"),
        }
    }
    let dir = crate::common::scratch_dir("console-replicas");
    let tokens = dir.join("tokens.toml");
    let file = format!(
        "[[token]]\nsecret = \"{OPERATOR}\"\nprincipal = \"olga\"\ntenant = \"acme\"\nscopes = [\"toolgate:operator\"]\n"
    );
    std::fs::write(&tokens, file).unwrap();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for store in stores {
        let mut consoles = Vec::new();
        let mut servers = Vec::new();
        for _ in 0..2 {
            let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
            let args = ["--store", &store, "--tokens", tokens.to_str().unwrap(), "--console", &console];
            servers.push(spawn_http_example("invoice", &args, &[crate::replicas::KEY]).await.0);
            consoles.push(format!("http://{console}"));
        }
        let signed_in = login_from(&http, &consoles[0], &consoles[0], OPERATOR).send().await.unwrap();
        assert_eq!(signed_in.status(), 303, "{store}");
        let session = cookie_pair(&signed_in);
        for console in &consoles {
            let page = http.get(format!("{console}/api/machines")).header("cookie", &session).send().await.unwrap();
            assert_eq!(page.status(), 200, "{store}: {console}");
        }
        let signed_out = http.post(format!("{}/logout", consoles[1]));
        let signed_out = signed_out.header("cookie", &session).header("origin", &consoles[1]).send().await.unwrap();
        assert_eq!(signed_out.status(), 303, "{store}");
        for console in &consoles {
            let page = http.get(format!("{console}/api/machines")).header("cookie", &session).send().await.unwrap();
            assert_eq!(page.status(), 401, "{store}: a session signed out on the other replica opens {console}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The machines page's counts, the same on every store the server may run on: the SQLite
/// file, and Redis and Postgres when the tests have them (`TOOLGATE_TEST_REDIS_URL`,
/// `TOOLGATE_TEST_POSTGRES_URL`; skipped, saying so, without). Each run is a tenant no other
/// run or test used (the shared stores outlive a run): its payments are counted, and only
/// its; the pending lapse of an authorized payment is counted as a timer, and on the SQLite
/// file (the test's own) it is the timer due next on the tasks page.
#[tokio::test]
async fn the_counts_are_the_same_on_every_store() {
    let dir = crate::common::scratch_dir("console-stores");
    let mut stores = vec![format!("sqlite:{}", dir.join("payments.db").display())];
    for (variable, name) in [("TOOLGATE_TEST_REDIS_URL", "Redis"), ("TOOLGATE_TEST_POSTGRES_URL", "Postgres")] {
        match std::env::var(variable).ok().filter(|url| !url.is_empty()) {
            Some(url) => stores.push(url),
            None => eprintln!("skipped on {name}: set {variable} (`.ci/run` does)"),
        }
    }
    for store in stores {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let tenant = format!("console-{nanos}");
        let (operator, clerk) = (format!("console-stores-operator-{nanos}"), format!("console-stores-clerk-{nanos}"));
        let tokens = dir.join(format!("tokens-{nanos}.toml"));
        let file = format!(
            "[[token]]\nsecret = \"{operator}\"\nprincipal = \"olga\"\ntenant = \"{tenant}\"\nscopes = [\"toolgate:operator\"]\n\n\
             [[token]]\nsecret = \"{clerk}\"\nprincipal = \"carl\"\ntenant = \"{tenant}\"\nscopes = [\"payments:create\"]\n"
        );
        std::fs::write(&tokens, file).unwrap();
        let outbox = dir.join("otp.jsonl");
        let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let args = [
            "--store",
            &store,
            "--tokens",
            tokens.to_str().unwrap(),
            "--otp-outbox",
            outbox.to_str().unwrap(),
            "--console",
            &console,
        ];
        let (_server, url) = spawn_http_example("payments", &args, &[crate::replicas::KEY]).await;
        let client =
            crate::common::TestClient::http_as(&url, crate::common::clients::Lifecycle::Sessionless, Some(&clerk))
                .await;
        let create = serde_json::json!({ "domain": "payment", "description": "order",
            "amount": { "amount": "25.00", "currency": "USD" } });
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(client.ok("payment_create", create.clone()).await["payment_id"].as_str().unwrap().to_string());
        }
        client.ok("payment_authorize", serde_json::json!({ "domain": "payment", "payment_id": ids[0] })).await;

        let http = reqwest::Client::new();
        let machines = http.get(format!("http://{console}/api/machines")).bearer_auth(&operator).send().await.unwrap();
        let machines: serde_json::Value = machines.json().await.unwrap();
        let payment = machines["machines"].as_array().unwrap().iter().find(|m| m["id"] == "payment").unwrap();
        let count = |state: &str| {
            payment["states"].as_array().unwrap().iter().find(|s| s["name"] == state).unwrap()["instances"].clone()
        };
        assert_eq!(
            (count("created"), count("authorized"), count("captured")),
            (2.into(), 1.into(), 0.into()),
            "{store}: {payment}"
        );
        assert_eq!((payment["timers"].clone(), payment["tasks"].clone()), (1.into(), 0.into()), "{store}: {payment}");
        if store.starts_with("sqlite:") {
            let tasks = http.get(format!("http://{console}/api/tasks")).bearer_auth(&operator).send().await.unwrap();
            let tasks: serde_json::Value = tasks.json().await.unwrap();
            assert_eq!(tasks["timers"][0]["key"], ids[0].as_str(), "{tasks}");
            assert_eq!(tasks["timers"][0]["to"], "lapsed", "{tasks}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a person sees, in Debian's chromium (headless, driven by playwright-core with the
/// TypeScript tests' Node): the login form, then an instance found by its key with its
/// timeline in order; a key of markup stays text; a burst of refused calls made meanwhile
/// appears on the refusals page, by code, tool and principal, without a reload. The screenshot goes to
/// `target/ci-artifacts/console` (which `.ci/run` keeps). Skipped, saying so, without `/usr/bin/chromium`.
#[tokio::test]
async fn a_person_finds_an_instance_and_its_timeline_in_a_browser() {
    let Some(shots) = browser_screenshots() else { return };
    let (_server, console, client, dir) = invoice_with_client().await;
    for tool in ["invoice_submit", "invoice_reject", "invoice_submit", "invoice_approve"] {
        client.ok(tool, serde_json::json!({ "domain": "invoice", "id": "INV-42" })).await;
    }
    // The burst: the approved invoice approved again, refused (FORBIDDEN), while the
    // browser watches the refusals page.
    const BURST: usize = 12;
    let burst = async {
        for _ in 0..BURST {
            client.refused("invoice_approve", serde_json::json!({ "domain": "invoice", "id": "INV-42" })).await;
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    };
    let args = [console.as_str(), OPERATOR, "INV-42", shots.to_str().unwrap(), &BURST.to_string()];
    tokio::join!(crate::typescript_sdk::run_script("console_browser.mjs", &args, None), burst);
    assert!(shots.join("console-instance.png").exists());
    assert!(shots.join("console-refusals.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The invoice machine's diagram, in Debian's chromium, shows on each state's node the
/// number of invoices the clients' calls left there: first the ones this test's rmcp
/// client made, then, without a reload, the ones the script's TypeScript SDK client makes
/// while the page is open. The counts are the operator's tenant's (the invoice machine's
/// instances are everyone's: a tenant's counts are checked on payments below). Screenshot
/// in `target/ci-artifacts/console`. Skipped, saying so, without `/usr/bin/chromium`.
#[tokio::test]
async fn the_diagram_shows_the_counts_the_clients_calls_produced_in_a_browser() {
    let Some(shots) = browser_screenshots() else { return };
    let (_server, url, console, dir) = serve().await;
    let client =
        crate::common::TestClient::http_as(&url, crate::common::clients::Lifecycle::Sessionless, Some(CLERK)).await;
    // Five in review, three approved, two discharged; one rejected back to draft.
    let walks: [(&str, &[&str]); 11] = [
        ("INV-1", &["invoice_submit"]),
        ("INV-2", &["invoice_submit"]),
        ("INV-3", &["invoice_submit"]),
        ("INV-4", &["invoice_submit", "invoice_reject", "invoice_submit"]),
        ("INV-5", &["invoice_submit"]),
        ("INV-6", &["invoice_submit", "invoice_approve"]),
        ("INV-7", &["invoice_submit", "invoice_approve"]),
        ("INV-8", &["invoice_submit", "invoice_approve"]),
        ("INV-9", &["invoice_submit", "invoice_approve", "invoice_discharge"]),
        ("INV-10", &["invoice_submit", "invoice_approve", "invoice_discharge"]),
        ("INV-11", &["invoice_submit", "invoice_reject"]),
    ];
    for (id, tools) in walks {
        for tool in tools {
            client.ok(tool, serde_json::json!({ "domain": "invoice", "id": id })).await;
        }
    }
    let expected = serde_json::json!({ "draft": 1, "review": 5, "approved": 3, "discharged": 2 }).to_string();
    let args = [console.as_str(), OPERATOR, url.as_str(), CLERK, shots.to_str().unwrap(), expected.as_str()];
    crate::typescript_sdk::run_script("console_counts.mjs", &args, None).await;
    assert!(shots.join("console-machines.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A travel quote's timer counts down on the instance page, then the quote shows
/// `expired` with time's move last in its timeline (in Debian's chromium). The quote is
/// its traveller's, and the operator, a travel agent (`travel:agent`, which manages every
/// traveller's quotes), finds it by its key alone. The script's SDK client makes the quote
/// once the person has signed in, so a slow browser start (CI runs it beside every other
/// test on two cores) does not eat the quote's time. Screenshots in
/// `target/ci-artifacts/console`. Skipped, saying so, without `/usr/bin/chromium`.
#[tokio::test]
async fn a_quotes_timer_counts_down_then_it_shows_expired_in_a_browser() {
    const TRAVELLER: &str = "console-traveller-token-000000000006";
    let Some(shots) = browser_screenshots() else { return };
    let dir = crate::common::scratch_dir("console-timer");
    let tokens = dir.join("tokens.toml");
    let file = format!(
        "[[token]]\nsecret = \"{OPERATOR}\"\nprincipal = \"olga\"\nscopes = [\"toolgate:operator\", \"travel:agent\"]\n\n\
         [[token]]\nsecret = \"{TRAVELLER}\"\nprincipal = \"traveller\"\nscopes = []\n"
    );
    std::fs::write(&tokens, file).unwrap();
    let holds = dir.join("holds.jsonl");
    let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let args = [
        "--tokens",
        tokens.to_str().unwrap(),
        "--console",
        &console,
        "--after",
        "quoted=8s",
        "--holds-log",
        holds.to_str().unwrap(),
    ];
    let (_server, url) = spawn_http_example("travel", &args, &[]).await;
    let console = format!("http://{console}");
    let args = [console.as_str(), OPERATOR, url.as_str(), TRAVELLER, shots.to_str().unwrap()];
    crate::typescript_sdk::run_script("console_timer.mjs", &args, None).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The payments example's console in Debian's chromium, at 1,280 px wide: the page loads
/// with no Content-Security-Policy violation (the diagram's fonts included); every state of
/// the payment diagram (wider than the page as drawn) is inside the page; the 7-day timer
/// of an authorized payment shows as a duration and a deadline, its row links to the
/// payment, which the link opens; a `CONFIRMATION_REQUIRED` is counted apart from the
/// refusals; and the settlement's notice, which cannot be written (its log's directory does
/// not exist), is listed pending with its attempts, then dead-lettered with its reason.
/// Screenshots in `target/ci-artifacts/console`. Skipped, saying so, without `/usr/bin/chromium`.
#[tokio::test]
async fn the_payments_console_fits_the_page_and_links_its_rows_in_a_browser() {
    let Some(shots) = browser_screenshots() else { return };
    let dir = crate::common::scratch_dir("console-payments");
    let tokens = dir.join("tokens.toml");
    let file = format!(
        "[[token]]\nsecret = \"{OPERATOR}\"\nprincipal = \"olga\"\ntenant = \"acme\"\nscopes = [\"toolgate:operator\"]\n\n\
         [[token]]\nsecret = \"{CLERK}\"\nprincipal = \"carl\"\ntenant = \"acme\"\nscopes = [\"payments:create\", \"payments:capture\"]\n"
    );
    std::fs::write(&tokens, file).unwrap();
    let outbox = dir.join("otp.jsonl");
    // A notices log no one can write: the settlement's notice fails every attempt.
    let notices = dir.join("no-such-directory").join("notices.jsonl");
    let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let args = [
        "--tokens",
        tokens.to_str().unwrap(),
        "--otp-outbox",
        outbox.to_str().unwrap(),
        "--notices-log",
        notices.to_str().unwrap(),
        "--settle-seconds",
        "0",
        "--console",
        &console,
    ];
    let (_server, url) = spawn_http_example("payments", &args, &[]).await;
    let console = format!("http://{console}");
    let client =
        crate::common::TestClient::http_as(&url, crate::common::clients::Lifecycle::Sessionless, Some(CLERK)).await;
    let create = serde_json::json!({ "domain": "payment", "description": "order",
        "amount": { "amount": "25.00", "currency": "USD" } });
    let payment = |id: &str| serde_json::json!({ "domain": "payment", "payment_id": id });
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(client.ok("payment_create", create.clone()).await["payment_id"].as_str().unwrap().to_string());
    }
    // The first waits on its 7-day lapse; the second settles, and its notice fails.
    client.ok("payment_authorize", payment(&ids[0])).await;
    client.ok("payment_authorize", payment(&ids[1])).await;
    client.ok("payment_settle", payment(&ids[1])).await;
    // A capture asks for its code (a step, not a refusal); the third, never authorized,
    // is refused.
    let capture = |id: &str| {
        serde_json::json!({ "domain": "payment", "payment_id": id, "request_id": format!("req-{id}-0001"),
            "amount": { "amount": "25.00", "currency": "USD" } })
    };
    assert_eq!(client.refused("payment_capture", capture(&ids[0])).await["code"], "CONFIRMATION_REQUIRED");
    assert_eq!(client.refused("payment_capture", capture(&ids[2])).await["code"], "FORBIDDEN");

    let expected = serde_json::json!({ "timer": ids[0], "effect": ids[1], "effect_name": "notify_settled" });
    let args = [console.as_str(), OPERATOR, shots.to_str().unwrap(), &expected.to_string()];
    crate::typescript_sdk::run_script("console_payments.mjs", &args, None).await;
    assert!(shots.join("console-payments.png").exists());

    // The same, as the API answers it.
    let http = reqwest::Client::new();
    let refusals = http.get(format!("{console}/api/refusals?minutes=5")).bearer_auth(OPERATOR).send().await.unwrap();
    let refusals: serde_json::Value = refusals.json().await.unwrap();
    assert_eq!(refusals["refusals"]["by_code"], serde_json::json!([["FORBIDDEN", 1]]), "{refusals}");
    assert_eq!(refusals["refusals"]["confirmations_asked"], 1, "{refusals}");
    let effects = http.get(format!("{console}/api/effects")).bearer_auth(OPERATOR).send().await.unwrap();
    assert_eq!(effects.status(), 200);
    let effects: serde_json::Value = effects.json().await.unwrap();
    let dead = &effects["dead"][0];
    assert_eq!(
        (dead["key"].as_str(), dead["effect"].as_str()),
        (Some(ids[1].as_str()), Some("notify_settled")),
        "{effects}"
    );
    assert!(dead["reason"].as_str().is_some_and(|reason| !reason.is_empty()), "{effects}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where the browser tests' screenshots go (`target/ci-artifacts/console`), or `None`,
/// having said why, when there is no chromium to run them in.
fn browser_screenshots() -> Option<std::path::PathBuf> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !std::path::Path::new(&chromium).exists() {
        eprintln!("skipped: no chromium at {chromium} (apt-get install chromium, or set CHROMIUM)");
        return None;
    }
    let target = crate::common::target_dir();
    let shots = target.parent().unwrap_or(&target).join("ci-artifacts").join("console");
    std::fs::create_dir_all(&shots).unwrap();
    Some(shots)
}
