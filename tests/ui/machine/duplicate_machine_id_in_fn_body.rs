// Two machines with one id, one declared in a function body and one in a module: one
// error, at both ids, whose name spells the id (`-` is written `_X2D_`). The action bound
// to the id adds none.
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

fn declarations() {
    toolgate::machine! {
        id: "purchase-order",
        initial: "draft",
        states: {
            draft: { on: { SUBMIT: "review" } },
            review: { type: "final" },
        }
    }
}

mod orders {
    toolgate::machine! {
        id: "purchase-order",
        initial: "draft",
        states: {
            draft: { on: { SUBMIT: "review" } },
            review: { type: "final" },
        }
    }
}

/// Submit a draft purchase order for review.
#[action(domain = "purchasing", machine = "purchase-order", bind_state = "draft", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {
    declarations();
}
