//! Hourly rates, and the price of every entry as each caller may see it.

use std::collections::HashMap;
use std::sync::Arc;

use time::{Date, OffsetDateTime};

use crate::accounts::model::{Principal, Workspace, WorkspaceSettings};
use crate::accounts::ports::WorkspaceRepository;
use crate::billing::model::rate::amount_minor;
use crate::billing::model::{
    AppliedRate, MAX_HOURLY_MINOR, Rate, RateKind, RateTarget, StoredPrice,
};
use crate::billing::ports::{RateEffect, RateFilter, RateRepository};
use crate::error::{DomainError, DomainResult};
use crate::ids::{RateId, TimeEntryId};
use crate::page::{Page, PageRequest};
use crate::system::{Clock, IdGenerator};
use crate::tracking::model::TimeEntry;
use crate::values::Currency;

/// A rate to add, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRate {
    /// Billable or cost.
    pub kind: RateKind,
    /// What it applies to.
    pub target: RateTarget,
    /// Its currency.
    pub currency: Currency,
    /// Minor units an hour.
    pub hourly_minor: i64,
    /// The first day in force, in the workspace's time zone.
    pub effective_from: Date,
}

impl NewRate {
    /// `hourly_minor` if it is 0 to [`MAX_HOURLY_MINOR`]; a 400 saying the bound otherwise.
    pub fn hourly(value: i64) -> DomainResult<i64> {
        if (0..=MAX_HOURLY_MINOR).contains(&value) {
            Ok(value)
        } else {
            Err(DomainError::validation(format!(
                "hourly_minor must be an integer from 0 to {MAX_HOURLY_MINOR} (minor units an \
                 hour; larger amounts could overflow over ten years of entries), got: {value}"
            )))
        }
    }
}

/// One kind's figures of an entry's price, for a caller allowed to see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceLine {
    /// The rate that applies, `None` when none is in force (or, for billable, the entry is not
    /// billable).
    pub rate: Option<AppliedRate>,
    /// `round_half_up(rate × rounded seconds / 3600)`; 0 without a rate.
    pub amount_minor: i64,
}

/// An entry's price as a caller sees it: `billable` and `cost` are `None` when the caller may
/// not see them (the keys are left out of every answer then, not zeroed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryPricing {
    /// The entry's currency.
    pub currency: String,
    /// Its duration after the workspace's rounding (running entries: up to now).
    pub rounded_seconds: i64,
    /// The billable figures, if the caller sees billable rates.
    pub billable: Option<PriceLine>,
    /// The cost figures, if the caller sees cost rates.
    pub cost: Option<PriceLine>,
    /// The invoice the entry is on, if any.
    pub invoice_id: Option<crate::ids::InvoiceId>,
    /// Whether the entry is locked: on an invoice, or before the workspace's lock date.
    pub locked: bool,
}

/// The visibility rule and the arithmetic of prices, applied to one entry: the one place every
/// answer that shows money goes through.
pub fn entry_pricing(
    caller: &Principal,
    workspace: &Workspace,
    settings: &WorkspaceSettings,
    entry: &TimeEntry,
    stored: &StoredPrice,
    now: OffsetDateTime,
) -> DomainResult<EntryPricing> {
    let end = entry.end.unwrap_or(now).max(entry.start);
    let seconds = (end - entry.start).whole_seconds();
    let rounded_seconds = settings.rounding.apply(seconds);
    let line = |applied: &Option<AppliedRate>| PriceLine {
        amount_minor: applied
            .as_ref()
            .map_or(0, |r| amount_minor(r.hourly_minor, rounded_seconds)),
        rate: applied.clone(),
    };
    let day = crate::timefmt::local_day(entry.start, &workspace.timezone)?;
    Ok(EntryPricing {
        currency: stored
            .currency
            .clone()
            .unwrap_or_else(|| workspace.currency.clone()),
        rounded_seconds,
        billable: caller
            .sees_billable_rates(settings)
            .then(|| line(&stored.billable)),
        cost: caller.sees_cost_rates().then(|| line(&stored.cost)),
        invoice_id: stored.invoice_id,
        locked: stored.invoice_id.is_some() || settings.lock_before.is_some_and(|lock| day < lock),
    })
}

