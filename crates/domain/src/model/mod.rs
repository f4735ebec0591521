//! Entities and value objects, of every capability together: each is defined in its
//! capability's `model` ([`crate::accounts::model`], [`crate::tracking::model`],
//! [`crate::billing::model`], [`crate::webhooks::model`]) and shown here too, with paging
//! ([`crate::page`]).

pub use crate::accounts::model::*;
pub use crate::billing::model::*;
pub use crate::page::{self, Cursor, ListFilter, Page, PageRequest};
pub use crate::tracking::model::*;
pub use crate::webhooks::model::*;
