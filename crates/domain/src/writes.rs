//! Conditional writes: a repository writes a row only if it is still as the service read it,
//! and says whether it did; a service that lost the race reads again and retries a few times.

use crate::error::DomainError;

/// Whether a conditional write applied, or lost a race with a concurrent one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written, with its events.
    Applied,
    /// Nothing written: the row changed meanwhile (for a timer: stopped, or another one started;
    /// for an update or a delete: changed or deleted since it was read).
    Raced,
}

/// How many times a service tries a write that lost a race (a row changed between its read and
/// its write) before answering [`kept_changing`].
pub(crate) const WRITE_ATTEMPTS: usize = 5;

/// The conflict after [`WRITE_ATTEMPTS`] lost races.
pub(crate) fn kept_changing(what: &str) -> DomainError {
    DomainError::Conflict(format!("The {what} kept changing; try again"))
}
