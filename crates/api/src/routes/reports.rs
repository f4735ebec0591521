//! `GET /api/reports/summary`, `/detailed` and `/uninvoiced`, as JSON or (with `Accept:
//! text/csv` or `?format=csv`) as CSV; the detailed CSV is streamed page by page, so a year of
//! entries never sits in memory.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ClientId, ProjectId, TagId, TaskId, UserId};
use timetrack_domain::model::rate::major_units;
use timetrack_domain::model::report::{
    DEFAULT_DETAILED_PAGE, INVALID_PARAMETERS, MAX_DETAILED_PAGE,
};
use timetrack_domain::model::{
    Cursor, DetailedRow, Figures, GroupKey, Named, SummaryGroup, UninvoicedRow,
};
use timetrack_domain::services::{ReportRequest, ReportScope, Visibility};
use timetrack_domain::timefmt::{iso_date, parse_date, rfc3339};
use timetrack_domain::values::TimeZoneName;
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::{Caller, QueryParams};
use crate::replica::ReadAfter;
use crate::state::AppState;

use super::reports_csv::{csv_bytes, csv_response, detailed_stream, summary_csv, text_cell};

/// The query parameters every report takes (`docs/billing.md`).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReportQuery {
    /// The first day, `YYYY-MM-DD`.
    #[param(format = Date, required = true)]
    from: Option<String>,
    /// The last day, inclusive, at most 366 days after `from`.
    #[param(format = Date, required = true)]
    to: Option<String>,
    /// The IANA zone of the days; the workspace's by default.
    #[param(pattern = r"^[A-Za-z][A-Za-z0-9_+/-]*$", max_length = 64)]
    timezone: Option<String>,
    /// Comma-separated client ids (empty: no filter).
    #[param(
        pattern = r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(,[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})*)?$"
    )]
    client_ids: Option<String>,
    /// Comma-separated project ids (empty: no filter).
    #[param(
        pattern = r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(,[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})*)?$"
    )]
    project_ids: Option<String>,
    /// Comma-separated task ids (empty: no filter).
    #[param(
        pattern = r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(,[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})*)?$"
    )]
    task_ids: Option<String>,
    /// Comma-separated tag ids, entries with any of them (empty: no filter).
    #[param(
        pattern = r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(,[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})*)?$"
    )]
    tag_ids: Option<String>,
    /// Comma-separated member (user) ids (empty: no filter); a member's report is their own time whatever this says.
    #[param(
        pattern = r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(,[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})*)?$"
    )]
    user_ids: Option<String>,
    /// `true` or `false`.
    #[param(pattern = "^(true|false)$")]
    billable: Option<String>,
    /// `true` or `false`: entries on an invoice, or on none.
    #[param(pattern = "^(true|false)$")]
    invoiced: Option<String>,
    /// `workspace` (default: the workspace's rounding) or `none`.
    #[param(pattern = "^(workspace|none)$")]
    rounding: Option<String>,
    /// Summary only, and required there: one to three of client, project, task, user, tag, day,
    /// week, month. The other reports ignore it, but refuse one the summary would refuse.
    #[param(
        pattern = "^(client|project|task|user|tag|day|week|month)(,(client|project|task|user|tag|day|week|month)){0,2}$"
    )]
    group_by: Option<String>,
    /// `json` (default) or `csv`.
    #[param(pattern = "^(json|csv)$")]
    format: Option<String>,
}

/// The page of a detailed report (JSON only: the CSV is the whole filter).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Rows a page, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `next_cursor` of the page before.
    #[param(max_length = 200)]
    cursor: Option<String>,
}

fn invalid(detail: impl Into<String>) -> ApiError {
    DomainError::invalid(INVALID_PARAMETERS, detail).into()
}

