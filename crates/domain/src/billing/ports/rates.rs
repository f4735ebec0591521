//! Storage of hourly rates, and of the price each entry got from them.

use async_trait::async_trait;

use crate::accounts::model::Rounding;
use crate::billing::model::{Rate, RateId, RateKind, StoredPrice};
use crate::error::DomainResult;
use crate::ids::{ClientId, ProjectId, TaskId, TimeEntryId, UserId, WorkspaceId};
use crate::page::{Page, PageRequest};

/// Which rates a list shows; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateFilter {
    /// Only rates of this kind.
    pub kind: Option<RateKind>,
    /// Only rates of this scope (`workspace`, `member`, ...).
    pub scope: Option<String>,
    /// Only rates naming this user.
    pub user_id: Option<UserId>,
    /// Only rates naming this client.
    pub client_id: Option<ClientId>,
    /// Only rates naming this project.
    pub project_id: Option<ProjectId>,
    /// Only rates naming this task.
    pub task_id: Option<TaskId>,
}

/// What adding a rate does (or would do, in a dry run) to the stored prices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateEffect {
    /// How many entries' price changed.
    pub affected_entries: u64,
    /// Per currency, by how much the affected entries' billable amounts changed in sum (minor
    /// units, with the rounding given), sorted by currency; currencies without change left out.
    pub delta: Vec<(String, i64)>,
}

/// An entry whose stored price a change moved: its duration so far, and its currency and billable
/// rate (minor units an hour) before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceChange {
    /// Its duration, running entries up to now.
    pub seconds: i64,
    /// Its currency before (none if it was never priced).
    pub old_currency: Option<String>,
    /// Its billable rate before.
    pub old_billable_minor: Option<i64>,
    /// Its currency after.
    pub new_currency: String,
    /// Its billable rate after.
    pub new_billable_minor: Option<i64>,
}

impl RateEffect {
    /// What `changes` did to billable amounts, each entry's duration rounded by `rounding`: the
    /// old amount leaves the old currency's sum, the new one joins the new currency's.
    pub fn of(changes: &[PriceChange], rounding: Rounding) -> Self {
        use crate::billing::model::rate::amount_minor;
        let mut delta: std::collections::BTreeMap<String, i64> = Default::default();
        for change in changes {
            let seconds = rounding.apply(change.seconds);
            let amount = |rate: Option<i64>| rate.map_or(0, |r| amount_minor(r, seconds));
            if let Some(currency) = &change.old_currency {
                *delta.entry(currency.clone()).or_default() -= amount(change.old_billable_minor);
            }
            *delta.entry(change.new_currency.clone()).or_default() +=
                amount(change.new_billable_minor);
        }
        Self {
            affected_entries: changes.len() as u64,
            delta: delta.into_iter().filter(|(_, d)| *d != 0).collect(),
        }
    }
}

/// Storage of rates. Every write of rates re-prices the entries it may move, in its own
/// transaction, holding the workspace's pricing lock (so that a concurrent write of an entry is
/// priced either before or after it, never with half of it); locked entries keep their price.
#[async_trait]
pub trait RateRepository: Send + Sync {
    /// Adds `rate` and re-prices the entries it reaches. With `dry_run`, writes nothing at all and
    /// reports what it would have done. `rounding` is the workspace's, for the delta.
    ///
    /// MUST return `AlreadyExists { what: "rate", id }` for a rate of the same kind, target,
    /// currency and date, and `Validation` when a target id is not the workspace's (nothing is
    /// written then).
    async fn add(&self, rate: &Rate, rounding: Rounding, dry_run: bool)
    -> DomainResult<RateEffect>;

    /// A page of the workspace's rates matching `filter`, newest first.
    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &RateFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Rate>>;

    /// The workspace's rate `id`, or `None`.
    async fn get(&self, workspace: WorkspaceId, id: RateId) -> DomainResult<Option<Rate>>;

    /// Deletes the workspace's rate `id` and re-prices the entries it priced.
    ///
    /// MUST return `NotFound("rate")` for an unknown one and `Conflict` while a locked entry was
    /// priced by it (nothing is written then).
    async fn delete(&self, workspace: WorkspaceId, id: RateId) -> DomainResult<()>;

    /// The stored prices of the workspace's entries `ids` (those it has), in any order.
    async fn prices(
        &self,
        workspace: WorkspaceId,
        ids: &[TimeEntryId],
    ) -> DomainResult<Vec<(TimeEntryId, StoredPrice)>>;
}
