//! Three travel domains on one server, and an intent lock that keeps the model in the one
//! the user asked for.
//!
//! The user wants a long-distance bus; `car_rental_search` takes much the same parameters,
//! and a drifting model will call it. Here it cannot: every call is checked against the
//! flow's active domain, leaving a domain is an explicit `switch_domain` call with a
//! reason, and each session lists only its active domain's tools. Within a domain, a
//! search makes a quote (`quoted → booked`, or `expired` after fifteen minutes): booking
//! names a quote, so it follows a search, and a lapsed quote books nothing.
//!
//! Booking spends the traveller's money: every `*_book` tool is `transactional` and
//! confirmed with a one-time code. On stdio the traveller is the person at the terminal
//! (`traveller`, or `--stdio-principal NAME`); over HTTP a client presents a bearer token
//! (`--token NAME=SECRET`). The codes land in a development outbox,
//! `$TMPDIR/toolgate-travel-otp.jsonl` (or `--otp-outbox PATH`).
//!
//! A flight is booked only once the airline confirms the seat, which takes seconds
//! (`--airline-seconds N`, default 2): a client that opted in to MCP tasks gets a task for
//! the confirming call, and the quote is held (`TASK_RUNNING` for any other booking of it)
//! until the airline answers.
//!
//! A quote holds its seats with the carriers while it is `quoted`. When it expires — even
//! while the server is down, or on whichever replica gets there first — its `expired`
//! state's `entry` effect, `release_hold`, tells the carriers once (its idempotency key);
//! here the carriers are a file of released holds (`--holds-log PATH`, default
//! `$TMPDIR/toolgate-travel-holds.jsonl`).
//!
//! ```text
//! cargo run --example travel                            # MCP over stdio
//! cargo run --example travel -- --http 127.0.0.1:8080 --token traveller=s3cret-traveller-token
//! ```

use chrono::Duration;
use toolgate::confirm::OutboxSender;
use toolgate::effect::{EffectCall, EffectError};
#[path = "support/seconds.rs"]
mod seconds;

use toolgate::prelude::*;
use toolgate::types::{Count, Currency, DateTime, Days, Money, Persons};

/// Travellers: one to nine persons (the schema says so; the server refuses the rest).
type Passengers = Count<Persons, 1, 9>;

// One declaration, three machines: each domain's searches make quotes of its own, so a
// quote in one domain books nothing in another. A search creates a quote (its id minted
// by the store, 128 random bits, its offers kept as the quote's data); a quote is its
// searcher's: another traveller naming it is told what a quote never made gets. A quote
// lasts fifteen minutes, then it is expired and books nothing (`--after quoted=2s`
// shortens it, for a test), and its held seats are released (`release_hold`).
toolgate::machine! {
    id: ["bus", "flight", "car_rental"],
    key: "quote_id",
    owner: principal,
    mint: "Q-{random}",
    context: Quote,
    initial: "quoted",
    states: {
        quoted:  { after: { "PT15M": "expired" }, on: { BOOK: "booked" } },
        booked:  { type: "final" },
        expired: { type: "final", entry: release_hold },
    }
}

/// Where the carriers hear of released holds (`--holds-log PATH`).
static HOLDS_LOG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// `expired`'s `entry` effect: the seats an expired quote held go back on sale. The carrier
/// here is a file: a line per release it is asked for, and a release whose idempotency key
/// it has already seen (a repeated attempt) is noted as a repeat and changes nothing, as a
/// real carrier API would.
async fn release_hold(call: EffectCall) -> Result<(), EffectError> {
    let path = HOLDS_LOG.get_or_init(|| std::env::temp_dir().join("toolgate-travel-holds.jsonl"));
    // A slow carrier, for the fault tests: the process can be killed while it answers. It
    // notes that it was asked (`<holds-log>.asked`) so a test knows when to kill.
    if let Some(ms) = std::env::var("TRAVEL_TEST_RELEASE_DELAY_MS").ok().and_then(|ms| ms.parse().ok()) {
        use std::io::Write;
        let asked = path.with_extension("asked");
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(asked)?;
        let line = serde_json::json!({ "quote": call.instance(), "attempt": call.attempt() });
        // One write a line: `writeln!` on a `File` writes each piece of the JSON apart, and
        // a reader between them sees half a line.
        file.write_all(format!("{line}\n").as_bytes())?;
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let seen = std::fs::read_to_string(path).unwrap_or_default();
    let key = serde_json::to_string(call.key())?;
    let repeat = seen.lines().any(|line| line.contains(&format!("\"key\":{key}")));
    let line = serde_json::json!({
        "key": call.key(), "quote": call.instance(), "attempt": call.attempt(), "repeat": repeat,
    });
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    Ok(())
}

/// A quote's data: the offers its search found, kept with the quote in the store.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Quote {
    /// The offers, cheapest first.
    offers: Vec<Offer>,
}