fn ids<T>(name: &str, value: &Option<String>, make: fn(Uuid) -> T) -> Result<Vec<T>, ApiError> {
    let Some(value) = value.as_deref().filter(|v| !v.is_empty()) else {
        return Ok(Vec::new());
    };
    value
        .split(',')
        .map(|part| {
            part.trim().parse::<Uuid>().map(make).map_err(|_| {
                ApiError::from(DomainError::validation(format!(
                    "Invalid filter: {name} ({part} is not an id)"
                )))
            })
        })
        .collect()
}

fn flag(name: &str, value: &Option<String>) -> Result<Option<bool>, ApiError> {
    match value.as_deref() {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(other) => Err(invalid(format!(
            "{name} must be true or false, got: {other}"
        ))),
    }
}

impl ReportQuery {
    fn request(&self) -> Result<ReportRequest, ApiError> {
        let date = |name: &str, value: &Option<String>| {
            value
                .as_deref()
                .map(|v| parse_date(name, v).map_err(|e| invalid(e.to_string())))
                .transpose()
        };
        let no_rounding = match self.rounding.as_deref() {
            None | Some("workspace") => false,
            Some("none") => true,
            Some(other) => {
                return Err(invalid(format!(
                    "rounding must be workspace or none, got: {other}"
                )));
            }
        };
        // The three reports share these parameters: a `group_by` the detailed and uninvoiced
        // reports do not use is still refused when it is not one the summary would take.
        if let Some(group_by) = self.group_by.as_deref() {
            GroupKey::parse_list(group_by)?;
        }
        Ok(ReportRequest {
            from: date("from", &self.from)?,
            to: date("to", &self.to)?,
            timezone: self
                .timezone
                .as_deref()
                .map(|tz| TimeZoneName::parse(tz).map_err(|e| invalid(e.to_string())))
                .transpose()?,
            client_ids: ids("client_ids", &self.client_ids, ClientId)?,
            project_ids: ids("project_ids", &self.project_ids, ProjectId)?,
            task_ids: ids("task_ids", &self.task_ids, TaskId)?,
            tag_ids: ids("tag_ids", &self.tag_ids, TagId)?,
            user_ids: ids("user_ids", &self.user_ids, UserId)?,
            billable: flag("billable", &self.billable)?,
            invoiced: flag("invoiced", &self.invoiced)?,
            no_rounding,
        })
    }

    /// Whether the answer is CSV: `?format=csv`, or `Accept: text/csv` without a format.
    fn wants_csv(&self, req: &HttpRequest) -> Result<bool, ApiError> {
        match self.format.as_deref() {
            Some("csv") => Ok(true),
            Some("json") => Ok(false),
            Some(other) => Err(invalid(format!("format must be json or csv, got: {other}"))),
            None => Ok(req
                .headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|accept| accept.to_ascii_lowercase().contains("text/csv"))),
        }
    }
}

/// `{currency, billable_minor, cost_minor}`; `cost_minor` only for who sees cost.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AmountBody {
    currency: String,
    billable_minor: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_minor: Option<i64>,
}

/// The figures of a set of entries; `amounts` only for who sees billable rates.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FiguresBody {
    seconds: i64,
    billable_seconds: i64,
    rounded_seconds: i64,
    entries: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    amounts: Option<Vec<AmountBody>>,
}

impl FiguresBody {
    fn new(f: &Figures, visibility: Visibility) -> Self {
        Self {
            seconds: f.seconds,
            billable_seconds: f.billable_seconds,
            rounded_seconds: f.rounded_seconds,
            entries: f.entries,
            amounts: visibility.billable.then(|| {
                f.amounts
                    .iter()
                    .map(|a| AmountBody {
                        currency: a.currency.clone(),
                        billable_minor: a.billable_minor,
                        cost_minor: visibility.cost.then_some(a.cost_minor),
                    })
                    .collect()
            }),
        }
    }
}

/// A group: its key (an id or a period; null for "none"), its label, figures and subgroups.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GroupBody {
    key: Option<String>,
    label: String,
    #[serde(flatten)]
    figures: FiguresBody,
    #[schema(no_recursion)]
    groups: Vec<GroupBody>,
}

