//! The codes toolgate itself produces: one table gives each its variant and its spelling,
//! and the list a handler's own code may never equal.

/// Declares the codes toolgate produces, once: the [`Code`] enum, its spelling, and
/// [`RESERVED_CODES`] (published as `ToolError::RESERVED_CODES`) all come from this table.
macro_rules! codes {
    ($($(#[doc = $doc:literal])* $variant:ident = $code:literal,)*) => {
        /// A code toolgate itself produces.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum Code {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Code {
            /// The code as the model sees it in `structuredContent.code`.
            pub(crate) const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $code,)*
                }
            }
        }

        /// Every code toolgate itself produces, in the order of the table: what
        /// `ToolError::RESERVED_CODES` publishes.
        pub(super) const RESERVED_CODES: &[&str] = &[$($code),*];
    };
}

/// Whether `code` (a reply's `structuredContent.code`) is a step of a call rather than a
/// refusal of it: `CONFIRMATION_REQUIRED` asks for the code that completes the call, as the
/// flow means it to. The console's refusals page and `toolgate_refusals_total` leave these
/// out (the page counts them apart, as confirmations asked).
pub(crate) fn is_a_step(code: &str) -> bool {
    code == Code::ConfirmationRequired.as_str()
}

/// How a call ended, for a log pipeline (the `verdict` of its `tool_call` span), from its
/// reply's `code` (none for a success): `ok`; `failed` when the server could not serve it
/// (`INTERNAL`, `STORE_UNAVAILABLE`, `TIMEOUT`, and a context the store holds or a handler
/// set that does not fit), an operator's business; `refused` for every other code, one
/// the model acts on (a state, a guard, an argument, a limit, a confirmation asked, a
/// handler's own failure).
pub(crate) fn verdict(code: Option<&str>) -> &'static str {
    const FAILED: [Code; 5] =
        [Code::Internal, Code::StoreUnavailable, Code::Timeout, Code::ContextUnreadable, Code::ContextTooLarge];
    match code {
        None => "ok",
        Some(code) if FAILED.iter().any(|failed| failed.as_str() == code) => "failed",
        Some(_) => "refused",
    }
}

codes! {
    /// The tool exists but its machine's state does not allow it now.
    Forbidden = "FORBIDDEN",
    /// A guard of the transition refused the call on the instance's data.
    GuardFailed = "GUARD_FAILED",
    /// No domain is active yet (strict intent lock).
    DomainNotSelected = "DOMAIN_NOT_SELECTED",
    /// The tool's or the declared domain is not the active one.
    DomainMismatch = "DOMAIN_MISMATCH",
    /// One or more arguments are malformed.
    InvalidArgument = "INVALID_ARGUMENT",
    /// The thing the call refers to does not exist.
    NotFound = "NOT_FOUND",
    /// The tool needs an authenticated principal and the call has none.
    Unauthenticated = "UNAUTHENTICATED",
    /// The principal lacks a scope the tool requires.
    InsufficientScope = "INSUFFICIENT_SCOPE",
    /// The call must be confirmed with a one-time code.
    ConfirmationRequired = "CONFIRMATION_REQUIRED",
    /// A wrong, replayed, mismatched or expired confirmation.
    ConfirmationFailed = "CONFIRMATION_FAILED",
    /// Too many wrong codes.
    ConfirmationLocked = "CONFIRMATION_LOCKED",
    /// An idempotency key used before with other arguments.
    IdempotencyConflict = "IDEMPOTENCY_CONFLICT",
    /// A forged, foreign or gone flow handle.
    InvalidHandle = "INVALID_HANDLE",
    /// An expired flow handle.
    HandleExpired = "HANDLE_EXPIRED",
    /// Another transitioning call holds the instance or flow.
    FlowBusy = "FLOW_BUSY",
    /// A task holds the instance until it ends.
    TaskRunning = "TASK_RUNNING",
    /// The tool's rate limit is reached.
    RateLimited = "RATE_LIMITED",
    /// The handler ran past its deadline.
    Timeout = "TIMEOUT",
    /// The client cancelled the call.
    Cancelled = "CANCELLED",
    /// The call needs to ask the client something it cannot ask or the client cannot answer.
    InputUnavailable = "INPUT_UNAVAILABLE",
    /// The instance's stored context no longer reads as the declared type.
    ContextUnreadable = "CONTEXT_UNREADABLE",
    /// A handler set a context larger than an instance may hold.
    ContextTooLarge = "CONTEXT_TOO_LARGE",
    /// The flow store is down.
    StoreUnavailable = "STORE_UNAVAILABLE",
    /// A bug on the server side.
    Internal = "INTERNAL",
}
