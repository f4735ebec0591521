//! Rates and entry prices: the domain's `choose_rate` over the fake's tables, applied where the
//! PostgreSQL adapters call `price_entries` and `price_written`.

use super::*;
use timetrack_domain::ids::RateId;
use timetrack_domain::model::{
    AppliedRate, PricedEntry, Rate, RateKind, Rounding, StoredPrice, choose_rate,
};
use timetrack_domain::ports::{PriceChange, RateEffect, RateFilter, RateRepository};

impl Tables {
    /// The local day of `at` in the workspace's time zone.
    fn day_in(&self, workspace: WorkspaceId, at: OffsetDateTime) -> Option<time::Date> {
        let tz = &self.workspaces.get(&workspace)?.timezone;
        timetrack_domain::timefmt::local_day(at, tz).ok()
    }

    /// Whether `entry` starts before its workspace's lock date.
    fn is_locked(&self, entry: &TimeEntry) -> bool {
        let lock = self
            .settings
            .get(&entry.workspace_id)
            .and_then(|s| s.lock_before);
        match (lock, self.day_in(entry.workspace_id, entry.start)) {
            (Some(lock), Some(day)) => day < lock,
            _ => false,
        }
    }

    /// What decides `entry`'s price.
    fn priced(&self, entry: &TimeEntry) -> Option<PricedEntry> {
        let project = entry
            .project_id
            .and_then(|id| self.projects.iter().find(|p| p.id == id));
        let client = project
            .and_then(|p| p.client_id)
            .and_then(|id| self.clients.iter().find(|c| c.id == id));
        let currency = match client {
            Some(client) => client.currency.clone(),
            None => self.workspaces.get(&entry.workspace_id)?.currency.clone(),
        };
        Some(PricedEntry {
            user_id: entry.user_id,
            project_id: entry.project_id,
            task_id: entry.task_id,
            client_id: client.map(|c| c.id),
            currency,
            day: self.day_in(entry.workspace_id, entry.start)?,
            billable: entry.billable,
        })
    }

    /// Prices the unlocked entries of `workspace` that `reach` selects, as `repricing.sql`
    /// does, and returns those whose price changed.
    pub(super) fn reprice(
        &mut self,
        workspace: WorkspaceId,
        reach: impl Fn(&Tables, &TimeEntry) -> bool,
    ) -> Vec<PriceChange> {
        let rates: Vec<Rate> = self
            .rates
            .iter()
            .filter(|r| r.workspace_id == workspace)
            .cloned()
            .collect();
        let mut changed = Vec::new();
        let now = OffsetDateTime::now_utc();
        let targets: Vec<TimeEntry> = self
            .entries
            .iter()
            .filter(|e| e.workspace_id == workspace && reach(self, e) && !self.is_locked(e))
            .cloned()
            .collect();
        for entry in targets {
            let Some(priced) = self.priced(&entry) else {
                continue;
            };
            let new = StoredPrice {
                currency: Some(priced.currency.clone()),
                billable: choose_rate(&rates, &priced, RateKind::Billable).map(AppliedRate::of),
                cost: choose_rate(&rates, &priced, RateKind::Cost).map(AppliedRate::of),
                invoice_id: None,
            };
            let old = self
                .prices
                .insert(entry.id, new.clone())
                .unwrap_or_default();
            if old != new {
                changed.push(PriceChange {
                    seconds: (entry.end.unwrap_or(now) - entry.start).whole_seconds(),
                    old_currency: old.currency,
                    old_billable_minor: old.billable.map(|r| r.hourly_minor),
                    new_currency: priced.currency,
                    new_billable_minor: new.billable.map(|r| r.hourly_minor),
                });
            }
        }
        changed
    }

    /// Prices the entry `id` just written.
    pub(super) fn price_written(&mut self, workspace: WorkspaceId, id: TimeEntryId) {
        self.reprice(workspace, |_, e| e.id == id);
    }
}

