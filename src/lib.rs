//! toolgate
pub use toolgate_macros::{action, machine};
pub use toolgate_runtime::*;

/// prelude
pub mod prelude {
    pub use crate::{Ctx, ToolError, action, machine};
}

#[doc(hidden)]
pub mod __private {
    pub use toolgate_macros::__check_binding as check_binding;
    pub use toolgate_runtime::__private::*;
}