impl GroupBody {
    fn new(g: &SummaryGroup, visibility: Visibility) -> Self {
        Self {
            key: g.value.key.clone(),
            label: g.value.label.clone(),
            figures: FiguresBody::new(&g.figures, visibility),
            groups: g.groups.iter().map(|s| Self::new(s, visibility)).collect(),
        }
    }
}

/// What a report ran with.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MetaBody {
    timezone: String,
    /// `workspace` or `none`.
    rounding: &'static str,
    from: String,
    to: String,
    /// Whether an entry may count under several groups (grouped by tag).
    tag_overlap: bool,
}

impl MetaBody {
    fn new(scope: &ReportScope, tag_overlap: bool) -> Self {
        Self {
            timezone: scope.filter.timezone.clone(),
            rounding: scope.rounding_name,
            from: iso_date(scope.filter.from),
            to: iso_date(scope.filter.to),
            tag_overlap,
        }
    }
}

/// `{totals, groups, meta}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SummaryResponse {
    totals: FiguresBody,
    groups: Vec<GroupBody>,
    meta: MetaBody,
}

/// `{id, name}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NamedBody {
    id: String,
    name: String,
}

fn named(n: &Option<Named>) -> Option<NamedBody> {
    n.as_ref().map(|n| NamedBody {
        id: n.id.clone(),
        name: n.name.clone(),
    })
}

/// A row's price; money keys only for who may see them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RowPricingBody {
    currency: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    billable_rate_minor: Option<Option<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    billable_amount_minor: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_rate_minor: Option<Option<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_amount_minor: Option<i64>,
}

/// An entry of the detailed report.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DetailedRowBody {
    id: String,
    date: String,
    start: String,
    end: String,
    seconds: i64,
    rounded_seconds: i64,
    description: String,
    billable: bool,
    user: NamedBody,
    client: Option<NamedBody>,
    project: Option<NamedBody>,
    task: Option<NamedBody>,
    tags: Vec<NamedBody>,
    pricing: RowPricingBody,
}

impl DetailedRowBody {
    fn new(r: &DetailedRow, v: Visibility) -> Self {
        Self {
            id: r.id.to_string(),
            date: iso_date(r.date),
            start: rfc3339(r.start),
            end: rfc3339(r.end),
            seconds: r.seconds,
            rounded_seconds: r.rounded_seconds,
            description: r.description.clone(),
            billable: r.billable,
            user: NamedBody {
                id: r.user.id.clone(),
                name: r.user.name.clone(),
            },
            client: named(&r.client),
            project: named(&r.project),
            task: named(&r.task),
            tags: r
                .tags
                .iter()
                .map(|t| NamedBody {
                    id: t.id.clone(),
                    name: t.name.clone(),
                })
                .collect(),
            pricing: RowPricingBody {
                currency: r.currency.clone(),
                billable_rate_minor: v.billable.then_some(r.billable_rate_minor),
                billable_amount_minor: v.billable.then_some(r.billable_amount_minor),
                cost_rate_minor: v.cost.then_some(r.cost_rate_minor),
                cost_amount_minor: v.cost.then_some(r.cost_amount_minor),
            },
        }
    }
}

/// `{data, next_cursor, totals, meta}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DetailedResponse {
    data: Vec<DetailedRowBody>,
    next_cursor: Option<String>,
    totals: FiguresBody,
    meta: MetaBody,
}

/// A line of the uninvoiced report.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UninvoicedLineBody {
    client: Option<NamedBody>,
    project: Option<NamedBody>,
    currency: String,
    billable_seconds: i64,
    rounded_seconds: i64,
    entries: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    billable_minor: Option<i64>,
}

/// `{data, totals, meta}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UninvoicedResponse {
    data: Vec<UninvoicedLineBody>,
    totals: FiguresBody,
    meta: MetaBody,
}

