//! Method + path to operation. (Placeholder; see the issue-3 work.)

/// Compiled path templates of one spec.
#[derive(Debug, Default)]
pub struct Router {}
