//! [`FlowLease`]: an exclusive hold on one key, whatever backend granted it.

/// An exclusive hold on one key; released when dropped.
#[must_use = "the lease is released as soon as it is dropped"]
pub struct FlowLease {
    _guard: Box<dyn Send + Sync>,
    fence: Option<String>,
}

impl FlowLease {
    /// Wraps a backend's guard; dropping the lease drops (and so releases) it.
    pub fn new(guard: impl Send + Sync + 'static) -> Self {
        Self { _guard: Box::new(guard), fence: None }
    }

    /// A lease a shared backend can lose (it expires unless renewed), with the fencing
    /// token that names this holding: [`FlowStore::commit`](super::FlowStore::commit) under it commits only while the
    /// store still holds that token for the key.
    pub fn fenced(guard: impl Send + Sync + 'static, fence: impl Into<String>) -> Self {
        Self { _guard: Box::new(guard), fence: Some(fence.into()) }
    }

    /// The fencing token, for a lease that has one.
    pub fn fence(&self) -> Option<&str> {
        self.fence.as_deref()
    }
}

impl std::fmt::Debug for FlowLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlowLease")
    }
}