/// A trip between two cities (bus and flight searches).
#[derive(Debug, Deserialize, JsonSchema)]
struct TripSearch {
    /// Departure city, e.g. `Madrid`.
    origin: String,
    /// Arrival city, e.g. `Valencia`.
    destination: String,
    /// Earliest departure, with its UTC offset.
    departure: DateTime,
    /// Number of travellers.
    passengers: Passengers,
}

/// A car to pick up somewhere.
#[derive(Debug, Deserialize, JsonSchema)]
struct CarSearch {
    /// Where to pick the car up, e.g. `Valencia Airport`.
    pickup_location: String,
    /// Pick-up time, RFC 3339 with its UTC offset, e.g. `2026-12-04T10:00:00+01:00`.
    pickup_at: DateTime,
    /// Rental length.
    days: Count<Days, 1, 30>,
    /// Number of travellers the car must seat.
    passengers: Passengers,
}

/// Offers found by a search: a quote, valid fifteen minutes.
#[derive(Debug, Serialize, JsonSchema)]
struct Offers {
    /// The quote: pass it to the domain's `*_book` tool with the offer's `id`.
    quote_id: String,
    /// The offers, cheapest first; book one by its `id`.
    offers: Vec<Offer>,
}

/// One bookable offer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Offer {
    /// Pass it to the domain's `*_book` tool.
    id: String,
    /// Who operates it.
    operator: String,
    /// When it leaves (or the car is ready), RFC 3339.
    starts_at: DateTime,
    /// Total price for all passengers.
    price: Money,
}

/// Which offer of which quote to book.
#[derive(Debug, Deserialize, JsonSchema)]
struct BookRequest {
    /// The quote this domain's search returned, e.g. `Q-burdkgatduohpyztunlbbhlja6`.
    #[schemars(pattern(r"^Q-[a-z2-7]{26}$"))]
    quote_id: String,
    /// The `id` of one of its offers, e.g. `BUS-1-0`.
    offer_id: String,
}

/// A confirmed booking.
#[derive(Debug, Serialize, JsonSchema)]
struct Booking {
    /// The booking reference.
    booking_id: String,
    /// The offer booked.
    offer_id: String,
}

/// Deterministic fake offers: three departures, two hours apart, priced from the route.
fn offers(
    prefix: &str,
    operators: [&str; 3],
    route: &str,
    starts: DateTime,
    persons: Passengers,
) -> Result<Vec<Offer>, ToolError> {
    let base: u64 = route.bytes().map(u64::from).sum::<u64>() % 40 * 100 + 1_500;
    let euro = Currency::parse("EUR").map_err(ToolError::internal)?;
    operators
        .iter()
        .enumerate()
        .map(|(i, operator)| {
            let starts_at = DateTime::try_from(*starts.as_chrono() + Duration::hours(2 * i as i64)).map_err(|_| {
                ToolError::invalid_argument("departure", "is too late: the offers would leave after the year 9999")
            })?;
            Ok(Offer {
                id: format!("{prefix}-{}-{i}", route.len()),
                operator: operator.to_string(),
                starts_at,
                price: Money::from_minor_units((base + 250 * i as u64) * u64::from(persons.get()), euro)
                    .map_err(ToolError::internal)?,
            })
        })
        .collect()
}

/// The new quote of `offers`: kept as its data, returned with its id.
fn quote(offers: Vec<Offer>, mut quote: InstanceMut<Quote>, ctx: &Ctx) -> Result<Offers, ToolError> {
    let quote_id = ctx.instance().unwrap_or_default().to_string();
    quote.set(Quote { offers: offers.clone() })?;
    Ok(Offers { quote_id, offers })
}

/// Books one offer of the quote (its data says which it has).
fn book(request: BookRequest, quote: Instance<Quote>) -> Result<Booking, ToolError> {
    let offers = quote.get().map(|q| q.offers.as_slice()).unwrap_or_default();
    if !offers.iter().any(|offer| offer.id == request.offer_id) {
        let ids: Vec<&str> = offers.iter().map(|offer| offer.id.as_str()).collect();
        return Err(ToolError::invalid_argument(
            "offer_id",
            format!("is not an offer of quote `{}`; its offers are {}", request.quote_id, ids.join(", ")),
        ));
    }
    Ok(Booking { booking_id: format!("PNR-{}-{}", request.quote_id, request.offer_id), offer_id: request.offer_id })
}

/// Search long-distance bus departures between two cities; the offers are a quote, valid 15 minutes.
#[action(
    domain = "bus",
    creates,
    expensive,
    rate_limit = "30/minute",
    not_for = "booking (use bus_book), flights or rental cars"
)]
async fn search(input: TripSearch, found: InstanceMut<Quote>, ctx: Ctx) -> Result<Offers, ToolError> {
    let route = format!("{}>{}", input.origin, input.destination);
    quote(offers("BUS", ["ALSA", "FlixBus", "Avanza"], &route, input.departure, input.passengers)?, found, &ctx)
}

