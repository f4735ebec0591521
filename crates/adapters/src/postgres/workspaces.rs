//! Workspaces in PostgreSQL.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::{Date, OffsetDateTime};
use timetrack_domain::ids::WorkspaceId;
use timetrack_domain::model::{
    InvoiceNumberPattern, Rounding, RoundingMode, Workspace, WorkspaceSettings,
};
use timetrack_domain::ports::{WorkspaceRepository, WriteOutcome};
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::violated_constraint;
use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::rates::{Reach, pricing_lock, reprice_under_lock};
use super::schema::workspaces;

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = workspaces, check_for_backend(diesel::pg::Pg))]
pub(crate) struct WorkspaceRow {
    pub id: Uuid,
    pub name: String,
    pub timezone: String,
    pub currency: String,
    pub created_at: OffsetDateTime,
}

impl From<WorkspaceRow> for Workspace {
    fn from(row: WorkspaceRow) -> Self {
        Self {
            id: WorkspaceId(row.id),
            name: row.name,
            timezone: row.timezone,
            currency: row.currency,
            created_at: row.created_at,
        }
    }
}

/// [`WorkspaceRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgWorkspaceRepository {
    pool: PgPool,
}

opaque_debug!(PgWorkspaceRepository);

impl PgWorkspaceRepository {
    /// The repository on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl WorkspaceRepository for PgWorkspaceRepository {
    async fn create(&self, workspace: &Workspace) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = WorkspaceRow::from(workspace);
        diesel::insert_into(workspaces::table)
            .values(&row)
            .execute(&mut conn)
            .await
            .map_err(|e| match violated_constraint(&e) {
                Some("workspaces_pkey") => DomainError::Conflict("workspace exists".into()),
                _ => map_db_error(e, "inserting a workspace"),
            })?;
        Ok(())
    }

    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        workspaces::table
            .find(id.0)
            .select(WorkspaceRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map(|row| row.map(Workspace::from))
            .map_err(|e| map_db_error(e, "reading a workspace"))
    }

    async fn settings(&self, id: WorkspaceId) -> DomainResult<Option<WorkspaceSettings>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row: Option<SettingsRow> = workspaces::table
            .find(id.0)
            .select(SettingsRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "reading a workspace's settings"))?;
        row.map(WorkspaceSettings::try_from).transpose()
    }

    async fn with_settings(
        &self,
        id: WorkspaceId,
    ) -> DomainResult<Option<(Workspace, WorkspaceSettings)>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row: Option<(WorkspaceRow, SettingsRow)> = workspaces::table
            .find(id.0)
            .select((WorkspaceRow::as_select(), SettingsRow::as_select()))
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "reading a workspace"))?;
        row.map(|(workspace, settings)| {
            Ok((
                Workspace::from(workspace),
                WorkspaceSettings::try_from(settings)?,
            ))
        })
        .transpose()
    }

    async fn update(
        &self,
        before: &(Workspace, WorkspaceSettings),
        after: &(Workspace, WorkspaceSettings),
    ) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let (old, old_settings) = (WorkspaceRow::from(&before.0), SettingsRow::from(&before.1));
        let (new, new_settings) = (WorkspaceRow::from(&after.0), SettingsRow::from(&after.1));
        // Another time zone moves entries' dates, another currency the currency of entries
        // without a client, another lock date which entries may move: all are priced again,
        // under the pricing lock, taken before the row.
        let moves_prices = old.timezone != new.timezone
            || old.currency != new.currency
            || old_settings.lock_before != new_settings.lock_before;
        // Another zone or rounding also rebuilds the report day totals (a trigger does), which
        // the same lock keeps apart from writes of entries.
        let rebuilds_totals = old.timezone != new.timezone
            || old_settings.rounding_minutes != new_settings.rounding_minutes
            || old_settings.rounding_mode != new_settings.rounding_mode;
        let id = WorkspaceId(old.id);
        let written = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                if moves_prices || rebuilds_totals {
                    pricing_lock(conn, id, true).await?;
                }
                // Written only over exactly what was read: a change in between is a race, tried again.
                let written = diesel::update(
                    workspaces::table
                        .find(old.id)
                        .filter(workspaces::name.eq(&old.name))
                        .filter(workspaces::timezone.eq(&old.timezone))
                        .filter(workspaces::currency.eq(&old.currency))
                        .filter(
                            workspaces::members_manage_catalog
                                .eq(old_settings.members_manage_catalog),
                        )
                        .filter(workspaces::members_see_rates.eq(old_settings.members_see_rates))
                        .filter(workspaces::rounding_minutes.eq(old_settings.rounding_minutes))
                        .filter(workspaces::rounding_mode.eq(&old_settings.rounding_mode))
                        .filter(
                            workspaces::invoice_number_pattern
                                .eq(&old_settings.invoice_number_pattern),
                        )
                        .filter(workspaces::payment_terms_days.eq(old_settings.payment_terms_days))
                        .filter(
                            workspaces::lock_before.is_not_distinct_from(old_settings.lock_before),
                        ),
                )
                .set((
                    workspaces::name.eq(&new.name),
                    workspaces::timezone.eq(&new.timezone),
                    workspaces::currency.eq(&new.currency),
                    &new_settings,
                ))
                .execute(conn)
                .await?;
                if moves_prices && written == 1 {
                    reprice_under_lock(conn, id, &Reach::default()).await?;
                }
                Ok(written)
            })
            .await
            .map_err(|e| map_db_error(e, "updating a workspace"))?;
        Ok(if written == 1 {
            WriteOutcome::Applied
        } else {
            WriteOutcome::Raced
        })
    }
}

