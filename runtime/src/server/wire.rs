//! What reaches rmcp is one well-formed JSON-RPC message: a body or a line that is not
//! JSON, holds an object with a member named twice, nests too deeply, holds more members
//! than a message may, has an id rmcp cannot read, or is not a single JSON-RPC 2.0 message
//! (a batch, `[]`, a string) is answered here, with the JSON-RPC error the specification
//! names — `-32700` (parse error) or `-32600` (invalid request), with HTTP 400 — and never
//! reaches a handler. The check is linear in the message: names are compared one by one
//! only in small objects, hashed in larger ones, and the walk stops at the member bounds.
//! The check itself knows no transport: `json_check.rs` runs it as the HTTP front's layer
//! (the body read within the read timeout, and what the message is deciding two caps: a
//! `subscriptions/listen` stream takes a place among the live streams, an `initialize` past
//! the session cap is answered 503), `stdio.rs` on every stdin line.
//!
//! Duplicate members matter beyond tidiness: JSON leaves their meaning open, serde keeps
//! the last value and many proxies the first, so a gateway that inspected
//! `{"amount": 1, "amount": 9000}` would have approved another call than the one served.
//!
//! A well-formed message whose params rmcp cannot read as its method's lands in
//! `on_custom_request`, which asks [`invalid_params`] what is wrong with them (`-32602`,
//! naming the member), or learns the method is not one this server serves (`-32601`).
//!
//! rmcp answers these itself otherwise, with 415 and serde's text over HTTP, and on stdio
//! not at all (an unparsable request then never gets a reply). `docs/upstream.md` has the
//! report.

use crate::error::jsonrpc;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;

use axum::response::Response;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Objects and arrays nested deeper than this are refused (serde_json itself stops at 128).
pub(crate) const MAX_DEPTH: usize = 64;

/// An object with more members than this is refused (`-32600`): no tool's arguments need
/// more, and every member is work for each check after this one.
pub const MAX_MEMBERS_PER_OBJECT: usize = 1_024;

/// A message whose objects hold more members than this in all is refused (`-32600`).
pub const MAX_MEMBERS_PER_MESSAGE: usize = 8_192;

/// Up to this many members, an object's names are compared one by one (held inline,
/// without allocating); past it they go into a hash set, so duplicate detection stays
/// linear in the number of members.
const NAMES_INLINE: usize = 8;

/// The JSON-RPC code for a body that is not JSON (or not one meaning of it).
const PARSE_ERROR: i32 = -32700;
/// The JSON-RPC code for JSON that is not one JSON-RPC 2.0 message.
const INVALID_REQUEST: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;

/// Why a message was refused: its JSON-RPC error, and the `id` to answer with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    code: i32,
    message: String,
    id: Value,
}

impl Refusal {
    /// Its error response, one line of JSON.
    pub(crate) fn body(&self) -> String {
        let id = serde_json::to_string(&self.id).unwrap_or_else(|_| "null".to_string());
        jsonrpc::body(&id, &self.error())
    }

    fn error(&self) -> rmcp::model::ErrorData {
        jsonrpc::error(self.code, self.message.clone(), None)
    }
}

/// Checks that `bytes` is one JSON-RPC 2.0 message with no object member named twice, no
/// nesting deeper than [`MAX_DEPTH`] and no more members than [`MAX_MEMBERS_PER_OBJECT`]
/// and [`MAX_MEMBERS_PER_MESSAGE`] allow, in one pass that keeps nothing of the message but
/// its top-level shape (rmcp parses it afterwards).
pub(crate) fn check(bytes: &[u8]) -> Result<Message, Refusal> {
    check_counting(bytes).0
}

/// What a well-formed message is, as far as the HTTP layer needs to know.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    /// Its id (`null` for a notification or a response without one).
    pub(crate) id: Value,
    /// Whether it is a `subscriptions/listen` request, which holds a stream open.
    pub(crate) listens: bool,
    /// Whether it is an `initialize` request, which may open a session.
    pub(crate) initializes: bool,
}

/// [`check`], and how many member names it compared or hashed: the work it did on the
/// message's objects, which is at most a constant times the number of members.
pub(crate) fn check_counting(bytes: &[u8]) -> (Result<Message, Refusal>, usize) {
    let tally = Tally::default();
    let outcome = check_with(bytes, &tally);
    (outcome, tally.comparisons.get())
}

