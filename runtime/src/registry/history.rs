//! How a server keeps its instances' histories ([`InstanceHistory`]): how much of each
//! instance's history the store keeps (the retention), and which machines' entries keep
//! the instance's data as each transition committed it. A handler's note reaches its
//! transition's commit with the call itself ([`Ctx::note`](crate::Ctx::note)).

use crate::store::HistoryRetention;

/// How a server keeps its instances' histories.
#[derive(Debug, Default)]
pub(crate) struct InstanceHistory {
    pub(crate) retention: HistoryRetention,
    /// The machines whose entries keep the data (opted in: by default an entry says only
    /// that the data changed).
    with_data: Vec<String>,
}

impl InstanceHistory {
    pub(crate) fn new(retention: HistoryRetention, with_data: Vec<String>) -> Self {
        Self { retention, with_data }
    }

    /// Whether `machine`'s entries keep the data its transitions commit.
    pub(crate) fn keeps_data(&self, machine: &str) -> bool {
        self.with_data.iter().any(|m| m == machine)
    }
}