fn uninvoiced_line(r: &UninvoicedRow, v: Visibility) -> UninvoicedLineBody {
    let amount = r.figures.amounts.first();
    UninvoicedLineBody {
        client: named(&r.client),
        project: named(&r.project),
        currency: amount.map(|a| a.currency.clone()).unwrap_or_default(),
        billable_seconds: r.figures.billable_seconds,
        rounded_seconds: r.figures.rounded_seconds,
        entries: r.figures.entries,
        billable_minor: v.billable.then(|| amount.map_or(0, |a| a.billable_minor)),
    }
}

/// `GET /api/reports/summary`.
#[utoipa::path(
    operation_id = "reportSummary",
    get,
    path = "/api/reports/summary",
    tag = "Billing",
    summary = "Totals of tracked time and money, grouped by one to three keys (JSON or CSV)",
    security(("bearer_auth" = [])),
    params(ReportQuery),
    responses(
        (status = 200, description = "The summary (text/csv with Accept: text/csv or format=csv)", content((SummaryResponse = "application/json"), (String = "text/csv"))),
        (status = 400, description = "Invalid request parameters or filter", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn summary(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    query: QueryParams<ReportQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let csv = query.wants_csv(&req)?;
    summary_of(state, caller, seen, query, csv).await
}

/// The summary `query` asks for, as CSV or JSON: the REST handler's work, which the MCP tool
/// `summary_report` shares.
pub(crate) async fn summary_of(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    query: QueryParams<ReportQuery>,
    csv: bool,
) -> Result<HttpResponse, ApiError> {
    let group_by = GroupKey::parse_list(
        query
            .group_by
            .as_deref()
            .ok_or_else(|| invalid("group_by is required: one to three of client, project, task, user, tag, day, week, month"))?,
    )?;
    let request = query.request()?;
    let (scope, summary) = crate::read_lagging!(state, &caller.0, seen, |s| {
        let scope = s.reports.scope(&caller.0, request.clone()).await?;
        let summary = s.reports.summary(&caller.0, &scope, &group_by).await?;
        Ok((scope, summary))
    })?;
    let v = scope.visibility;
    if csv {
        let rows = summary_csv(&summary.groups, &summary.totals, group_by.len(), v);
        return Ok(csv_response("summary", &scope).body(csv_bytes(&rows)?));
    }
    Ok(HttpResponse::Ok().json(SummaryResponse {
        totals: FiguresBody::new(&summary.totals, v),
        groups: summary
            .groups
            .iter()
            .map(|g| GroupBody::new(g, v))
            .collect(),
        meta: MetaBody::new(&scope, summary.tag_overlap),
    }))
}

/// `GET /api/reports/detailed`.
#[utoipa::path(
    operation_id = "reportDetailed",
    get,
    path = "/api/reports/detailed",
    tag = "Billing",
    summary = "The entries, oldest first, keyset-paged, with the totals of the whole filter (JSON or streamed CSV)",
    security(("bearer_auth" = [])),
    params(ReportQuery, PageQuery),
    responses(
        (status = 200, description = "A page (the whole filter as text/csv with Accept: text/csv or format=csv)", content((DetailedResponse = "application/json"), (String = "text/csv"))),
        (status = 400, description = "Invalid request parameters or filter", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn detailed(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    query: QueryParams<ReportQuery>,
    page: QueryParams<PageQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let csv = query.wants_csv(&req)?;
    let limit = page.limit.unwrap_or(DEFAULT_DETAILED_PAGE);
    if !(1..=MAX_DETAILED_PAGE).contains(&limit) {
        return Err(invalid(format!(
            "limit must be between 1 and {MAX_DETAILED_PAGE}"
        )));
    }
    let after = page.cursor.as_deref().map(Cursor::decode).transpose()?;
    let request = query.request()?;
    if csv {
        // Streamed page by page from one side: the replica when it serves the caller now.
        let on = AppState::serving(&state, &caller.0, seen);
        let scope = on.reports.scope(&caller.0, request).await?;
        return Ok(csv_response("detailed", &scope).streaming(detailed_stream(on, caller.0, scope)));
    }
    let (scope, rows, next, totals) = crate::read_lagging!(state, &caller.0, seen, |s| {
        let scope = s.reports.scope(&caller.0, request.clone()).await?;
        let (rows, next) = s.reports.detailed(&caller.0, &scope, after, limit).await?;
        let totals = s.reports.totals(&caller.0, &scope).await?;
        Ok((scope, rows, next, totals))
    })?;
    let v = scope.visibility;
    Ok(HttpResponse::Ok().json(DetailedResponse {
        data: rows.iter().map(|r| DetailedRowBody::new(r, v)).collect(),
        next_cursor: next.map(|c| c.encode()),
        totals: FiguresBody::new(&totals, v),
        meta: MetaBody::new(&scope, false),
    }))
}

/// `GET /api/reports/uninvoiced`.
#[utoipa::path(
    operation_id = "reportUninvoiced",
    get,
    path = "/api/reports/uninvoiced",
    tag = "Billing",
    summary = "Billable time on no invoice, per client, project and currency (JSON or CSV)",
    security(("bearer_auth" = [])),
    params(ReportQuery),
    responses(
        (status = 200, description = "The lines (text/csv with Accept: text/csv or format=csv)", content((UninvoicedResponse = "application/json"), (String = "text/csv"))),
        (status = 400, description = "Invalid request parameters or filter", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn uninvoiced(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    query: QueryParams<ReportQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let csv = query.wants_csv(&req)?;
    let request = query.request()?;
    let (scope, rows) = crate::read_lagging!(state, &caller.0, seen, |s| {
        let mut scope = s.reports.scope(&caller.0, request.clone()).await?;
        // Billable time on no invoice, whatever the flags say.
        scope.filter.billable = Some(true);
        scope.filter.invoiced = Some(false);
        let rows = s.reports.uninvoiced(&caller.0, &scope).await?;
        Ok((scope, rows))
    })?;
    let v = scope.visibility;
    let mut totals = Figures::default();
    for row in &rows {
        totals.add(&row.figures)?;
    }
    if csv {
        let mut header: Vec<String> = [
            "client_id",
            "client_name",
            "project_id",
            "project_name",
            "currency",
            "billable_seconds",
            "rounded_seconds",
            "entries",
        ]
        .map(str::to_owned)
        .to_vec();
        if v.billable {
            header.push("billable_amount".into());
        }
        let mut lines = vec![header];
        for row in &rows {
            let line = uninvoiced_line(row, v);
            let mut cells = vec![
                line.client
                    .as_ref()
                    .map(|c| c.id.clone())
                    .unwrap_or_default(),
                line.client
                    .as_ref()
                    .map(|c| text_cell(&c.name))
                    .unwrap_or_default(),
                line.project
                    .as_ref()
                    .map(|p| p.id.clone())
                    .unwrap_or_default(),
                line.project
                    .as_ref()
                    .map(|p| text_cell(&p.name))
                    .unwrap_or_default(),
                line.currency.clone(),
                line.billable_seconds.to_string(),
                line.rounded_seconds.to_string(),
                line.entries.to_string(),
            ];
            if let Some(minor) = line.billable_minor {
                cells.push(major_units(minor, &line.currency));
            }
            lines.push(cells);
        }
        return Ok(csv_response("uninvoiced", &scope).body(csv_bytes(&lines)?));
    }
    Ok(HttpResponse::Ok().json(UninvoicedResponse {
        data: rows.iter().map(|r| uninvoiced_line(r, v)).collect(),
        totals: FiguresBody::new(&totals, v),
        meta: MetaBody::new(&scope, false),
    }))
}
