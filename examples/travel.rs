//! Three travel domains on one server, and an intent lock that keeps the model in the one
//! the user asked for.
//!
//! The user wants a long-distance bus; `car_rental_search` takes much the same parameters,
//! and a drifting model will call it. Here it cannot: every call is checked against the
//! flow's active domain, leaving a domain is an explicit `switch_domain` call with a
//! reason, and each session lists only its active domain's tools. Within a domain, a small
//! machine (`idle → quoted → booked`) makes search precede booking.
//!
//! Booking spends the traveller's money: every `*_book` tool is `transactional` and
//! confirmed with a one-time code. On stdio the traveller is the person at the terminal
//! (`traveller`, or `--stdio-principal NAME`); over HTTP a client presents a bearer token
//! (`--token NAME=SECRET`). The codes land in a development outbox,
//! `$TMPDIR/toolgate-travel-otp.jsonl` (or `--otp-outbox PATH`).
//!
//! ```text
//! cargo run --example travel                            # MCP over stdio
//! cargo run --example travel -- --http 127.0.0.1:8080 --token traveller=s3cret-traveller-token
//! ```

use chrono::Duration;
use toolgate::confirm::OutboxSender;
use toolgate::prelude::*;
use toolgate::types::{Count, Currency, DateTime, Days, Money, Persons};

/// Travellers: one to nine persons (the schema says so; the server refuses the rest).
type Passengers = Count<Persons, 1, 9>;

// One workflow, three machines: each domain has its own, so a quote in one domain does
// not unlock booking in another.
toolgate::machine! {
    id: ["bus", "flight", "car_rental"],
    initial: "idle",
    states: {
        idle:   { on: { QUOTE: "quoted" } },
        quoted: { on: { QUOTE: "quoted", BOOK: "booked" } },
        booked: { on: { QUOTE: "quoted" } },
    }
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

/// Offers found by a search.
#[derive(Debug, Serialize, JsonSchema)]
struct Offers {
    /// The offers, cheapest first; book one by its `id`.
    offers: Vec<Offer>,
}

/// One bookable offer.
#[derive(Debug, Serialize, JsonSchema)]
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

/// Which offer to book.
#[derive(Debug, Deserialize, JsonSchema)]
struct BookRequest {
    /// The `id` of an offer returned by this domain's search, e.g. `BUS-1-0`.
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
) -> Result<Offers, ToolError> {
    let base: u64 = route.bytes().map(u64::from).sum::<u64>() % 40 * 100 + 1_500;
    let euro = Currency::parse("EUR").map_err(ToolError::internal)?;
    let offers = operators
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
        .collect::<Result<_, ToolError>>()?;
    Ok(Offers { offers })
}

fn book(prefix: &str, request: BookRequest) -> Result<Booking, ToolError> {
    if !request.offer_id.starts_with(&format!("{prefix}-")) {
        return Err(ToolError::not_found(format!(
            "no offer `{}` in this domain; offers here look like `{prefix}-1-0` (search first)",
            request.offer_id
        )));
    }
    Ok(Booking { booking_id: format!("PNR-{}", request.offer_id), offer_id: request.offer_id })
}

/// Search long-distance bus departures between two cities.
#[action(domain = "bus", bind_state = ["idle", "quoted", "booked"], transition = "QUOTE", expensive, rate_limit = "30/minute",
         not_for = "booking (use bus_book), flights or rental cars")]
async fn search(input: TripSearch) -> Result<Offers, ToolError> {
    let route = format!("{}>{}", input.origin, input.destination);
    offers("BUS", ["ALSA", "FlixBus", "Avanza"], &route, input.departure, input.passengers)
}

/// Book a bus offer found by bus_search; the traveller confirms it with a one-time code. Does not search or change an earlier booking.
#[action(
    domain = "bus",
    bind_state = "quoted",
    transition = "BOOK",
    transactional,
    confirm = "otp",
    scope = "travel:book"
)]
async fn bus_book(input: BookRequest) -> Result<Booking, ToolError> {
    book("BUS", input)
}

/// Search flights between two cities.
#[action(domain = "flight", bind_state = ["idle", "quoted", "booked"], transition = "QUOTE", expensive, rate_limit = "30/minute",
         not_for = "booking (use flight_book), buses or rental cars")]
async fn flight_search(input: TripSearch) -> Result<Offers, ToolError> {
    let route = format!("{}>{}", input.origin, input.destination);
    offers("FLT", ["Iberia", "Vueling", "Air Europa"], &route, input.departure, input.passengers)
}

/// Book a flight offer found by flight_search; the traveller confirms it with a one-time code. Does not search or change an earlier booking.
#[action(
    domain = "flight",
    bind_state = "quoted",
    transition = "BOOK",
    transactional,
    confirm = "otp",
    scope = "travel:book"
)]
async fn flight_book(input: BookRequest) -> Result<Booking, ToolError> {
    book("FLT", input)
}

/// Search rental cars to pick up at one place.
#[action(domain = "car_rental", bind_state = ["idle", "quoted", "booked"], expensive, rate_limit = "30/minute",
         transition = "QUOTE", not_for = "booking (use car_rental_book), buses or flights")]
async fn car_rental_search(input: CarSearch) -> Result<Offers, ToolError> {
    let place = format!("{}/{}d", input.pickup_location, input.days.get());
    offers("CAR", ["Europcar", "Hertz", "Sixt"], &place, input.pickup_at, input.passengers)
}

/// Book a rental car offer found by car_rental_search; the traveller confirms it with a one-time code. Does not search or change an earlier booking.
#[action(
    domain = "car_rental",
    bind_state = "quoted",
    transition = "BOOK",
    transactional,
    confirm = "otp",
    scope = "travel:book"
)]
async fn car_rental_book(input: BookRequest) -> Result<Booking, ToolError> {
    book("CAR", input)
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    toolgate::Server::from_registry("travel")
        .version(env!("CARGO_PKG_VERSION"))
        .describe_domain("bus", "long-distance coach trips between cities")
        .describe_domain("flight", "flights between cities")
        .describe_domain("car_rental", "rental cars picked up at one place")
        .list_active_domain_only()
        // The person at the terminal books on stdio; `--stdio-principal` names another.
        .stdio_principal_with_every_scope("traveller")
        // Development: codes go to a file (`--otp-outbox PATH` to choose it). A real
        // deployment sends them by SMS or e-mail through an `OtpSender`.
        .otp_sender(OutboxSender::new(std::env::temp_dir().join("toolgate-travel-otp.jsonl")))
        .instructions("Travel search and booking. Call switch_domain first with the domain the user wants; search before booking.")
        .run_cli()
        .await
}
