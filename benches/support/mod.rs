//! What the benchmarks serve: the `light` tools as toolgate actions, and the same echo
//! tool as a hand-written rmcp `ServerHandler` (the floor toolgate is compared with).

#![allow(unreachable_pub)] // shared by bench binaries, which are crates of their own

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolgate::prelude::*;

toolgate::machine! {
    id: "light",
    initial: "off",
    states: {
        off: { on: { ON: "on" } },
        on:  { on: { OFF: "off" } },
    }
}

#[derive(Deserialize, Serialize, JsonSchema)]
pub struct Echo {
    /// Any text.
    pub text: String,
}

/// Echo the text back.
#[action(domain = "light")]
async fn echo(input: Echo, _ctx: Ctx) -> Result<Echo, ToolError> {
    Ok(input)
}

/// Switch the light on.
#[action(domain = "light", bind_state = "off", transition = "ON")]
async fn on(input: Echo, _ctx: Ctx) -> Result<Echo, ToolError> {
    Ok(input)
}

/// Switch the light off.
#[action(domain = "light", bind_state = "on", transition = "OFF")]
async fn off(input: Echo, _ctx: Ctx) -> Result<Echo, ToolError> {
    Ok(input)
}

/// Keyed lamps (in the `light` domain: one domain, none to select), one instance per id:
/// their transitions commit history entries.
mod lamp {
    use super::*;

    toolgate::machine! {
        id: "lamp",
        key: "id",
        initial: "off",
        states: {
            off: { on: { ON: "on" } },
            on:  { on: { OFF: "off" } },
        }
    }

    /// One lamp of many, by its id.
    #[derive(Deserialize, Serialize, JsonSchema)]
    pub struct LampRef {
        /// The lamp.
        #[schemars(pattern(r"^L-[0-9]+$"))]
        pub id: String,
    }

    /// Switch a lamp on: a keyed instance's transition, with its history entry.
    #[action(domain = "light", machine = "lamp", bind_state = "off", transition = "ON")]
    async fn lamp_on(input: LampRef, _ctx: Ctx) -> Result<LampRef, ToolError> {
        Ok(input)
    }

    /// Switch a lamp off.
    #[action(domain = "light", machine = "lamp", bind_state = "on", transition = "OFF")]
    async fn lamp_off(input: LampRef, _ctx: Ctx) -> Result<LampRef, ToolError> {
        Ok(input)
    }
}

/// Keyed dimmers, like lamps, but each instance keeps data (its context) that every
/// transition changes and commits with the state.
mod dimmer {
    use super::*;

    toolgate::machine! {
        id: "dimmer",
        key: "id",
        context: Dimmer,
        initial: "off",
        states: {
            off: { on: { ON: "on" } },
            on:  { on: { OFF: "off" } },
        }
    }

    /// A dimmer's data.
    #[derive(Debug, Default, Clone, Deserialize, Serialize, JsonSchema)]
    pub struct Dimmer {
        /// How many times it was switched.
        pub switched: u64,
        /// Its level, 0 to 100.
        pub level: u8,
    }

    /// Switch a dimmer on: a transition that commits the instance's data with its state.
    #[action(domain = "light", machine = "dimmer", bind_state = "off", transition = "ON")]
    async fn dimmer_on(
        input: super::lamp::LampRef,
        mut dimmer: InstanceMut<Dimmer>,
    ) -> Result<super::lamp::LampRef, ToolError> {
        dimmer.update(|d| {
            d.switched += 1;
            d.level = 100;
        })?;
        Ok(input)
    }

    /// Switch a dimmer off.
    #[action(domain = "light", machine = "dimmer", bind_state = "on", transition = "OFF")]
    async fn dimmer_off(
        input: super::lamp::LampRef,
        mut dimmer: InstanceMut<Dimmer>,
    ) -> Result<super::lamp::LampRef, ToolError> {
        dimmer.update(|d| {
            d.switched += 1;
            d.level = 0;
        })?;
        Ok(input)
    }
}

/// An order in toolgate's checked types: money, a count and an instant.
#[derive(Deserialize, Serialize, JsonSchema)]
pub struct Order {
    /// The price.
    pub price: toolgate::types::Money,
    /// How many lamps.
    pub lamps: toolgate::types::Count<toolgate::types::Items, 1, 100>,
    /// When.
    pub at: toolgate::types::DateTime,
}

/// Echo an order back (every field checked by its type).
#[action(domain = "light")]
async fn price(input: Order, _ctx: Ctx) -> Result<Order, ToolError> {
    Ok(input)
}

/// The floor: rmcp with a hand-written handler doing the same (de)serialization.
#[derive(Clone)]
pub struct Plain;

impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::to_value(schemars::schema_for!(Echo)).unwrap();
        let Value::Object(schema) = schema else { unreachable!() };
        Ok(ListToolsResult::with_all_items(vec![Tool::new("light_echo", "Echo the text back.", schema)]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let echo: Echo = serde_json::from_value(args).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        Ok(CallToolResult::structured(serde_json::to_value(echo).unwrap()).into())
    }
}

/// The arguments every benchmarked call sends.
pub fn args() -> Map<String, Value> {
    let Value::Object(args) = json!({ "domain": "light", "text": "hello" }) else { unreachable!() };
    args
}

/// A `tools/call` request for `tool` with [`args`] (an [`Order`] for `light_price`).
pub fn request(tool: &'static str) -> CallToolRequestParams {
    if tool == "light_price" {
        let Value::Object(order) = json!({
            "domain": "light",
            "price": { "amount": "12.50", "currency": "EUR" },
            "lamps": 3,
            "at": "2026-12-04T08:00:00+01:00",
        }) else {
            unreachable!()
        };
        return CallToolRequestParams::new(tool).with_arguments(order);
    }
    if tool.starts_with("light_lamp_") || tool.starts_with("light_dimmer_") {
        let Value::Object(lamp) = json!({ "domain": "light", "id": "L-1" }) else { unreachable!() };
        return CallToolRequestParams::new(tool).with_arguments(lamp);
    }
    CallToolRequestParams::new(tool).with_arguments(args())
}
