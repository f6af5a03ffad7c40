//! The travel example through rmcp's client, over stdio and Streamable HTTP: the intent
//! lock refuses drift between the bus, flight and car-rental domains, and `switch_domain`
//! is the one explicit way across.

use crate::common;

use crate::common::TestClient;
use crate::common::confirm::{Outbox, confirmed};
use serde_json::{Value, json};

fn bus_search(domain: &str) -> Value {
    json!({
        "domain": domain,
        "origin": "Madrid",
        "destination": "Valencia",
        "departure": "2026-12-04T08:00:00+01:00",
        "passengers": 2,
    })
}

fn car_search() -> Value {
    json!({
        "domain": "car_rental",
        "pickup_location": "Valencia Airport",
        "pickup_at": "2026-12-04T10:00:00+01:00",
        "days": 3,
        "passengers": 2,
    })
}

fn switch(domain: &str) -> Value {
    json!({ "domain": domain, "reason": format!("the user asked for {domain}") })
}

async fn names(client: &TestClient) -> Vec<String> {
    client.tool_names().await
}

/// The traveller's bearer token over HTTP.
const TRAVELLER: &str = "traveller-token-0123456789";

async fn drift_is_refused_and_switching_is_explicit(mut client: TestClient, outbox: Outbox) {
    // Nothing selected yet: only switch_domain is listed, and it lists the domains.
    let tools = client.tools().await;
    assert_eq!(tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), ["switch_domain"]);
    let switch_tool = &tools[0];
    assert_eq!(switch_tool.input_schema["properties"]["domain"]["enum"], json!(["bus", "car_rental", "flight"]));
    let description = switch_tool.description.as_deref().unwrap();
    assert!(description.contains("- bus: long-distance coach trips between cities"), "{description}");

    // A call before any switch: DOMAIN_NOT_SELECTED, with the exact call to make.
    let refused = client.refused("bus_search", bus_search("bus")).await;
    assert_eq!(refused["code"], "DOMAIN_NOT_SELECTED");
    assert_eq!(refused["domain"], "bus");
    assert!(refused["hint"].as_str().unwrap().contains(r#"`switch_domain` with {"domain": "bus""#), "{refused}");

    // switch_domain(bus): the list changes, and the client is told.
    let switched = client.ok("switch_domain", switch("bus")).await;
    assert_eq!(
        switched,
        json!({ "domain": "bus", "previous_domain": null, "next": ["bus_book", "bus_search", "switch_domain"] })
    );
    client.expect_list_changed().await;
    let tools = client.tools().await;
    assert_eq!(tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), ["bus_book", "bus_search", "switch_domain"]);
    // The model reads how long a quote lasts.
    let book_description = tools[0].description.as_deref().unwrap();
    assert!(book_description.contains("after 15 minutes `quoted` becomes `expired`"), "{book_description}");
    // Booking names a quote, so it follows a search: a quote never made is not found, and
    // the refusal names the tool that makes one.
    let unquoted = client
        .refused(
            "bus_book",
            json!({ "domain": "bus", "quote_id": "Q-aaaaaaaaaaaaaaaaaaaaaaaaaa", "offer_id": "BUS-1-0" }),
        )
        .await;
    assert_eq!(unquoted["code"], "NOT_FOUND", "{unquoted}");
    assert!(unquoted["message"].as_str().unwrap().contains("`bus_search`"), "{unquoted}");
    // `not_for` tells the model what the tool does not do.
    let search_description = tools[1].description.as_deref().unwrap();
    assert!(
        search_description.ends_with("\n\nNot for: booking (use bus_book), flights or rental cars."),
        "{search_description}"
    );

    // bus_search works: its result is a quote, and carries the domain.
    let found = client.ok("bus_search", bus_search("bus")).await;
    assert_eq!((found["domain"].as_str(), found["state"].as_str()), (Some("bus"), Some("quoted")));
    let quote = found["quote_id"].as_str().unwrap().to_string();
    let offer = found["offers"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(names(&client).await, ["bus_book", "bus_search", "switch_domain"]);
    // Searching again (a new quote, quoted too) changes nothing a client sees: no
    // notification. (On stdio the server sends a notification before the response it
    // belongs to.)
    let again = client.ok("bus_search", bus_search("bus")).await;
    assert_ne!(again["quote_id"], found["quote_id"], "each search is a quote of its own");
    assert_eq!(client.pending_list_changed(), 0, "list_changed sent although the list did not change");

    // Drift: car_rental_search while in bus is refused, with the switch it would take.
    let drift = client.refused("car_rental_search", car_search()).await;
    assert_eq!(drift["code"], "DOMAIN_MISMATCH");
    assert_eq!((drift["active_domain"].as_str(), drift["tool_domain"].as_str()), (Some("bus"), Some("car_rental")));
    assert_eq!(drift["declared_domain"], "car_rental");
    assert_eq!(drift["domain"], "car_rental");
    let hint = drift["hint"].as_str().unwrap();
    assert!(
        hint.contains(r#"`switch_domain` with {"domain": "car_rental""#) && hint.contains("changed intent"),
        "{hint}"
    );

    // A bus tool that declares another domain is refused the same way.
    let declared = client.refused("bus_search", bus_search("flight")).await;
    assert_eq!(
        (declared["code"].as_str(), declared["declared_domain"].as_str()),
        (Some("DOMAIN_MISMATCH"), Some("flight"))
    );
    // …and one that declares none is told which field is missing.
    let mut missing = bus_search("bus");
    missing.as_object_mut().unwrap().remove("domain");
    let missing = client.refused("bus_search", missing).await;
    assert_eq!(
        (missing["code"].as_str(), missing["errors"][0]["field"].as_str()),
        (Some("INVALID_ARGUMENT"), Some("/domain"))
    );

    // Switching to car_rental and back keeps bus's machine where it was (quoted).
    let switched = client.ok("switch_domain", switch("car_rental")).await;
    assert_eq!(switched["previous_domain"], "bus");
    client.expect_list_changed().await;
    assert_eq!(names(&client).await, ["car_rental_book", "car_rental_search", "switch_domain"]);
    assert_eq!(client.ok("car_rental_search", car_search()).await["domain"], "car_rental");
    client.ok("switch_domain", switch("bus")).await;
    client.expect_list_changed().await;
    assert_eq!(names(&client).await, ["bus_book", "bus_search", "switch_domain"]);
    // Booking spends money: it takes the traveller's one-time code.
    let book = json!({ "domain": "bus", "quote_id": quote, "offer_id": offer });
    let booked = confirmed(&client, "bus_book", book, &outbox).await;
    assert_eq!((booked["state"].as_str(), booked["domain"].as_str()), (Some("booked"), Some("bus")));
}

/// Every domain tool, as listed once its domain is active, requires `domain` = its domain.
async fn every_domain_tool_requires_its_domain(mut client: TestClient) {
    assert_eq!(client.tool_names().await, ["switch_domain"]);
    for domain in ["bus", "car_rental", "flight"] {
        client.ok("switch_domain", switch(domain)).await;
        client.expect_list_changed().await;
        for tool in client.tools().await.into_iter().filter(|t| t.name != "switch_domain") {
            assert!(tool.name.starts_with(&format!("{domain}_")), "{} listed in {domain}", tool.name);
            let schema = &tool.input_schema;
            assert_eq!(schema["properties"]["domain"]["const"], domain, "{}", tool.name);
            assert!(schema["required"].as_array().unwrap().contains(&json!("domain")), "{}", tool.name);
            let output = tool.output_schema.as_ref().expect("output schema");
            assert_eq!(output["anyOf"][0]["properties"]["domain"]["const"], domain, "{}", tool.name);
        }
    }
}

async fn bad_switches_are_invalid_arguments(client: TestClient) {
    let refused = client.refused("switch_domain", json!({ "domain": "train", "reason": "" })).await;
    assert_eq!(refused["code"], "INVALID_ARGUMENT");
    let fields: Vec<&str> =
        refused["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["/domain", "/reason"]);
    assert_eq!(refused["errors"][0]["expected"], "one of: bus, car_rental, flight");
    assert_eq!(client.tool_names().await, ["switch_domain"], "a refused switch selects nothing");
}

#[tokio::test]
async fn stdio_drift_is_refused_and_switching_is_explicit() {
    let outbox = Outbox::new();
    let client = TestClient::stdio_example_with("travel", &["--otp-outbox", outbox.path()]).await;
    drift_is_refused_and_switching_is_explicit(client, outbox).await;
}

#[tokio::test]
async fn http_drift_is_refused_and_switching_is_explicit() {
    let outbox = Outbox::new();
    let token = format!("traveller={TRAVELLER}");
    let args = ["--otp-outbox", outbox.path(), "--token", token.as_str()];
    let client = TestClient::http_example_with("travel", &args, Some(TRAVELLER)).await;
    drift_is_refused_and_switching_is_explicit(client, outbox).await;
}

/// A booking is refused to anyone who did not authenticate, before anything else is
/// judged: the intent lock, the offer, the state.
#[tokio::test]
async fn an_anonymous_caller_cannot_book() {
    let client = TestClient::http_example("travel").await;
    let refused = client.refused("bus_book", json!({ "domain": "bus", "offer_id": "BUS-1-0" })).await;
    assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
}

#[tokio::test]
async fn stdio_every_domain_tool_requires_its_domain() {
    every_domain_tool_requires_its_domain(TestClient::stdio_example("travel").await).await;
}

#[tokio::test]
async fn http_every_domain_tool_requires_its_domain() {
    every_domain_tool_requires_its_domain(TestClient::http_example("travel").await).await;
}

#[tokio::test]
async fn stdio_bad_switches_are_invalid_arguments() {
    bad_switches_are_invalid_arguments(TestClient::stdio_example("travel").await).await;
}

#[tokio::test]
async fn http_bad_switches_are_invalid_arguments() {
    bad_switches_are_invalid_arguments(TestClient::http_example("travel").await).await;
}

/// A departure outside RFC 3339 (here a six-digit year, which once made the handler's
/// date arithmetic panic) is refused before the handler runs, saying what was wrong.
#[tokio::test]
async fn a_departure_outside_rfc3339_is_refused_before_the_handler() {
    let client = TestClient::stdio_example("travel").await;
    client.ok("switch_domain", switch("bus")).await;
    for (departure, problem) in [
        ("+262142-12-31T23:00:00+00:00", "is not an RFC 3339 date-time"),
        ("2026-12-01 10:00", "separates the date and the time with a space"),
        ("2026-12-01T10:00:00", "has no UTC offset"),
    ] {
        let mut search = bus_search("bus");
        search["departure"] = departure.into();
        let refused = client.refused("bus_search", search).await;
        assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");
        assert_eq!(refused["errors"][0]["field"], "/departure", "{refused}");
        assert!(refused["errors"][0]["problem"].as_str().unwrap().contains(problem), "{refused}");
    }
    // The latest departure the type accepts: its offers would leave after 9999, which RFC
    // 3339 cannot write, so the handler says so instead of sending a date its schema refuses.
    let mut search = bus_search("bus");
    search["departure"] = "9999-12-31T23:00:00Z".into();
    let refused = client.refused("bus_search", search).await;
    assert!(refused["errors"][0]["problem"].as_str().unwrap().contains("after the year 9999"), "{refused}");
}

/// Every bad argument is reported at once, each by its JSON pointer with what to send
/// instead; a field the tool does not take is refused; the corrected call succeeds.
#[tokio::test]
async fn every_bad_argument_is_reported_at_once() {
    let client = TestClient::stdio_example("travel").await;
    client.ok("switch_domain", switch("bus")).await;
    let mut search = bus_search("bus");
    search["departure"] = "2026-12-01 10:00".into();
    search["passengers"] = "two".into();
    search["seat"] = "window".into();
    let refused = client.refused("bus_search", search).await;
    assert_eq!(refused["code"], "INVALID_ARGUMENT");
    let errors = refused["errors"].as_array().unwrap();
    let by_field =
        |field: &str| errors.iter().find(|e| e["field"] == field).unwrap_or_else(|| panic!("{field}: {refused}"));
    assert_eq!(errors.len(), 3, "{refused}");
    let departure = by_field("/departure");
    assert!(departure["problem"].as_str().unwrap().contains("with a space"), "{departure}");
    assert_eq!(departure["example"], "2026-12-04T08:00:00+01:00");
    assert_eq!(departure["got"], "2026-12-01 10:00");
    let passengers = by_field("/passengers");
    assert_eq!(passengers["problem"], "must be a whole number of persons, from 1 to 9, e.g. 1");
    assert_eq!(passengers["expected"], "A whole number of persons, from 1 to 9.");
    assert_eq!(by_field("/seat")["problem"], "is not a parameter of this tool");
    // Corrected, it goes through; prices are money, never floats.
    let found = client.ok("bus_search", bus_search("bus")).await;
    assert_eq!(found["state"], "quoted");
    let price = &found["offers"][0]["price"];
    assert!(price["amount"].as_str().is_some_and(|a| a.split_once('.').is_some_and(|(_, c)| c.len() == 2)), "{price}");
    assert_eq!(price["currency"], "EUR");
}

/// A count out of its bounds is refused with the bounds and the unit, beside any other
/// bad field; the schema says the same bounds.
#[tokio::test]
async fn counts_carry_their_unit_and_bounds() {
    let client = TestClient::stdio_example("travel").await;
    client.ok("switch_domain", switch("car_rental")).await;
    let mut search = car_search();
    search["days"] = 45.into();
    search["passengers"] = 0.into();
    let refused = client.refused("car_rental_search", search).await;
    let problems: Vec<(&str, &str)> = refused["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["field"].as_str().unwrap(), e["problem"].as_str().unwrap()))
        .collect();
    assert_eq!(problems, [("/days", "must be from 1 to 30 days"), ("/passengers", "must be from 1 to 9 persons")]);
    let tools = client.tools().await;
    let schema = &tools.iter().find(|t| t.name == "car_rental_search").unwrap().input_schema;
    let days = serde_json::to_string(schema).unwrap();
    assert!(days.contains("\"maximum\":30") && days.contains("\"title\":\"days\""), "{days}");
    assert!(!days.contains("x-toolgate"), "clients see standard JSON Schema: {days}");
}

/// A fresh directory for one test's files, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(what: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let dir = std::env::temp_dir().join(format!("toolgate-travel-{what}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Searches in `bus` as the traveller over a session; returns the client and the quote.
async fn quoted(url: &str) -> (TestClient, Value) {
    let client = TestClient::http_as(url, common::clients::Lifecycle::Session, Some(TRAVELLER)).await;
    client.ok("switch_domain", switch("bus")).await;
    let found = client.ok("bus_search", bus_search("bus")).await;
    (client, found)
}

/// The deadline is part of the quote: with the server killed (`kill -9`) before it and
/// started again on the same file after it, the quote is expired, and booking it says so
/// and since when. The restarted server commits the expiry once, as time's doing, and its
/// `entry` effect releases the quote's held seats once.
#[tokio::test]
async fn a_quote_lapses_while_the_server_is_down() {
    let dir = TempDir::new("lapse");
    let (store, audit, outbox) = (format!("sqlite:{}", dir.file("travel.db")), dir.file("audit.jsonl"), Outbox::new());
    let token = format!("traveller={TRAVELLER}");
    let holds = dir.file("holds.jsonl");
    let args = [
        "--holds-log",
        &holds,
        "--store",
        &store,
        "--after",
        "quoted=2s",
        "--audit-log",
        &audit,
        "--token",
        &token,
        "--otp-outbox",
        outbox.path(),
    ];
    let (mut first, url) = common::servers::spawn_http_example("travel", &args, &[]).await;
    let (client, found) = quoted(&url).await;
    let book = json!({ "domain": "bus", "quote_id": found["quote_id"], "offer_id": found["offers"][0]["id"] });
    // Within its time the quote books (as far as the code the traveller must give).
    let required = client.refused("bus_book", book.clone()).await;
    assert_eq!(required["code"], "CONFIRMATION_REQUIRED", "{required}");
    drop(client);
    first.kill().await.unwrap();

    tokio::time::sleep(std::time::Duration::from_millis(2_300)).await;
    let (_second, url) = common::servers::spawn_http_example("travel", &args, &[]).await;
    let client = TestClient::http_as(&url, common::clients::Lifecycle::Session, Some(TRAVELLER)).await;
    client.ok("switch_domain", switch("bus")).await;
    let refused = client.refused("bus_book", book).await;
    assert_eq!((refused["code"].as_str(), refused["current_state"].as_str()), (Some("FORBIDDEN"), Some("expired")));
    let expired_at = refused["expired_at"].as_str().expect("when it expired");
    assert!(expired_at.ends_with('Z') && expired_at.len() == 24, "{refused}");
    assert!(!refused["allowed_tools"].as_array().unwrap().contains(&json!("bus_book")), "{refused}");

    // The restarted server's sweep commits the expiry, once, at the time it was due.
    let mut lines = Vec::new();
    for _ in 0..40 {
        lines = common::timer_lines(&audit);
        if !lines.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(
        (line["from"].as_str(), line["to"].as_str(), line["event"].as_str(), line["time"].as_str()),
        (Some("quoted"), Some("expired"), Some("after PT2S"), Some(expired_at)),
        "{line}"
    );
    assert_eq!(line["instance"], found["quote_id"]);
    let quote = found["quote_id"].as_str().unwrap();
    let released = common::lines_naming(&holds, quote, std::time::Duration::from_millis(800)).await;
    assert_eq!(released, 1, "the hold was asked to be released {released} times (a repeat is a second dispatch)");
}

/// A quote nobody touches expires at about its time: the sweep commits it, and a session
/// listening hears its list change (2025-11-25: the focused quote's `bus_book` goes).
#[tokio::test]
async fn the_sweep_expires_a_quote_nobody_reads() {
    let dir = TempDir::new("sweep");
    let audit = dir.file("audit.jsonl");
    let token = format!("traveller={TRAVELLER}");
    let args = ["--after", "quoted=1s", "--audit-log", &audit, "--token", &token];
    let (_server, url) = common::servers::spawn_http_example("travel", &args, &[]).await;
    let (mut client, found) = quoted(&url).await;
    assert_eq!(client.tool_names().await, ["bus_book", "bus_search", "switch_domain"]);
    client.expect_list_changed().await; // the switch's
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    client.expect_list_changed().await;
    assert_eq!(client.tool_names().await, ["bus_search", "switch_domain"], "the expired quote books nothing");
    let lines = common::timer_lines(&audit);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!((lines[0]["instance"].clone(), lines[0]["to"].as_str()), (found["quote_id"].clone(), Some("expired")));
}

/// Two travellers of one tenant: a quote is its searcher's (`owner: principal`), and its
/// key is 128 random bits (`mint: "Q-{random}"`). The other traveller cannot book it or
/// tell it from a quote never made: the call, and the tools listed after it, answer
/// exactly what they answer for a key no search minted, byte for byte but for the key
/// itself. The searcher books it. (The history tool on an owned machine: `tests/owners.rs`.)
#[tokio::test]
async fn a_quote_is_its_searchers_alone() {
    let outbox = Outbox::new();
    let (alice_token, bob_token) = ("alice-token-0123456789", "bob-token-0123456789");
    let (alice_arg, bob_arg) = (format!("alice={alice_token}"), format!("bob={bob_token}"));
    let args = ["--token", &alice_arg, "--token", &bob_arg, "--otp-outbox", outbox.path()];
    let (_server, url) = common::servers::spawn_http_example("travel", &args, &[]).await;
    let session = |token| TestClient::http_as(&url, common::clients::Lifecycle::Session, Some(token));
    let (alice, mut bob) = (session(alice_token).await, session(bob_token).await);
    alice.ok("switch_domain", switch("bus")).await;
    let found = alice.ok("bus_search", bus_search("bus")).await;
    let quote = found["quote_id"].as_str().unwrap().to_string();
    let offer = found["offers"][0]["id"].as_str().unwrap().to_string();
    let random = quote.strip_prefix("Q-").expect("a quote id");
    assert!(random.len() == 26 && random.bytes().all(|b| matches!(b, b'a'..=b'z' | b'2'..=b'7')), "{quote}");
    let again = alice.ok("bus_search", bus_search("bus")).await;
    assert_ne!(again["quote_id"], found["quote_id"]);

    bob.ok("switch_domain", switch("bus")).await;
    bob.expect_list_changed().await;
    let never = "Q-aaaaaaaaaaaaaaaaaaaaaaaaaa";
    let calls = |key: &str| [("bus_book", json!({ "domain": "bus", "quote_id": key, "offer_id": offer }))];
    for ((tool, theirs), (_, unmade)) in calls(&quote).into_iter().zip(calls(never)) {
        let theirs = bob.try_call(tool, theirs).await.expect("an answer");
        let listed_after_theirs = bob.tool_names().await;
        let unmade = bob.try_call(tool, unmade).await.expect("an answer");
        let listed_after_unmade = bob.tool_names().await;
        let theirs = serde_json::to_string(&theirs).unwrap().replace(&quote, "<KEY>");
        let unmade = serde_json::to_string(&unmade).unwrap().replace(never, "<KEY>");
        assert_eq!(theirs, unmade, "{tool}: another's quote answers unlike a quote never made");
        assert!(theirs.contains("NOT_FOUND"), "{tool}: {theirs}");
        assert_eq!(listed_after_theirs, listed_after_unmade, "{tool}");
    }
    assert_eq!(bob.pending_list_changed(), 0, "naming another's quote changed what bob sees");

    // The searcher's own quote books.
    let book = json!({ "domain": "bus", "quote_id": quote, "offer_id": offer });
    let booked = confirmed(&alice, "bus_book", book, &outbox).await;
    assert_eq!(booked["state"], "booked");
}

/// kill -9 while an effect is dispatched — the expiry committed with its `release_hold`,
/// the attempt claimed, the carrier not yet answered — then a restart: the release is
/// dispatched again once, as its second attempt, and the carrier hears it once.
#[tokio::test]
async fn a_release_cut_off_by_kill_9_is_dispatched_once_after_a_restart() {
    let dir = TempDir::new("cut-off");
    let store = format!("sqlite:{}", dir.file("travel.db"));
    a_release_cut_off_by_kill_9_is_dispatched_once_after_a_restart_on(&store, &dir).await;
}

/// The same on Redis (`TOOLGATE_TEST_REDIS_URL`).
#[tokio::test]
async fn a_release_cut_off_by_kill_9_is_dispatched_once_after_a_restart_on_redis() {
    let Some(redis) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("SKIPPED: needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
        return;
    };
    let dir = TempDir::new("cut-off-redis");
    a_release_cut_off_by_kill_9_is_dispatched_once_after_a_restart_on(&redis, &dir).await;
}

async fn a_release_cut_off_by_kill_9_is_dispatched_once_after_a_restart_on(store: &str, dir: &TempDir) {
    let (audit, holds, outbox) = (dir.file("audit.jsonl"), dir.file("holds.jsonl"), Outbox::new());
    // A traveller of this run's own: a shared store keeps the searches' rate-limit windows.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let token = format!("traveller-{nanos}={TRAVELLER}");
    let args = [
        "--holds-log",
        &holds,
        "--store",
        store,
        "--after",
        "quoted=1s",
        "--effect-timeout",
        "1",
        "--audit-log",
        &audit,
        "--token",
        &token,
        "--otp-outbox",
        outbox.path(),
    ];
    let key = ("TOOLGATE_HANDLE_KEY", "travel-cut-off-handle-key-00000000000001");
    let slow = [key, ("TRAVEL_TEST_RELEASE_DELAY_MS", "10000")];
    let (mut first, url) = common::servers::spawn_http_example("travel", &args, &slow).await;
    let (_client, found) = quoted(&url).await;
    let quote = found["quote_id"].as_str().unwrap().to_string();
    for _ in 0..50 {
        if common::timer_lines(&audit).iter().any(|line| line["instance"] == quote.as_str()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The expiry is committed; its release claimed and under way (the carrier takes 10 s and
    // notes in `holds.asked` that it was asked).
    let asked_file = std::path::Path::new(&holds).with_extension("asked");
    for _ in 0..100 {
        if std::fs::read_to_string(&asked_file).unwrap_or_default().contains(&quote) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(std::fs::read_to_string(&asked_file).unwrap_or_default().contains(&quote), "the release was never asked");
    first.kill().await.unwrap();
    let asked = || -> Vec<Value> {
        let log = std::fs::read_to_string(&holds).unwrap_or_default();
        log.lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|l| l["quote"] == quote.as_str())
            .collect()
    };
    assert!(asked().is_empty(), "the carrier answered before the kill: {:?}", asked());

    let (_second, _url) = common::servers::spawn_http_example("travel", &args, &[key]).await;
    for _ in 0..60 {
        if !asked().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let asked = asked();
    assert_eq!(asked.len(), 1, "dispatched {} times after the restart: {asked:?}", asked.len());
    assert_eq!((asked[0]["attempt"].as_u64(), asked[0]["repeat"].as_bool()), (Some(2), Some(false)), "{asked:?}");
}

/// Effects are seen: an expired quote's release is counted as done.
#[tokio::test]
async fn effects_are_counted_by_outcome() {
    let dir = TempDir::new("effect-metrics");
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics = free.local_addr().unwrap().to_string();
    drop(free);
    let (holds, token) = (dir.file("holds.jsonl"), format!("traveller={TRAVELLER}"));
    let args =
        ["--holds-log", &holds, "--after", "quoted=1s", "--token", &token, "--metrics", &metrics, "--store", "memory"];
    let (_server, url) = common::servers::spawn_http_example("travel", &args, &[]).await;
    quoted(&url).await;
    let expected = r#"toolgate_effects_total{effect="release_hold",outcome="done"} 1"#;
    let mut rendered = String::new();
    for _ in 0..50 {
        rendered = reqwest::get(format!("http://{metrics}/metrics")).await.unwrap().text().await.unwrap();
        if rendered.lines().any(|line| line == expected) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("expected {expected} in:\n{rendered}");
}