/// Book a bus offer of a quote from bus_search; the traveller confirms it with a one-time code. Does not search or change an earlier booking.
#[action(
    domain = "bus",
    bind_state = "quoted",
    transition = "BOOK",
    transactional,
    confirm = "otp",
    scope = "travel:book"
)]
async fn bus_book(input: BookRequest, quote: Instance<Quote>) -> Result<Booking, ToolError> {
    book(input, quote)
}

/// Search flights between two cities; the offers are a quote, valid 15 minutes.
#[action(
    domain = "flight",
    creates,
    expensive,
    rate_limit = "30/minute",
    not_for = "booking (use flight_book), buses or rental cars"
)]
async fn flight_search(input: TripSearch, found: InstanceMut<Quote>, ctx: Ctx) -> Result<Offers, ToolError> {
    let route = format!("{}>{}", input.origin, input.destination);
    quote(offers("FLT", ["Iberia", "Vueling", "Air Europa"], &route, input.departure, input.passengers)?, found, &ctx)
}

/// How long an airline takes to confirm a seat (`--airline-seconds`).
#[derive(Debug, Clone, Copy)]
struct AirlineTime(std::time::Duration);

/// Book a flight offer of a quote from flight_search; the traveller confirms it with a one-time code, then the airline confirms the seat (seconds: run it as a task). Does not search or change an earlier booking.
#[action(
    domain = "flight",
    bind_state = "quoted",
    transition = "BOOK",
    transactional,
    confirm = "otp",
    scope = "travel:book",
    task = "optional"
)]
async fn flight_book(
    input: BookRequest,
    quote: Instance<Quote>,
    airline: State<AirlineTime>,
) -> Result<Booking, ToolError> {
    let booking = book(input, quote)?;
    // The airline's confirmation: nothing is committed until it answers.
    tokio::time::sleep(airline.0.0).await;
    Ok(booking)
}

/// Search rental cars to pick up at one place; the offers are a quote, valid 15 minutes.
#[action(
    domain = "car_rental",
    creates,
    expensive,
    rate_limit = "30/minute",
    not_for = "booking (use car_rental_book), buses or flights"
)]
async fn car_rental_search(input: CarSearch, found: InstanceMut<Quote>, ctx: Ctx) -> Result<Offers, ToolError> {
    let place = format!("{}/{}d", input.pickup_location, input.days.get());
    quote(offers("CAR", ["Europcar", "Hertz", "Sixt"], &place, input.pickup_at, input.passengers)?, found, &ctx)
}

/// Book a rental car offer of a quote from car_rental_search; the traveller confirms it with a one-time code. Does not search or change an earlier booking.
#[action(
    domain = "car_rental",
    bind_state = "quoted",
    transition = "BOOK",
    transactional,
    confirm = "otp",
    scope = "travel:book"
)]
async fn car_rental_book(input: BookRequest, quote: Instance<Quote>) -> Result<Booking, ToolError> {
    book(input, quote)
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    // `--airline-seconds N` and `--holds-log PATH` are this example's own; toolgate reads the rest.
    let mut args: Vec<String> = std::env::args().collect();
    let airline = AirlineTime(seconds::take_seconds(&mut args, "--airline-seconds", std::time::Duration::from_secs(2)));
    if let Some(path) = seconds::take_value(&mut args, "--holds-log") {
        let _ = HOLDS_LOG.set(path.into());
    }
    toolgate::Server::from_registry("travel")
        .state(airline)
        .version(env!("CARGO_PKG_VERSION"))
        .describe_domain("bus", "long-distance coach trips between cities")
        .describe_domain("flight", "flights between cities")
        .describe_domain("car_rental", "rental cars picked up at one place")
        .list_active_domain_only()
        // Strict: a model states which domain the user wants (switch_domain) before any
        // search, instead of the default's first call selecting it.
        .domain_policy(toolgate::DomainPolicy::Strict)
        // The person at the terminal books on stdio; `--stdio-principal` names another.
        .stdio_principal_with_every_scope("traveller")
        // A travel agent (`travel:agent`) acts on every traveller's quotes in its
        // tenant (booking one still takes `travel:book`); everyone else sees only their own.
        .owned_instances_managed_by("bus", ["travel:agent"])
        .owned_instances_managed_by("flight", ["travel:agent"])
        .owned_instances_managed_by("car_rental", ["travel:agent"])
        // Development: codes go to a file (`--otp-outbox PATH` to choose it). A real
        // deployment sends them by SMS or e-mail through an `OtpSender`.
        .otp_sender(OutboxSender::new(std::env::temp_dir().join("toolgate-travel-otp.jsonl")))
        .instructions("Travel search and booking. Call switch_domain first with the domain the user wants; search, then book an offer of the quote within 15 minutes.")
        .run_cli_from(args)
        .await
}