fn check_with(bytes: &[u8], tally: &Tally) -> Result<Message, Refusal> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let walked = Walk { depth: 0, tally, keep_text: false, params: false }.deserialize(&mut reader).and_then(|kind| {
        reader.end()?;
        Ok(kind)
    });
    let top = match walked {
        Ok(top) => top,
        Err(error) => {
            let (code, message) = match tally.problem.take() {
                Some(Problem::TooMany(message)) => (INVALID_REQUEST, format!("Invalid Request: {message}")),
                Some(Problem::Malformed(problem)) => (PARSE_ERROR, format!("Parse error: {problem}")),
                None if error.is_eof() => (PARSE_ERROR, "Parse error: the message ends before its JSON does".into()),
                None => {
                    (PARSE_ERROR, format!("Parse error: not JSON (line {}, column {})", error.line(), error.column()))
                }
            };
            // A message too large in members is still one message: its id, if read, is echoed.
            let id = if code == INVALID_REQUEST { tally.top_id.take() } else { None };
            return Err(Refusal { code, message, id: id.unwrap_or(Value::Null) });
        }
    };
    let Kind::Object(Some(message)) = top else {
        let message = match top {
            Kind::Array => "Invalid Request: one JSON-RPC message per request; batches are not supported",
            _ => "Invalid Request: a JSON-RPC message is an object",
        };
        return Err(Refusal { code: INVALID_REQUEST, message: message.into(), id: Value::Null });
    };
    let id = message.id.clone().unwrap_or(Value::Null);
    let invalid = |message: &str| Err(Refusal { code: INVALID_REQUEST, message: message.to_string(), id: id.clone() });
    if !message.jsonrpc_2_0 {
        return invalid("Invalid Request: `jsonrpc` must be \"2.0\"");
    }
    if !message.string_method && !message.result_or_error {
        return invalid("Invalid Request: a message has a string `method`, or a `result` or an `error`");
    }
    if message.bad_params {
        return invalid("Invalid Request: `params` must be an object");
    }
    if message.bad_id {
        return invalid("Invalid Request: `id` must be a string or an integer (at most 64 bits)");
    }
    if let Some(problem) = tally.invalid_params.take() {
        return Err(Refusal { code: INVALID_PARAMS, message: format!("Invalid params: {problem}"), id });
    }
    Ok(Message { id, listens: message.listens, initializes: message.initializes })
}

/// What a JSON value is, as far as the message's shape needs to know.
enum Kind {
    /// An object; what its members say, for the top-level one only.
    Object(Option<Box<Members>>),
    Array,
    /// What it says, and its text for a member of the top-level object (an id).
    Str(Said, Option<String>),
    Number(Value),
    Other(bool),
}

/// The strings a message's shape depends on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Said {
    /// `"2.0"`, the only `jsonrpc`.
    Version2,
    /// `"subscriptions/listen"`, the method that holds a stream open.
    Listen,
    /// `"initialize"`, the method that may open a session.
    Initialize,
    Other,
}

/// What the top-level object's members say about it (only the top level's are read).
#[derive(Default)]
struct Members {
    jsonrpc_2_0: bool,
    string_method: bool,
    /// A `subscriptions/listen` request.
    listens: bool,
    /// An `initialize` request.
    initializes: bool,
    result_or_error: bool,
    bad_params: bool,
    bad_id: bool,
    /// The request's id, when it is a string or a number.
    id: Option<Value>,
}

/// Why the walk stopped.
enum Problem {
    /// Not one meaning of JSON (a member named twice, nesting too deep): `-32700`.
    Malformed(String),
    /// JSON, but more of it than a message may hold: `-32600`.
    TooMany(String),
}

/// What one walk of a message shares across its levels.
#[derive(Default)]
struct Tally {
    problem: RefCell<Option<Problem>>,
    /// Members read so far, in every object of the message.
    members: Cell<usize>,
    /// Member names compared or hashed so far: the work duplicate detection did.
    comparisons: Cell<usize>,
    /// The top-level `id` once read, to echo if the message is refused afterwards.
    top_id: RefCell<Option<Value>>,
    /// What is wrong with a member of `params` every method reads alike (`_meta`, `taskId`).
    invalid_params: Cell<Option<&'static str>>,
}

impl Tally {
    fn fail<E: de::Error>(&self, problem: Problem) -> E {
        *self.problem.borrow_mut() = Some(problem);
        E::custom("refused")
    }
}

