//! The console judges a principal-owned machine's instance by the one owner rule, with the
//! operator as the principal: the travel example's quotes are each their searcher's, and a
//! travel agent (`travel:agent`, `owned_instances_managed_by`) manages every traveller's.
//! An operator finds a quote by machine and key alone, in its own tenant: its owner and an
//! agent see it; any other operator is told exactly what a key never created gets, and
//! does not see it listed among the timers, nor named by a task holding it.

use crate::common::TestClient;
use crate::common::clients::Lifecycle;
use crate::common::confirm::Outbox;
use crate::common::raw::SessionlessClient;
use crate::common::spawn_http_example;
use serde_json::{Value, json};

/// The traveller, an operator too: it owns the quote it searches.
const TRAVELLER: &str = "console-owned-traveller-000000001";
/// An operator of the traveller's tenant holding the manager scope.
const AGENT: &str = "console-owned-agent-0000000000002";
/// An operator of the traveller's tenant without it.
const PLAIN: &str = "console-owned-plain-0000000000003";
/// An operator of another tenant holding the manager scope.
const OTHER_TENANT_AGENT: &str = "console-owned-globex-agent-000004";
/// A key no search ever minted.
const NEVER: &str = "Q-aaaaaaaaaaaaaaaaaaaaaaaaaa";

/// The console's answer to `path` for the operator `token`: its status and its body, as bytes.
async fn get(console: &str, path: &str, token: &str) -> (u16, String) {
    let answer = reqwest::Client::new().get(format!("{console}{path}")).bearer_auth(token).send().await.unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
}

/// The keys of the timers `/api/tasks` lists to the operator `token`.
async fn timer_keys(console: &str, token: &str) -> Vec<String> {
    let (status, body) = get(console, "/api/tasks", token).await;
    assert_eq!(status, 200, "{body}");
    let tasks: Value = serde_json::from_str(&body).unwrap();
    let timers = tasks["timers"].as_array().unwrap().iter();
    timers.map(|timer| timer["key"].as_str().unwrap_or_default().to_string()).collect()
}

/// The travel example with the four operators and a console, given `extra` arguments: the
/// server, its MCP endpoint, its console's address, the confirmation outbox, and its scratch
/// directory.
async fn serve(name: &str, extra: &[&str]) -> (tokio::process::Child, String, String, Outbox, std::path::PathBuf) {
    let dir = crate::common::scratch_dir(name);
    let tokens = dir.join("tokens.toml");
    let entry = |secret: &str, principal: &str, tenant: &str, scopes: &str| {
        format!(
            "[[token]]\nsecret = \"{secret}\"\nprincipal = \"{principal}\"\ntenant = \"{tenant}\"\nscopes = [{scopes}]\n\n"
        )
    };
    let file = [
        entry(TRAVELLER, "tia", "acme", "\"toolgate:operator\", \"travel:book\""),
        entry(AGENT, "olga", "acme", "\"toolgate:operator\", \"travel:agent\""),
        entry(PLAIN, "oscar", "acme", "\"toolgate:operator\""),
        entry(OTHER_TENANT_AGENT, "gus", "globex", "\"toolgate:operator\", \"travel:agent\""),
    ]
    .concat();
    std::fs::write(&tokens, file).unwrap();
    let outbox = Outbox::new();
    let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let mut args = vec!["--tokens", tokens.to_str().unwrap(), "--console", &console, "--otp-outbox", outbox.path()];
    args.extend_from_slice(extra);
    let (server, url) = spawn_http_example("travel", &args, &[]).await;
    (server, url, format!("http://{console}"), outbox, dir)
}