/// Rates: listed, added (or tried in a dry run) and deleted; and the prices of entries.
#[derive(Clone)]
pub struct RateService {
    rates: Arc<dyn RateRepository>,
    workspaces: Arc<dyn WorkspaceRepository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl std::fmt::Debug for RateService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateService").finish_non_exhaustive()
    }
}

impl RateService {
    /// Builds the service on its ports.
    pub fn new(
        rates: Arc<dyn RateRepository>,
        workspaces: Arc<dyn WorkspaceRepository>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            rates,
            workspaces,
            clock,
            ids,
        }
    }

    async fn workspace(&self, caller: &Principal) -> DomainResult<(Workspace, WorkspaceSettings)> {
        crate::accounts::services::workspace::workspace_and_settings(
            self.workspaces.as_ref(),
            caller.workspace_id,
        )
        .await
    }

    /// A page of the workspace's rates, newest first: admins and owners see every rate; a member
    /// sees the billable ones when the workspace lets members see rates, and is refused (403)
    /// otherwise, as for a filter on cost rates.
    pub async fn list(
        &self,
        caller: &Principal,
        mut filter: RateFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Rate>> {
        if !caller.sees_cost_rates() {
            let (_, settings) = self.workspace(caller).await?;
            if !caller.sees_billable_rates(&settings) || filter.kind == Some(RateKind::Cost) {
                return Err(DomainError::Forbidden);
            }
            filter.kind = Some(RateKind::Billable);
        }
        self.rates.list(caller.workspace_id, &filter, page).await
    }

    /// Adds a rate (owners and admins), re-pricing the unlocked entries it reaches; with
    /// `dry_run`, writes nothing and answers what it would do.
    pub async fn create(
        &self,
        caller: &Principal,
        new: NewRate,
        dry_run: bool,
    ) -> DomainResult<(Rate, RateEffect)> {
        caller.require_admin()?;
        let (_, settings) = self.workspace(caller).await?;
        let rate = Rate {
            id: RateId(self.ids.new_uuid()),
            workspace_id: caller.workspace_id,
            kind: new.kind,
            target: new.target,
            currency: new.currency.into_string(),
            hourly_minor: NewRate::hourly(new.hourly_minor)?,
            effective_from: new.effective_from,
            created_at: self.clock.now(),
        };
        let effect = self.rates.add(&rate, settings.rounding, dry_run).await?;
        Ok((rate, effect))
    }

    /// Deletes a rate (owners and admins): 404 for an unknown one, 409 while a locked entry was
    /// priced by it. The entries it priced are priced again without it.
    pub async fn delete(&self, caller: &Principal, id: RateId) -> DomainResult<()> {
        caller.require_admin()?;
        self.rates.delete(caller.workspace_id, id).await
    }

    /// The prices of `entries` (the caller's workspace's) as the caller may see them, in order.
    pub async fn pricing_of(
        &self,
        caller: &Principal,
        entries: &[TimeEntry],
    ) -> DomainResult<Vec<EntryPricing>> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let (workspace, settings) = self.workspace(caller).await?;
        let ids: Vec<TimeEntryId> = entries.iter().map(|e| e.id).collect();
        let stored: HashMap<TimeEntryId, StoredPrice> = self
            .rates
            .prices(caller.workspace_id, &ids)
            .await?
            .into_iter()
            .collect();
        let now = self.clock.now();
        entries
            .iter()
            .map(|entry| {
                let price = stored.get(&entry.id).cloned().unwrap_or_default();
                entry_pricing(caller, &workspace, &settings, entry, &price, now)
            })
            .collect()
    }
}