/// A workspace's settings, as its columns hold them.
#[derive(Debug, Queryable, Selectable, AsChangeset)]
#[diesel(table_name = workspaces, check_for_backend(diesel::pg::Pg))]
#[diesel(treat_none_as_null = true)]
struct SettingsRow {
    members_manage_catalog: bool,
    members_see_rates: bool,
    rounding_minutes: i16,
    rounding_mode: String,
    invoice_number_pattern: String,
    payment_terms_days: i16,
    lock_before: Option<Date>,
}

impl From<&WorkspaceSettings> for SettingsRow {
    fn from(s: &WorkspaceSettings) -> Self {
        Self {
            members_manage_catalog: s.members_manage_catalog,
            members_see_rates: s.members_see_rates,
            rounding_minutes: i16::from(s.rounding.minutes),
            rounding_mode: s.rounding.mode.as_str().to_owned(),
            invoice_number_pattern: s.invoice_number_pattern.as_str().to_owned(),
            payment_terms_days: i16::try_from(s.payment_terms_days).unwrap_or(i16::MAX),
            lock_before: s.lock_before,
        }
    }
}

impl TryFrom<SettingsRow> for WorkspaceSettings {
    type Error = DomainError;

    /// The columns' CHECK constraints hold what the domain's parsers check; a row that breaks
    /// them anyway is reported, not guessed at.
    fn try_from(row: SettingsRow) -> DomainResult<Self> {
        let unexpected = |e: DomainError| {
            DomainError::Unexpected(anyhow::anyhow!("stored workspace settings: {e}"))
        };
        let minutes = u8::try_from(row.rounding_minutes)
            .map_err(|_| unexpected(DomainError::validation("rounding_minutes")))?;
        let mode = RoundingMode::parse(&row.rounding_mode).map_err(unexpected)?;
        Ok(Self {
            members_manage_catalog: row.members_manage_catalog,
            members_see_rates: row.members_see_rates,
            rounding: Rounding::new(minutes, mode).map_err(unexpected)?,
            invoice_number_pattern: InvoiceNumberPattern::parse(&row.invoice_number_pattern)
                .map_err(unexpected)?,
            payment_terms_days: u16::try_from(row.payment_terms_days)
                .map_err(|_| unexpected(DomainError::validation("payment_terms_days")))?,
            lock_before: row.lock_before,
        })
    }
}

impl From<&Workspace> for WorkspaceRow {
    fn from(w: &Workspace) -> Self {
        Self {
            id: w.id.0,
            name: w.name.clone(),
            timezone: w.timezone.clone(),
            currency: w.currency.clone(),
            created_at: w.created_at,
        }
    }
}
