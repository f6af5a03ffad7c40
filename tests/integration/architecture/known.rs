//! The ratchet: today's findings of each layering rule, which issue 54 removes. A test
//! fails on a finding missing here (a new violation) and on a line here whose finding is
//! gone (delete the line: the lists only shrink).

/// issue 54: to remove.
pub(super) const ROOM_CYCLES: &[&str] = &[
];

/// issue 54: to remove.
pub(super) const FOLDER_CYCLES: &[&str] = &[
    "server/: builder/ → catalog.rs → mod.rs → builder/",
    "server/: builder/ → front/ → cli/ → builder/",
    "server/: builder/ → mod.rs → builder/",
    "server/: builder/ → mod.rs → cli/ → builder/",
    "server/: catalog.rs → mod.rs → catalog.rs",
    "server/: catalog.rs → mod.rs → connection/ → catalog.rs",
    "server/: cli/ → front/ → cli/",
    "server/: connection/ → mod.rs → connection/",
    "server/: connection/ → mod.rs → front/ → connection/",
    "server/: connection/ → rounds.rs → mod.rs → connection/",
    "server/: front/ → mod.rs → front/",
    "server/cli/: args.rs → mod.rs → args.rs",
    "server/cli/: args.rs → mod.rs → print.rs → args.rs",
    "server/cli/: mod.rs → print.rs → mod.rs",
    "server/connection/: call.rs → mod.rs → call.rs",
    "server/connection/: mod.rs → session.rs → mod.rs",
];

/// issue 54: to remove.
pub(super) const FACES_IMPORTED: &[&str] = &[
    "server/builder/mod.rs: ServerBuilder",
    "server/cli/mod.rs: ServeError",
    "server/connection/mod.rs: CallSink",
    "server/connection/mod.rs: Connection",
    "server/connection/mod.rs: ConnectionState",
    "server/connection/mod.rs: SessionTag",
    "server/connection/mod.rs: lock",
    "server/connection/mod.rs: offered",
    "server/connection/mod.rs: task_error",
    "server/connection/mod.rs: visible_to",
    "server/mod.rs: AuthOptions",
    "server/mod.rs: Server",
    "server/mod.rs: Shared",
    "server/mod.rs: ctrl_c",
];

/// issue 54: to remove.
pub(super) const LONG_FILES: &[&str] = &[
];

/// issue 54: to remove.
pub(super) const PUBLIC_PATHS_IN_GENERATED_CODE: &[&str] = &[
];