/// The member names of one object so far: compared one by one while there are few (held
/// inline), hashed past [`NAMES_INLINE`], so finding a duplicate is linear in the members.
enum Names<'de> {
    Few(smallvec::SmallVec<[Cow<'de, str>; NAMES_INLINE]>),
    Many(HashSet<Cow<'de, str>>),
}

impl<'de> Names<'de> {
    /// Adds `name`, or gives it back if the object already had it. Counts the work in
    /// `comparisons`.
    fn insert(&mut self, name: Cow<'de, str>, comparisons: &Cell<usize>) -> Result<(), Cow<'de, str>> {
        match self {
            Names::Few(names) => {
                comparisons.set(comparisons.get() + names.len());
                if names.contains(&name) {
                    return Err(name);
                }
                if names.len() < NAMES_INLINE {
                    names.push(name);
                } else {
                    comparisons.set(comparisons.get() + names.len() + 1);
                    let mut set: HashSet<_> = names.drain(..).collect();
                    set.insert(name);
                    *self = Names::Many(set);
                }
                Ok(())
            }
            Names::Many(set) => {
                comparisons.set(comparisons.get() + 1);
                if set.contains(&name) {
                    return Err(name);
                }
                set.insert(name);
                Ok(())
            }
        }
    }
}

/// The top-level members whose values say what the message is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TopField {
    Jsonrpc,
    Method,
    ResultOrError,
    Params,
    Id,
    /// Any other member, and every member below the top level.
    Other,
}

/// The members of the top-level `params` with a type whatever the method.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ParamField {
    /// `_meta`: an object (or null, which clients send for none).
    Meta,
    /// `taskId`: a string.
    TaskId,
    Other,
}

impl ParamField {
    fn of(name: &str) -> Self {
        match name {
            "_meta" => Self::Meta,
            "taskId" => Self::TaskId,
            _ => Self::Other,
        }
    }

    /// What is wrong with `value` as this member, in words.
    fn problem(self, value: &Kind) -> Option<&'static str> {
        match (self, value) {
            (Self::Meta, Kind::Object(_) | Kind::Other(true)) | (Self::TaskId, Kind::Str(..)) | (Self::Other, _) => {
                None
            }
            (Self::Meta, _) => Some("`params._meta` must be an object"),
            (Self::TaskId, _) => Some("`params.taskId` must be a string"),
        }
    }
}

impl TopField {
    fn of(name: &str) -> Self {
        match name {
            "jsonrpc" => Self::Jsonrpc,
            "method" => Self::Method,
            "result" | "error" => Self::ResultOrError,
            "params" => Self::Params,
            "id" => Self::Id,
            _ => Self::Other,
        }
    }
}

/// Walks a JSON value without keeping it, failing on a member named twice in one object,
/// on nesting deeper than [`MAX_DEPTH`] or on too many members, and saying which in the
/// tally's `problem`; of the top-level `params`, notes a `_meta` that is not an object
/// and a `taskId` that is not a string (whatever the method, MCP gives them one type).
#[derive(Clone, Copy)]
struct Walk<'p> {
    depth: usize,
    tally: &'p Tally,
    /// Whether a string here is kept (the top-level `id`, to echo in a refusal).
    keep_text: bool,
    /// Whether this is the top-level `params`.
    params: bool,
}

