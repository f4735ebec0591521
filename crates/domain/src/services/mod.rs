//! Services: the product's rules, written against ports only, of every capability together: each
//! is defined in its capability's `services` and shown here too.

pub use crate::accounts::services::*;
pub use crate::billing::services::*;
pub use crate::tracking::services::*;
pub use crate::webhooks::services::*;
