//! Guards (one branch, and the array form; named by path, by name, and by names imported
//! singly, renamed and by a glob) and delayed transitions, with actions bound.
use toolgate::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Quote {
    price: u64,
}

#[derive(Deserialize, JsonSchema)]
struct QuoteRef {
    quote_id: String,
    amount: u64,
}

mod rules {
    use super::{Quote, QuoteRef};
    use toolgate::Failure;

    pub(crate) fn small(quote: &Quote, _: &QuoteRef) -> Result<(), Failure> {
        if quote.price < 100 { Ok(()) } else { Err(Failure::new("LARGE", "needs a person")) }
    }
}

fn paid_in_full(quote: &Quote, input: &QuoteRef) -> Result<(), Failure> {
    if input.amount >= quote.price { Ok(()) } else { Err(Failure::new("SHORT", "not enough")) }
}

mod waivers {
    use super::{Quote, QuoteRef};
    use toolgate::Failure;

    pub(crate) fn free(quote: &Quote, _: &QuoteRef) -> Result<(), Failure> {
        if quote.price == 0 { Ok(()) } else { Err(Failure::new("NOT_FREE", "has a price")) }
    }

    pub(crate) fn tiny(quote: &Quote, _: &QuoteRef) -> Result<(), Failure> {
        if quote.price < 5 { Ok(()) } else { Err(Failure::new("NOT_TINY", "costs something")) }
    }
}

use waivers::tiny as negligible;
use waivers::*;

toolgate::machine! {
    id: "quote",
    key: "quote_id",
    context: Quote,
    initial: "quoted",
    states: {
        quoted: {
            after: { "PT15M": "expired", "P1D": "expired" },
            on: { BOOK: [{ target: "booked", guard: "rules::small" }, { target: "review" }] },
        },
        review: {
            on: {
                PAY: { target: "booked", guard: "paid_in_full" },
                WAIVE: [{ target: "booked", guard: "free" }, { target: "booked", guard: "negligible" }],
            },
            after: { "PT0.5S": "expired" },
        },
        booked: { type: "final" },
        expired: { type: "final" },
    }
}

/// Book a quote. Does not pay.
#[action(domain = "quote", bind_state = "quoted", transition = "BOOK")]
async fn quote_book(input: QuoteRef) -> Result<String, ToolError> {
    Ok(input.quote_id)
}

/// Pay a quote under review. Does not book.
#[action(domain = "quote", bind_state = "review", transition = "PAY")]
async fn quote_pay(input: QuoteRef) -> Result<String, ToolError> {
    Ok(input.quote_id)
}

fn main() {}
