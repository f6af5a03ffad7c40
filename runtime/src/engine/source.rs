//! [`CallSource`]: where a call comes from, as the transports and the task runner hand it
//! to the engine.

use super::focus::{SessionFocus, Ticket};
use crate::flow::Origin;
use crate::gate::Requester;
use crate::telemetry::TraceParent;

/// Where a call comes from: its flow's origin, who is calling, and — for a session that
/// lists per connection — the session's focus and the call's ticket in it.
pub(crate) struct CallSource<'a> {
    pub(crate) origin: &'a Origin,
    pub(crate) caller: &'a Requester,
    pub(crate) session: Option<(&'a SessionFocus, Ticket)>,
    /// The W3C trace context the request carried in `_meta`, if any.
    pub(crate) trace: Option<TraceParent>,
}