impl<'p> Walk<'p> {
    fn deeper<E: de::Error>(&self) -> Result<Walk<'p>, E> {
        if self.depth >= MAX_DEPTH {
            return Err(self.tally.fail(Problem::Malformed(format!("nested deeper than {MAX_DEPTH} levels"))));
        }
        Ok(Walk { depth: self.depth + 1, tally: self.tally, keep_text: false, params: false })
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = Kind;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Kind, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// An object member's name, borrowed from the message unless it has escapes.
struct Name<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(name)))
            }
            fn visit_str<E>(self, name: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(name.to_string())))
            }
        }
        deserializer.deserialize_str(Visit)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = Kind;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Kind, E> {
        Ok(Kind::Other(false))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Kind, E> {
        Ok(Kind::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Kind, E> {
        // An id is a 64-bit signed integer to rmcp; a larger one is no id.
        Ok(i64::try_from(n).map_or(Kind::Other(false), |n| Kind::Number(n.into())))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Kind, E> {
        // An integer in float form (`1.0`, `1e2`) is one an f64 holds exactly; `1.5` is not.
        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
        if n.fract() == 0.0 && n.abs() < EXACT { Ok(Kind::Number((n as i64).into())) } else { Ok(Kind::Other(false)) }
    }
    fn visit_str<E>(self, text: &str) -> Result<Kind, E> {
        // Only the top-level `id` is kept, to echo; no other text.
        let said = match text {
            "2.0" => Said::Version2,
            "subscriptions/listen" => Said::Listen,
            "initialize" => Said::Initialize,
            _ => Said::Other,
        };
        Ok(Kind::Str(said, self.keep_text.then(|| text.chars().take(256).collect())))
    }
    fn visit_unit<E>(self) -> Result<Kind, E> {
        Ok(Kind::Other(true))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Kind, A::Error> {
        let inner = self.deeper()?;
        while items.next_element_seed(Walk { keep_text: false, ..inner })?.is_some() {}
        Ok(Kind::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Kind, A::Error> {
        let inner = self.deeper()?;
        let top = self.depth == 0;
        let mut shape = Members::default();
        let mut names = Names::Few(smallvec::SmallVec::new());
        let mut count = 0;
        while let Some(Name(name)) = members.next_key::<Name<'de>>()? {
            count += 1;
            let total = self.tally.members.get() + 1;
            self.tally.members.set(total);
            if count > MAX_MEMBERS_PER_OBJECT {
                let message = format!("an object has more than {MAX_MEMBERS_PER_OBJECT} members");
                return Err(self.tally.fail(Problem::TooMany(message)));
            }
            if total > MAX_MEMBERS_PER_MESSAGE {
                let message = format!("the message has more than {MAX_MEMBERS_PER_MESSAGE} object members in all");
                return Err(self.tally.fail(Problem::TooMany(message)));
            }
            let field = if top { TopField::of(&name) } else { TopField::Other };
            let param = if self.params { ParamField::of(&name) } else { ParamField::Other };
            if let Err(name) = names.insert(name, &self.tally.comparisons) {
                let shown: String = name.chars().take(64).collect();
                let problem = format!("the member `{shown}` appears twice in one object");
                return Err(self.tally.fail(Problem::Malformed(problem)));
            }
            let value = members.next_value_seed(Walk {
                keep_text: field == TopField::Id,
                params: field == TopField::Params,
                ..inner
            })?;
            if let Some(problem) = param.problem(&value) {
                self.tally.invalid_params.set(Some(problem));
            }
            match (field, value) {
                (TopField::Other, _) => {}
                (TopField::Jsonrpc, Kind::Str(said, _)) => shape.jsonrpc_2_0 = said == Said::Version2,
                (TopField::Jsonrpc, _) => {}
                (TopField::Method, Kind::Str(said, _)) => {
                    shape.string_method = true;
                    shape.listens = said == Said::Listen;
                    shape.initializes = said == Said::Initialize;
                }
                (TopField::Method, _) => {}
                (TopField::ResultOrError, _) => shape.result_or_error = true,
                (TopField::Params, Kind::Object(_) | Kind::Other(true)) => {}
                (TopField::Params, _) => shape.bad_params = true,
                (TopField::Id, id) => {
                    match id {
                        Kind::Number(id) => shape.id = Some(id),
                        Kind::Str(_, text) => shape.id = text.map(Value::String),
                        _ => shape.bad_id = true,
                    }
                    *self.tally.top_id.borrow_mut() = shape.id.clone();
                }
            }
        }
        Ok(Kind::Object(top.then(|| Box::new(shape))))
    }
}

impl Refusal {
    /// A refusal as an HTTP answer with `status` and its JSON-RPC error as the body.
    pub(crate) fn answer(&self, status: http::StatusCode) -> Response {
        jsonrpc::answer(status, &self.id, &self.error(), &[])
    }

    /// `-32600` for a message too large to be read.
    pub(crate) fn too_large(max_bytes: usize) -> Self {
        let message = format!("Invalid Request: the body is larger than this server accepts ({max_bytes} bytes)");
        Refusal { code: INVALID_REQUEST, message, id: Value::Null }
    }

    /// `-32600` for a well-formed message rmcp does not read (its own checks differ),
    /// answering `id`.
    pub(crate) fn not_understood(id: Value) -> Self {
        let message = "Invalid Request: not a JSON-RPC message this server understands".to_string();
        Refusal { code: INVALID_REQUEST, message, id }
    }

    /// `-32600` for a message that did not arrive within the read timeout.
    pub(crate) fn too_slow(timeout: std::time::Duration) -> Self {
        let message = format!("Invalid Request: the body did not arrive within {} s", timeout.as_secs_f64());
        Refusal { code: INVALID_REQUEST, message, id: Value::Null }
    }
}

/// For a method this server serves, what is wrong with `params` (which rmcp could not
/// read as that method's); `None` for a method it does not serve. Says which member is
/// wrong in words, never with serde's text.
#[allow(deprecated)] // logging/setLevel: deprecated by SEP-2577, still served
pub(super) fn invalid_params(method: &str, params: serde_json::Value) -> Option<String> {
    use rmcp::model::{
        CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, PaginatedRequestParams,
        ReadResourceRequestParams, SetLevelRequestParams, SubscribeRequestParams,
    };
    fn reads<T: serde::de::DeserializeOwned>(params: serde_json::Value) -> Result<(), serde_json::Error> {
        serde_json::from_value::<T>(params).map(drop)
    }
    let read = match method {
        "tools/call" => reads::<CallToolRequestParams>(params.clone()),
        "resources/read" => reads::<ReadResourceRequestParams>(params.clone()),
        "resources/subscribe" | "resources/unsubscribe" => reads::<SubscribeRequestParams>(params.clone()),
        "prompts/get" => reads::<GetPromptRequestParams>(params.clone()),
        "completion/complete" => reads::<CompleteRequestParams>(params.clone()),
        "logging/setLevel" => reads::<SetLevelRequestParams>(params.clone()),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            reads::<Option<PaginatedRequestParams>>(params.clone())
        }
        "initialize" | "ping" | "server/discover" | "subscriptions/listen" => Ok(()),
        _ => return None,
    };
    let Some(object) = params.as_object() else {
        return Some("params must be an object".to_string());
    };
    let named = |field: &str, kind: &str| -> Option<String> {
        match object.get(field) {
            None if kind == "string" => Some(format!("`{field}` is required")),
            Some(value) if kind == "string" && !value.is_string() => Some(format!("`{field}` must be a string")),
            Some(value) if kind == "object" && !value.is_object() && !value.is_null() => {
                Some(format!("`{field}` must be an object"))
            }
            _ => None,
        }
    };
    let specific = match method {
        "tools/call" => named("name", "string").or_else(|| named("arguments", "object")),
        "prompts/get" => named("name", "string").or_else(|| named("arguments", "object")),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => named("uri", "string"),
        "completion/complete" => named("ref", "object").or_else(|| named("argument", "object")),
        _ => None,
    };
    Some(specific.unwrap_or_else(|| match read {
        Ok(()) => "the params do not match the method".to_string(),
        Err(_) => "a member is missing or has the wrong type".to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(text: &str) -> (i32, String, Value) {
        let refusal = check(text.as_bytes()).expect_err(text);
        (refusal.code, refusal.message, refusal.id)
    }

    #[test]
    fn one_well_formed_message_passes() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":2}]}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":null}"#,
        ] {
            assert!(check(text.as_bytes()).is_ok(), "{text}");
        }
    }

    #[test]
    fn what_is_not_json_is_a_parse_error_without_serde_text() {
        for text in ["", "not json", r#"{"jsonrpc":"2.0","id":1,"#, r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#] {
            let (code, message, id) = refused(text);
            assert_eq!((code, &id), (PARSE_ERROR, &Value::Null), "{text}");
            assert!(message.starts_with("Parse error:") && !message.contains("expected"), "{text}: {message}");
        }
    }

    #[test]
    fn a_member_named_twice_at_any_depth_is_a_parse_error() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":{"amount":1,"amount":9000}}}"#,
        ] {
            let (code, message, _) = refused(text);
            assert_eq!(code, PARSE_ERROR);
            assert!(message.contains("appears twice"), "{message}");
        }
        // Past the names held inline: the twelfth member repeats the first.
        let members: Vec<String> = (0..11).map(|i| format!(r#""m{i}":{i}"#)).collect();
        let many = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{{},"m0":0}}}}}}"#,
            members.join(",")
        );
        assert!(refused(&many).1.contains("the member `m0` appears twice"));
    }

    #[test]
    fn deep_nesting_is_refused_before_serde_json_gives_up() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let (code, message, _) = refused(&deep);
        assert_eq!(code, PARSE_ERROR);
        assert!(message.contains("nested deeper than 64"), "{message}");
        let shallow = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(50),
            "]".repeat(50)
        );
        assert!(check(shallow.as_bytes()).is_ok());
    }

    #[test]
    fn a_meta_or_task_id_of_the_wrong_type_is_invalid_params_with_its_id() {
        for text in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":[]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":7}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tasks/cancel","params":{"taskId":null}}"#,
        ] {
            let (code, _, answered) = refused(text);
            assert_eq!((code, answered), (INVALID_PARAMS, json!(7)), "{text}");
        }
        // Null `_meta` is no `_meta`; below `params`, the names mean nothing to the check.
        for text in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"_meta":1,"taskId":2}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"t-1","_meta":{}}}"#,
        ] {
            assert!(check(text.as_bytes()).is_ok(), "{text}");
        }
    }

    #[test]
    fn json_that_is_not_one_message_is_an_invalid_request_with_its_id() {
        for (text, id) in [
            ("[]", Value::Null),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null),
            (r#""ping""#, Value::Null),
            (r#"{"foo":1}"#, Value::Null),
            (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3)),
            (r#"{"jsonrpc":"2.0","id":"x","method":"ping","params":[1]}"#, json!("x")),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Value::Null),
        ] {
            let (code, _, answered) = refused(text);
            assert_eq!((code, answered), (INVALID_REQUEST, id), "{text}");
        }
    }

    /// `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{…}}}`
    /// with `members` distinct members in its arguments.
    fn call_with_members(members: usize) -> String {
        let members: Vec<String> = (0..members).map(|i| format!(r#""m{i}":0"#)).collect();
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{{}}}}}}}"#,
            members.join(",")
        )
    }

    #[test]
    fn duplicate_detection_is_linear_in_the_members() {
        // The work per member stays below a small constant however many there are: a
        // linear scan per member would do ~members²/2 comparisons (500k for 1,000).
        for members in [8, 9, 100, 1_000, MAX_MEMBERS_PER_OBJECT] {
            let (outcome, comparisons) = check_counting(call_with_members(members).as_bytes());
            assert!(outcome.is_ok(), "{members} members");
            assert!(comparisons <= 4 * (members + 8), "{members} members: {comparisons} comparisons");
        }
        // A duplicate far past the inline names is still found.
        let late = call_with_members(900).replace(r#""m899":0"#, r#""m3":0"#);
        assert!(refused(&late).1.contains("the member `m3` appears twice"));
    }

    #[test]
    fn too_many_members_is_an_invalid_request_with_its_id() {
        let (code, message, id) = refused(&call_with_members(MAX_MEMBERS_PER_OBJECT + 1));
        assert_eq!((code, id), (INVALID_REQUEST, json!(1)));
        assert!(message.contains("more than 1024 members"), "{message}");
        // Many objects, each under the per-object bound, over the message's bound.
        let object: Vec<String> = (0..1_000).map(|i| format!(r#""m{i}":0"#)).collect();
        let object = format!("{{{}}}", object.join(","));
        let many = format!(
            r#"{{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{{"name":"x","arguments":{{"a":[{}]}}}}}}"#,
            vec![object; 9].join(",")
        );
        let (code, message, id) = refused(&many);
        assert_eq!((code, id), (INVALID_REQUEST, json!("big")));
        assert!(message.contains("more than 8192 object members"), "{message}");
    }

    /// A body near the 4 MiB limit made of members is refused after a bounded amount of
    /// work: the bound stops the walk, and what was compared before it is linear.
    #[test]
    fn a_four_mib_body_of_members_costs_bounded_work() {
        let body = call_with_members(400_000);
        assert!(body.len() > 4_000_000, "{}", body.len());
        let (outcome, comparisons) = check_counting(body.as_bytes());
        assert_eq!(outcome.unwrap_err().code, INVALID_REQUEST);
        assert!(comparisons <= 4 * (MAX_MEMBERS_PER_OBJECT + 8), "{comparisons} comparisons");
    }

    #[test]
    fn an_id_rmcp_cannot_read_is_an_invalid_request() {
        for id in ["1.5", "18446744073709551616", "123456789012345678901234567890", "9223372036854775808", "true"] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let (code, message, _) = refused(&text);
            assert_eq!(code, INVALID_REQUEST, "{id}");
            assert!(message.contains("`id` must be"), "{id}: {message}");
        }
        for id in ["1", "-7", "9223372036854775807", "1.0", "1e2", r#""x""#] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert!(check(text.as_bytes()).is_ok(), "{id}");
        }
    }
}