#[tokio::test]
async fn an_owned_instance_is_found_by_its_key_and_judged_by_the_owner_rule() {
    let (_server, url, console, _outbox, dir) = serve("console-owned", &[]).await;

    let traveller = TestClient::http_as(&url, Lifecycle::Session, Some(TRAVELLER)).await;
    traveller.ok("switch_domain", json!({ "domain": "bus", "reason": "the user wants a bus" })).await;
    let search = json!({ "domain": "bus", "origin": "Madrid", "destination": "Valencia",
        "departure": "2027-03-04T08:00:00+01:00", "passengers": 2 });
    let quote = traveller.ok("bus_search", search).await["quote_id"].as_str().unwrap().to_string();

    // By machine and key alone: its owner and the agent of its tenant see it.
    let theirs = format!("/api/instance?machine=bus&key={quote}");
    for (who, token) in [("its owner", TRAVELLER), ("the agent", AGENT)] {
        let (status, body) = get(&console, &theirs, token).await;
        assert_eq!(status, 200, "{who} does not find the quote: {body}");
        let found: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((found["state"].as_str(), found["key"].as_str()), (Some("quoted"), Some(quote.as_str())), "{found}");
    }
    // Any other operator is told what a key never created gets, byte for byte; an old
    // address naming an owner changes nothing.
    let never = format!("/api/instance?machine=bus&key={NEVER}");
    for (who, token) in
        [("an operator without the agent's scope", PLAIN), ("another tenant's agent", OTHER_TENANT_AGENT)]
    {
        let unmade = get(&console, &never, token).await;
        assert_eq!(unmade.0, 404, "{unmade:?}");
        assert_eq!(get(&console, &theirs, token).await, unmade, "{who}: the quote answers unlike a key never created");
        let named = format!("{theirs}&owner=tia");
        assert_eq!(get(&console, &named, token).await, unmade, "{who}: naming the owner finds the quote");
    }

    // The quote's timer is listed to whoever sees the quote, and to no one else.
    assert!(timer_keys(&console, AGENT).await.contains(&quote), "the agent does not see the quote's timer");
    assert!(timer_keys(&console, TRAVELLER).await.contains(&quote), "its owner does not see the quote's timer");
    for token in [PLAIN, OTHER_TENANT_AGENT] {
        assert!(!timer_keys(&console, token).await.contains(&quote), "another operator sees the quote's timer");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tools/call` of `tool` from a client that declared the Tasks extension.
async fn call_as_task(client: &SessionlessClient, tool: &str, arguments: Value, headers: &[(&str, &str)]) -> Value {
    let tasks = json!({ "io.modelcontextprotocol/clientCapabilities": {
        "extensions": { "io.modelcontextprotocol/tasks": {} } } });
    let params = json!({ "name": tool, "arguments": arguments, "_meta": tasks });
    client.request("tools/call", params, headers).await.result()
}

/// A task holding an owned instance is listed in its tenant, naming the instance only to
/// whoever the rule shows it: the traveller's flight booking, running as a task while the
/// airline answers, names the quote to the agent, and to an operator without the agent's
/// scope it is a task of the tenant that names no instance.
#[tokio::test]
async fn a_task_names_an_owned_instance_only_to_whoever_may_see_it() {
    let (_server, url, console, outbox, dir) = serve("console-owned-task", &["--airline-seconds", "60"]).await;
    let client = SessionlessClient::new(&url);
    let bearer = format!("Bearer {TRAVELLER}");
    let traveller = [("authorization", bearer.as_str())];
    let call = |tool: &'static str, arguments: Value| client.call_with_headers(tool, arguments, &traveller);
    let switched = call("switch_domain", json!({ "domain": "flight", "reason": "the user flies" })).await.result();
    let flow = switched["structuredContent"]["flow"].as_str().unwrap_or_else(|| panic!("{switched}")).to_string();
    let search = json!({ "domain": "flight", "origin": "Madrid", "destination": "Lisbon",
        "departure": "2027-03-04T08:00:00+01:00", "passengers": 1, "flow": flow });
    let found = call("flight_search", search).await.result()["structuredContent"].clone();
    let (quote, offer) = (found["quote_id"].as_str().unwrap(), found["offers"][0]["id"].as_str().unwrap());
    let flow = found["flow"].as_str().unwrap_or(&flow).to_string();
    let mut book = json!({ "domain": "flight", "quote_id": quote, "offer_id": offer, "flow": flow });
    let required = call_as_task(&client, "flight_book", book.clone(), &traveller).await;
    let challenge = required["structuredContent"]["challenge_id"].as_str().unwrap_or_else(|| panic!("{required}"));
    book["challenge_id"] = challenge.into();
    book["otp"] = outbox.code(challenge).into();
    let created = call_as_task(&client, "flight_book", book, &traveller).await;
    let task = created["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_string();

    let listed = |token: &'static str| {
        let (console, task) = (console.clone(), task.clone());
        async move {
            let (status, body) = get(&console, "/api/tasks", token).await;
            assert_eq!(status, 200, "{body}");
            let tasks: Value = serde_json::from_str(&body).unwrap();
            let found = tasks["tasks"].as_array().unwrap().iter().find(|listed| listed["id"] == task.as_str()).cloned();
            found.unwrap_or_else(|| panic!("the task is not listed: {body}"))
        }
    };
    for token in [AGENT, TRAVELLER] {
        let seen = listed(token).await;
        assert_eq!((seen["machine"].as_str(), seen["instance"].as_str()), (Some("flight"), Some(quote)), "{seen}");
    }
    let unseen = listed(PLAIN).await;
    assert_eq!((&unseen["machine"], &unseen["instance"]), (&Value::Null, &Value::Null), "the quote is named: {unseen}");
    assert_eq!(unseen["tool"], "flight_book", "{unseen}");
    let _ = std::fs::remove_dir_all(&dir);
}