#[async_trait]
impl RateRepository for InMemoryStore {
    async fn add(
        &self,
        rate: &Rate,
        rounding: Rounding,
        dry_run: bool,
    ) -> DomainResult<RateEffect> {
        let mut t = self.tables();
        if let Some(existing) = t.rates.iter().find(|r| {
            r.workspace_id == rate.workspace_id
                && r.kind == rate.kind
                && r.target == rate.target
                && r.currency == rate.currency
                && r.effective_from == rate.effective_from
        }) {
            return Err(DomainError::AlreadyExists {
                what: "rate",
                id: existing.id.to_string(),
            });
        }
        let ws = rate.workspace_id;
        let target = rate.target;
        if let Some(user) = target.user_id()
            && !t.is_member(ws, user)
        {
            return Err(DomainError::validation(
                "user_id does not name a member of this workspace",
            ));
        }
        if let Some(client) = target.client_id()
            && !t
                .clients
                .iter()
                .any(|c| c.id == client && c.workspace_id == ws)
        {
            return Err(DomainError::validation(
                "client_id does not name a client of this workspace",
            ));
        }
        if let Some(project) = target.project_id()
            && !t
                .projects
                .iter()
                .any(|p| p.id == project && p.workspace_id == ws)
        {
            return Err(DomainError::validation(
                "project_id does not name a project of this workspace",
            ));
        }
        if let Some(task) = target.task_id()
            && !t.tasks.iter().any(|k| k.id == task && k.workspace_id == ws)
        {
            return Err(DomainError::validation(
                "task_id does not name a task of this workspace",
            ));
        }
        let saved = (t.rates.clone(), t.prices.clone());
        t.rates.push(rate.clone());
        let changed = t.reprice(ws, |t, e| {
            t.priced(e).is_some_and(|priced| target.reaches(&priced))
        });
        let effect = RateEffect::of(&changed, rounding);
        if dry_run {
            (t.rates, t.prices) = saved;
        }
        Ok(effect)
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &RateFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Rate>> {
        let items = self
            .tables()
            .rates
            .iter()
            .filter(|r| r.workspace_id == workspace)
            .filter(|r| filter.kind.is_none_or(|k| r.kind == k))
            .filter(|r| {
                filter
                    .scope
                    .as_deref()
                    .is_none_or(|s| r.target.scope() == s)
            })
            .filter(|r| filter.user_id.is_none_or(|u| r.target.user_id() == Some(u)))
            .filter(|r| {
                filter
                    .client_id
                    .is_none_or(|c| r.target.client_id() == Some(c))
            })
            .filter(|r| {
                filter
                    .project_id
                    .is_none_or(|p| r.target.project_id() == Some(p))
            })
            .filter(|r| filter.task_id.is_none_or(|k| r.target.task_id() == Some(k)))
            .cloned()
            .collect();
        Ok(page_of(items, page, |r| Cursor {
            created_at: r.created_at,
            id: r.id.0,
        }))
    }

    async fn get(&self, workspace: WorkspaceId, id: RateId) -> DomainResult<Option<Rate>> {
        Ok(self
            .tables()
            .rates
            .iter()
            .find(|r| r.workspace_id == workspace && r.id == id)
            .cloned())
    }

    async fn delete(&self, workspace: WorkspaceId, id: RateId) -> DomainResult<()> {
        let mut t = self.tables();
        if !t
            .rates
            .iter()
            .any(|r| r.workspace_id == workspace && r.id == id)
        {
            return Err(DomainError::NotFound("rate"));
        }
        let priced_by = |price: &StoredPrice| {
            [&price.billable, &price.cost]
                .into_iter()
                .flatten()
                .any(|r| r.id == id)
        };
        let locked = t
            .entries
            .iter()
            .filter(|e| e.workspace_id == workspace && t.is_locked(e))
            .filter(|e| t.prices.get(&e.id).is_some_and(priced_by))
            .count();
        if locked > 0 {
            return Err(DomainError::Conflict(format!(
                "Rate priced locked entries ({locked} before the lock date {})",
                t.settings
                    .get(&workspace)
                    .and_then(|s| s.lock_before)
                    .map(timetrack_domain::timefmt::iso_date)
                    .unwrap_or_default()
            )));
        }
        t.rates
            .retain(|r| !(r.workspace_id == workspace && r.id == id));
        t.reprice(workspace, |t, e| t.prices.get(&e.id).is_some_and(priced_by));
        Ok(())
    }

    async fn prices(
        &self,
        workspace: WorkspaceId,
        ids: &[TimeEntryId],
    ) -> DomainResult<Vec<(TimeEntryId, StoredPrice)>> {
        let t = self.tables();
        Ok(t.entries
            .iter()
            .filter(|e| e.workspace_id == workspace && ids.contains(&e.id))
            .map(|e| (e.id, t.prices.get(&e.id).cloned().unwrap_or_default()))
            .collect())
    }
}
