//! What a model is told when the guards of a call's transition refuse it (`GUARD_FAILED`,
//! or what else their verdict means).

use crate::error::{GuardFailed, ToolError};
use crate::fsm::{GuardRefusal, Machine, Verdict};

/// The refusal of a call to `tool`, on `machine`'s `instance` (none: its flow) in state
/// `from`, by the first guard that refused it.
pub(super) fn refused(
    GuardRefusal { guard, verdict }: GuardRefusal,
    tool: &str,
    machine: &Machine,
    from: &str,
    instance: Option<String>,
) -> ToolError {
    let refused = |reason: String, reason_code: &str, hint: Option<String>| {
        ToolError::guard_failed(GuardFailed {
            tool: tool.to_string(),
            guard: guard.clone(),
            machine: machine.id().to_string(),
            current_state: from.to_string(),
            instance: instance.clone(),
            reason,
            reason_code: reason_code.to_string(),
            hint,
            retryable: false,
        })
    };
    match verdict {
        Verdict::Refuse(failure) => {
            refused(failure.message().to_string(), failure.code(), failure.hint().map(str::to_string))
        }
        Verdict::NoContext => refused(
            format!("{} has no data yet for the guard to judge", instance.as_deref().unwrap_or("the instance")),
            "NO_DATA",
            None,
        ),
        Verdict::ContextUnreadable(ty) => {
            ToolError::context_unreadable(machine.id(), instance.as_deref().unwrap_or_default(), ty)
        }
        Verdict::Pass | Verdict::InputUnreadable(_) => ToolError::internal(format_args!(
            "guard `{guard}` of machine `{}` cannot read the arguments of `{tool}` as its input type",
            machine.id(),
        )),
    }
}
