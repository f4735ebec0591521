//! Reports: summary, detailed and uninvoiced, for a caller, with the filters checked, a member
//! kept to their own time, and money shown only to who may see it.

use std::sync::Arc;

use time::Date;
use uuid::Uuid;

use crate::accounts::model::{Principal, Rounding};
use crate::accounts::ports::WorkspaceRepository;
use crate::billing::model::{
    DetailedRow, Figures, GroupKey, ReportFilter, Summary, UninvoicedRow, summary_tree,
};
use crate::billing::ports::ReportRepository;
use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, ProjectId, TagId, TaskId, UserId};
use crate::page::Cursor;
use crate::values::TimeZoneName;

/// A report as asked for, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportRequest {
    /// The first day (required).
    pub from: Option<Date>,
    /// The last day, inclusive (required).
    pub to: Option<Date>,
    /// The zone of the days; the workspace's when unset.
    pub timezone: Option<TimeZoneName>,
    /// `client_ids`.
    pub client_ids: Vec<ClientId>,
    /// `project_ids`.
    pub project_ids: Vec<ProjectId>,
    /// `task_ids`.
    pub task_ids: Vec<TaskId>,
    /// `tag_ids`.
    pub tag_ids: Vec<TagId>,
    /// `user_ids`.
    pub user_ids: Vec<UserId>,
    /// `billable`.
    pub billable: Option<bool>,
    /// `invoiced`.
    pub invoiced: Option<bool>,
    /// `rounding=none` (the workspace's rounding otherwise).
    pub no_rounding: bool,
}

/// Which money the caller may see in a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visibility {
    /// Billable amounts and rates.
    pub billable: bool,
    /// Cost amounts and rates.
    pub cost: bool,
}

/// The filter a report runs with, as answered in its `meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportScope {
    /// The filter, checked.
    pub filter: ReportFilter,
    /// `workspace` or `none`.
    pub rounding_name: &'static str,
    /// What the caller may see.
    pub visibility: Visibility,
}

/// Summary, detailed and uninvoiced reports.
#[derive(Clone)]
pub struct ReportService {
    reports: Arc<dyn ReportRepository>,
    workspaces: Arc<dyn WorkspaceRepository>,
}

impl std::fmt::Debug for ReportService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportService").finish_non_exhaustive()
    }
}

impl ReportService {
    /// Builds the service on its ports.
    pub fn new(
        reports: Arc<dyn ReportRepository>,
        workspaces: Arc<dyn WorkspaceRepository>,
    ) -> Self {
        Self {
            reports,
            workspaces,
        }
    }

    /// Checks `request` for `caller`: the range, the ids (another workspace's is 400 `Invalid
    /// filter: NAME (ID is not in this workspace)`), and, for a member, their own time only.
    pub async fn scope(
        &self,
        caller: &Principal,
        request: ReportRequest,
    ) -> DomainResult<ReportScope> {
        let missing = |field: &str| {
            DomainError::invalid(
                crate::billing::model::report::INVALID_PARAMETERS,
                format!("{field} is required (YYYY-MM-DD)"),
            )
        };
        let from = request.from.ok_or_else(|| missing("from"))?;
        let to = request.to.ok_or_else(|| missing("to"))?;
        ReportFilter::check_range(from, to)?;
        let (workspace, settings) = crate::accounts::services::workspace::workspace_and_settings(
            self.workspaces.as_ref(),
            caller.workspace_id,
        )
        .await?;
        let mut filter = ReportFilter {
            from,
            to,
            timezone: request
                .timezone
                .map_or(workspace.timezone, TimeZoneName::into_string),
            client_ids: request.client_ids,
            project_ids: request.project_ids,
            task_ids: request.task_ids,
            tag_ids: request.tag_ids,
            user_ids: request.user_ids,
            billable: request.billable,
            invoiced: request.invoiced,
            rounding: if request.no_rounding {
                Rounding::NONE
            } else {
                settings.rounding
            },
        };
        if let Some((name, id)) = self
            .reports
            .id_outside(caller.workspace_id, &filter)
            .await?
        {
            return Err(DomainError::validation(format!(
                "Invalid filter: {name} ({id} is not in this workspace)"
            )));
        }
        if !caller.role.administers() {
            // A member's report is their own time, whatever the filter says: asking for others
            // only matches nothing (the nil id is nobody's).
            let own = filter.user_ids.is_empty() || filter.user_ids.contains(&caller.user_id);
            filter.user_ids = vec![if own {
                caller.user_id
            } else {
                UserId(Uuid::nil())
            }];
        }
        Ok(ReportScope {
            filter,
            rounding_name: if request.no_rounding {
                "none"
            } else {
                "workspace"
            },
            visibility: Visibility {
                billable: caller.sees_billable_rates(&settings),
                cost: caller.sees_cost_rates(),
            },
        })
    }

    /// The summary of `scope` grouped by `group_by` (one to three keys).
    pub async fn summary(
        &self,
        caller: &Principal,
        scope: &ReportScope,
        group_by: &[GroupKey],
    ) -> DomainResult<Summary> {
        let rows = self
            .reports
            .summary(caller.workspace_id, &scope.filter, group_by)
            .await?;
        summary_tree(group_by.len(), &rows, group_by.contains(&GroupKey::Tag))
    }

    /// The totals of `scope`, each entry once.
    pub async fn totals(&self, caller: &Principal, scope: &ReportScope) -> DomainResult<Figures> {
        self.reports
            .totals(caller.workspace_id, &scope.filter)
            .await
    }

    /// Up to `limit` rows of the detailed report of `scope` after `after`, and the cursor of the
    /// next page (`None` on the last).
    pub async fn detailed(
        &self,
        caller: &Principal,
        scope: &ReportScope,
        after: Option<Cursor>,
        limit: u32,
    ) -> DomainResult<(Vec<DetailedRow>, Option<Cursor>)> {
        let mut rows = self
            .reports
            .detailed(caller.workspace_id, &scope.filter, after, limit + 1)
            .await?;
        let next = if rows.len() > limit as usize {
            rows.truncate(limit as usize);
            rows.last().map(|r| Cursor {
                created_at: r.start,
                id: r.id.0,
            })
        } else {
            None
        };
        Ok((rows, next))
    }

    /// The uninvoiced report of `scope`.
    pub async fn uninvoiced(
        &self,
        caller: &Principal,
        scope: &ReportScope,
    ) -> DomainResult<Vec<UninvoicedRow>> {
        self.reports
            .uninvoiced(caller.workspace_id, &scope.filter)
            .await
    }
}
