//! How a server keeps its instances' histories ([`InstanceHistory`]): how much of each
//! instance's history the store keeps (the retention). A handler's note reaches its
//! transition's commit with the call itself ([`Ctx::note`](crate::Ctx::note)).

use crate::store::HistoryRetention;

/// How a server keeps its instances' histories.
#[derive(Debug, Default)]
pub(crate) struct InstanceHistory {
    pub(crate) retention: HistoryRetention,
}

impl InstanceHistory {
    pub(crate) fn new(retention: HistoryRetention) -> Self {
        Self { retention }
    }
}
