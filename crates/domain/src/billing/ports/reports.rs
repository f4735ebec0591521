//! Reading reports: sums and rows of stored entries with their stored prices.

use async_trait::async_trait;

use crate::billing::model::{
    DetailedRow, Figures, GroupKey, ReportFilter, SummaryRow, UninvoicedRow,
};
use crate::error::DomainResult;
use crate::ids::WorkspaceId;
use crate::page::Cursor;

/// Sums and rows of a workspace's stopped entries matching a [`ReportFilter`]. Every figure is a
/// sum of entries' own figures: durations, durations each rounded by the filter's rounding, and
/// amounts each `round_half_up(stored rate × rounded seconds / 3600)`; amounts per currency.
#[async_trait]
pub trait ReportRepository: Send + Sync {
    /// The first id of the filter, in the order client, project, task, tag, user, that is not
    /// the workspace's (an unknown id or another workspace's), with its parameter's name.
    async fn id_outside(
        &self,
        workspace: WorkspaceId,
        filter: &ReportFilter,
    ) -> DomainResult<Option<(&'static str, uuid::Uuid)>>;

    /// The totals of the filter, each entry counted once.
    async fn totals(&self, workspace: WorkspaceId, filter: &ReportFilter) -> DomainResult<Figures>;

    /// The totals (rows without values) and the groups of every level of `group_by` (the first
    /// key, the first two, ...), one row per group and currency. Above the tag level an entry counts once; at and below it, under each
    /// of its tags (entries without a tag under a `None` tag).
    async fn summary(
        &self,
        workspace: WorkspaceId,
        filter: &ReportFilter,
        group_by: &[GroupKey],
    ) -> DomainResult<Vec<SummaryRow>>;

    /// Up to `limit` entries of the filter, oldest start first, after `after` (start, id).
    async fn detailed(
        &self,
        workspace: WorkspaceId,
        filter: &ReportFilter,
        after: Option<Cursor>,
        limit: u32,
    ) -> DomainResult<Vec<DetailedRow>>;

    /// The billable entries of the filter on no invoice, per client, project and currency.
    async fn uninvoiced(
        &self,
        workspace: WorkspaceId,
        filter: &ReportFilter,
    ) -> DomainResult<Vec<UninvoicedRow>>;
}
