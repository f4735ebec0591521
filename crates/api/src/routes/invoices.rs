//! `/api/invoices`: invoices from tracked time (`docs/billing.md`, section 5), for owners and
//! admins: preview and create, list and read, a draft's edits and deletion, issue, void, and
//! payments.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ClientId, InvoiceId, PaymentId, ProjectId};
use timetrack_domain::model::invoice::{decimal_milli, parse_milli};
use timetrack_domain::model::{
    ExtraLine, InvoiceFilter, InvoiceLine, InvoiceStatus, LineGroup, PageRequest, PaymentStatus,
    Percent,
};
use timetrack_domain::services::{InvoicePatch, InvoiceRequest, InvoiceView, NewPayment};
use timetrack_domain::timefmt::{iso_date, rfc3339};
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::{
    Caller, Given, Id, JsonBody, JsonOrEmpty, QueryParams, Unread, body_date, nullable,
};
use crate::openapi::{ErrorBody, SuccessBody, fields};
use crate::routes::ListResponse;
use crate::state::AppState;

/// `{id, name}` of the client billed, with the address printed on the invoice.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InvoiceClientBody {
    id: String,
    name: String,
    address: Option<String>,
}

/// `{from, to}`: the days billed, in the workspace's time zone.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PeriodBody {
    from: String,
    to: String,
}

/// A line: `{id, kind, description, quantity, unit_price_minor, amount_minor, entry_ids}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LineBody {
    /// Absent in a preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// `time` (tracked entries) or `extra`.
    kind: &'static str,
    description: String,
    /// A decimal string with 3 decimals (hours for time: `"1.500"`).
    quantity: String,
    /// Minor units per unit (an hour for time).
    unit_price_minor: i64,
    /// Minor units: the sum of its entries' amounts (time), or quantity × unit price rounded
    /// half up (extra).
    amount_minor: i64,
    /// The entries it bills, oldest first.
    entry_ids: Vec<String>,
}

impl LineBody {
    fn new(line: &InvoiceLine, with_id: bool) -> Self {
        Self {
            id: with_id.then(|| line.id.to_string()),
            kind: if line.extra { "extra" } else { "time" },
            description: line.description.clone(),
            quantity: decimal_milli(line.quantity_milli, true),
            unit_price_minor: line.unit_price_minor,
            amount_minor: line.amount_minor,
            entry_ids: line.entry_ids.iter().map(|id| id.to_string()).collect(),
        }
    }
}

/// A payment: `{id, amount_minor, paid_on, note, created_at}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PaymentBody {
    id: String,
    amount_minor: i64,
    paid_on: String,
    note: Option<String>,
    created_at: String,
}

/// An invoice. Amounts are integer minor units of `currency`; `total_minor = subtotal_minor −
/// discount_minor + tax_minor`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InvoiceBody {
    /// Absent in a preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// Null while a draft.
    number: Option<String>,
    /// `draft`, `issued` or `void`.
    status: &'static str,
    /// `unpaid`, `partially_paid`, `paid` or `overdue`.
    payment_status: &'static str,
    /// The issuer: the workspace's name.
    issuer: String,
    client: InvoiceClientBody,
    currency: String,
    issue_date: Option<String>,
    due_date: Option<String>,
    period: PeriodBody,
    /// How the time lines are grouped.
    group_by: Vec<&'static str>,
    lines: Vec<LineBody>,
    subtotal_minor: i64,
    /// A decimal string (`"10"`, `"12.5"`).
    discount_percent: String,
    discount_minor: i64,
    /// A decimal string, on what remains after the discount.
    tax_percent: String,
    tax_minor: i64,
    total_minor: i64,
    paid_minor: i64,
    balance_minor: i64,
    payments: Vec<PaymentBody>,
    notes: Option<String>,
    void_reason: Option<String>,
    /// Absent in a preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<String>,
    /// Absent in a preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
}

impl InvoiceBody {
    fn new(view: InvoiceView, stored: bool) -> Self {
        let i = view.invoice;
        Self {
            id: stored.then(|| i.id.to_string()),
            number: i.number.clone(),
            status: i.status.as_str(),
            payment_status: view.payment_status.as_str(),
            issuer: i.issuer_name.clone(),
            client: InvoiceClientBody {
                id: i.client.id.to_string(),
                name: i.client.name.clone(),
                address: i.client.address.clone(),
            },
            currency: i.currency.clone(),
            issue_date: i.issue_date.map(iso_date),
            due_date: i.due_date.map(iso_date),
            period: PeriodBody {
                from: iso_date(i.period_from),
                to: iso_date(i.period_to),
            },
            group_by: i.group_by.iter().map(|g| g.as_str()).collect(),
            lines: i.lines.iter().map(|l| LineBody::new(l, stored)).collect(),
            subtotal_minor: i.totals.subtotal_minor,
            discount_percent: i.discount_percent.to_decimal(),
            discount_minor: i.totals.discount_minor,
            tax_percent: i.tax_percent.to_decimal(),
            tax_minor: i.totals.tax_minor,
            total_minor: i.totals.total_minor,
            paid_minor: i.paid_minor(),
            balance_minor: i.balance_minor(),
            payments: i
                .payments
                .iter()
                .map(|p| PaymentBody {
                    id: p.id.to_string(),
                    amount_minor: p.amount_minor,
                    paid_on: iso_date(p.paid_on),
                    note: p.note.clone(),
                    created_at: rfc3339(p.created_at),
                })
                .collect(),
            notes: i.notes.clone(),
            void_reason: i.void_reason.clone(),
            created_at: stored.then(|| rfc3339(i.created_at)),
            updated_at: stored.then(|| rfc3339(i.updated_at)),
        }
    }
}

/// A decimal as a client may send it: a JSON number or a string (`1.5`, `"1.5"`), kept as its
/// text for the domain's exact parsers ([`Percent::parse`], [`parse_milli`]); any other value is
/// `Given::Invalid`, refused with the field's own message.
#[derive(Debug, Clone, PartialEq)]
pub struct DecimalText(String);

impl<'de> Deserialize<'de> for DecimalText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(s) => Ok(Self(s)),
            Value::Number(n) => {
                // serde_json prints 1.5 as "1.5", 2 as "2", 1e2 as "100.0".
                let text = n.to_string();
                Ok(Self(
                    text.strip_suffix(".0").map(str::to_owned).unwrap_or(text),
                ))
            }
            _ => Err(serde::de::Error::custom("not a number")),
        }
    }
}

/// The text of a decimal field, or 400 `<field> must be a number`.
fn decimal<'a>(field: &str, given: &'a Given<DecimalText>) -> Result<&'a str, ApiError> {
    match given {
        Given::Valid(DecimalText(text)) => Ok(text),
        Given::Invalid(_) => {
            Err(DomainError::validation(format!("{field} must be a number")).into())
        }
    }
}

/// An amount in minor units, or 400 `<field> must be an integer (minor units)`.
fn minor_units(field: &str, given: &Given<i64>) -> Result<i64, ApiError> {
    match given {
        Given::Valid(minor) => Ok(*minor),
        Given::Invalid(_) => {
            Err(DomainError::validation(format!("{field} must be an integer (minor units)")).into())
        }
    }
}

fn percent(field: &str, given: Option<&Given<DecimalText>>) -> Result<Option<Percent>, ApiError> {
    given
        .map(|g| Ok(Percent::parse(field, decimal(field, g)?)?))
        .transpose()
}

/// An extra line of a body: `{description, quantity, unit_price_minor}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ExtraLineBody {
    #[schema(schema_with = fields::line_description, required = true)]
    description: Option<String>,
    #[schema(schema_with = fields::quantity, required = true)]
    quantity: Option<Given<DecimalText>>,
    #[schema(schema_with = fields::unit_price_minor, required = true)]
    unit_price_minor: Option<Given<i64>>,
}

fn extra_lines(lines: &[ExtraLineBody]) -> Result<Vec<ExtraLine>, ApiError> {
    lines
        .iter()
        .enumerate()
        .map(|(n, l)| {
            let field = |name: &str| format!("extra_lines[{n}].{name}");
            let required = |name: &str| DomainError::validation(format!("{} is required", field(name)));
            let description = l.description.as_deref().ok_or_else(|| required("description"))?;
            let quantity = decimal(
                &field("quantity"),
                l.quantity.as_ref().ok_or_else(|| required("quantity"))?,
            )?;
            let quantity = parse_milli(quantity).ok_or_else(|| {
                DomainError::validation(format!(
                    "{} must be a number from 0 to 1000000 with at most 3 decimals, got: {quantity}",
                    field("quantity")
                ))
            })?;
            let price = minor_units(
                &field("unit_price_minor"),
                l.unit_price_minor
                    .as_ref()
                    .ok_or_else(|| required("unit_price_minor"))?,
            )?;
            Ok(ExtraLine::new(n, description, quantity, price)?)
        })
        .collect()
}

/// Body of `POST /api/invoices` and `/api/invoices/preview`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct InvoiceRequestBody {
    /// The client billed (its projects' entries).
    #[schema(schema_with = fields::billed_client, required = true)]
    client_id: Option<Uuid>,
    /// The first day (YYYY-MM-DD, the workspace's time zone).
    #[schema(schema_with = fields::date, required = true)]
    from: Option<String>,
    /// The last day, inclusive; at most 366 days after `from`.
    #[schema(schema_with = fields::date, required = true)]
    to: Option<String>,
    #[serde(default)]
    #[schema(schema_with = fields::project_ids)]
    project_ids: Vec<Uuid>,
    #[serde(default)]
    #[schema(schema_with = fields::line_groups)]
    group_by: Vec<String>,
    /// On what remains after the discount.
    #[schema(schema_with = fields::percent)]
    tax_percent: Option<Given<DecimalText>>,
    #[schema(schema_with = fields::percent)]
    discount_percent: Option<Given<DecimalText>>,
    /// Printed on the invoice.
    #[schema(schema_with = fields::invoice_notes)]
    notes: Option<String>,
    /// Lines beyond tracked time, at most 100.
    #[serde(default)]
    extra_lines: Vec<ExtraLineBody>,
}

impl InvoiceRequestBody {
    fn parse(&self) -> Result<InvoiceRequest, ApiError> {
        let required = |field: &str| DomainError::validation(format!("{field} is required"));
        Ok(InvoiceRequest {
            client_id: ClientId(self.client_id.ok_or_else(|| required("client_id"))?),
            from: body_date(
                "from",
                self.from.as_deref().ok_or_else(|| required("from"))?,
            )?,
            to: body_date("to", self.to.as_deref().ok_or_else(|| required("to"))?)?,
            project_ids: self.project_ids.iter().copied().map(ProjectId).collect(),
            group_by: LineGroup::parse_list(&self.group_by)?,
            tax_percent: percent("tax_percent", self.tax_percent.as_ref())?.unwrap_or_default(),
            discount_percent: percent("discount_percent", self.discount_percent.as_ref())?
                .unwrap_or_default(),
            notes: timetrack_domain::services::InvoiceService::notes(self.notes.as_deref())?,
            extra_lines: extra_lines(&self.extra_lines)?,
        })
    }
}

/// Body of `PATCH /api/invoices/{id}` (drafts only): each field optional; null clears notes and
/// dates.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct InvoicePatchBody {
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::invoice_notes)]
    notes: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::nullable_date)]
    issue_date: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::nullable_date)]
    due_date: Option<Option<String>>,
    #[schema(schema_with = fields::percent)]
    tax_percent: Option<Given<DecimalText>>,
    #[schema(schema_with = fields::percent)]
    discount_percent: Option<Given<DecimalText>>,
    /// Replaces the extra lines.
    extra_lines: Option<Vec<ExtraLineBody>>,
}

impl InvoicePatchBody {
    fn parse(&self) -> Result<InvoicePatch, ApiError> {
        let date = |field: &str, value: &Option<Option<String>>| -> Result<_, ApiError> {
            Ok(match value {
                None => None,
                Some(None) => Some(None),
                Some(Some(v)) => Some(Some(body_date(field, v)?)),
            })
        };
        Ok(InvoicePatch {
            notes: match &self.notes {
                None => None,
                Some(n) => Some(timetrack_domain::services::InvoiceService::notes(
                    n.as_deref(),
                )?),
            },
            issue_date: date("issue_date", &self.issue_date)?,
            due_date: date("due_date", &self.due_date)?,
            tax_percent: percent("tax_percent", self.tax_percent.as_ref())?,
            discount_percent: percent("discount_percent", self.discount_percent.as_ref())?,
            extra_lines: self.extra_lines.as_deref().map(extra_lines).transpose()?,
        })
    }
}

/// Body of `POST /api/invoices/{id}/void`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct VoidBody {
    /// Why.
    #[schema(schema_with = fields::void_reason, required = true)]
    reason: Option<String>,
}

/// Body of `POST /api/invoices/{id}/payments`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct PaymentRequestBody {
    #[schema(schema_with = fields::payment_amount, required = true)]
    amount_minor: Option<Given<i64>>,
    #[schema(schema_with = fields::date, required = true)]
    paid_on: Option<String>,
    #[schema(schema_with = fields::payment_note)]
    note: Option<String>,
}

/// `?status=&payment_status=&client_id=&limit=&cursor=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InvoiceQuery {
    #[param(schema_with = fields::invoice_status)]
    status: Option<String>,
    #[param(schema_with = fields::payment_status)]
    payment_status: Option<String>,
    #[param(schema_with = fields::client_filter)]
    client_id: Option<String>,
    #[param(schema_with = fields::page_limit)]
    limit: Option<u32>,
    #[param(schema_with = fields::page_cursor)]
    cursor: Option<String>,
}

/// `?format=json|pdf` of `GET /api/invoices/{id}`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InvoiceFormat {
    /// `pdf` for the document; `json` (the default) for the record. Without it, `Accept:
    /// application/pdf` asks for the document.
    #[param(schema_with = fields::invoice_format)]
    format: Option<String>,
}

impl InvoiceFormat {
    /// Whether the answer is the PDF: `?format=pdf`, or `Accept: application/pdf` without a
    /// format.
    fn wants_pdf(&self, req: &HttpRequest) -> Result<bool, ApiError> {
        match self.format.as_deref() {
            Some("pdf") => Ok(true),
            Some("json") => Ok(false),
            Some(other) => Err(DomainError::validation(format!(
                "format must be json or pdf, got: {other}"
            ))
            .into()),
            None => Ok(req
                .headers()
                .get(actix_web::http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|accept| accept.to_ascii_lowercase().contains("application/pdf"))),
        }
    }
}

/// The file name of an invoice's PDF: its number (or id), in safe characters.
fn pdf_name(view: &InvoiceView) -> String {
    let name: String = view
        .invoice
        .number
        .clone()
        .unwrap_or_else(|| view.invoice.id.to_string())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("invoice-{name}.pdf")
}

/// `POST /api/invoices/preview`.
#[utoipa::path(
    operation_id = "previewInvoice",
    post,
    path = "/api/invoices/preview",
    tag = "Billing",
    summary = "The invoice a create would make now, written nowhere (owners and admins)",
    security(("bearer_auth" = [])),
    request_body = InvoiceRequestBody,
    responses(
        (status = 200, description = "The invoice, without ids", body = InvoiceBody),
        (status = 400, description = "Invalid fields, or a client or project not the workspace's", body = ErrorBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 409, description = "Nothing to invoice", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn preview(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<InvoiceRequestBody>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner().parse()?;
    let view = state.invoices.preview(&caller.0, &request).await?;
    Ok(HttpResponse::Ok().json(InvoiceBody::new(view, false)))
}

/// `POST /api/invoices`.
#[utoipa::path(
    operation_id = "createInvoice",
    post,
    path = "/api/invoices",
    tag = "Billing",
    summary = "Create a draft from a client's uninvoiced time, locking its entries, in one transaction (owners and admins)",
    security(("bearer_auth" = [])),
    request_body = InvoiceRequestBody,
    responses(
        (status = 201, description = "The draft", body = InvoiceBody),
        (status = 400, description = "Invalid fields, or a client or project not the workspace's", body = ErrorBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 409, description = "Nothing to invoice", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<InvoiceRequestBody>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner().parse()?;
    let view = state.invoices.create(&caller.0, &request).await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(InvoiceBody::new(view, true)))
}

/// `GET /api/invoices`.
#[utoipa::path(
    operation_id = "listInvoices",
    get,
    path = "/api/invoices",
    tag = "Billing",
    summary = "The workspace's invoices, newest first (owners and admins)",
    security(("bearer_auth" = [])),
    params(InvoiceQuery),
    responses(
        (status = 200, description = "A page", body = ListResponse<InvoiceBody>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 403, description = "A member", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<InvoiceQuery>,
) -> Result<HttpResponse, ApiError> {
    let filter = InvoiceFilter {
        status: query
            .status
            .as_deref()
            .map(InvoiceStatus::parse)
            .transpose()?,
        payment_status: query
            .payment_status
            .as_deref()
            .map(PaymentStatus::parse)
            .transpose()?,
        client_id: query
            .client_id
            .as_deref()
            .map(|v| {
                v.parse::<Uuid>()
                    .map(ClientId)
                    .map_err(|_| DomainError::validation("client_id must be a UUID"))
            })
            .transpose()?,
        today: None,
    };
    let page = PageRequest::new(query.limit, query.cursor.as_deref())?;
    let page = state.invoices.list(&caller.0, filter, page).await?;
    Ok(HttpResponse::Ok().json(ListResponse::from_page(page, |v| InvoiceBody::new(v, true))))
}

/// `GET /api/invoices/{id}`.
#[utoipa::path(
    operation_id = "getInvoice",
    get,
    path = "/api/invoices/{id}",
    tag = "Billing",
    summary = "An invoice with its lines and payments, or its PDF (owners and admins)",
    security(("bearer_auth" = [])),
    params(
        crate::openapi::paths::InvoicePath,
        InvoiceFormat
    ),
    responses(
        (status = 200, description = "The invoice (application/pdf with Accept: application/pdf or format=pdf)", content((InvoiceBody = "application/json"), (String = "application/pdf"))),
        (status = 400, description = "An unknown format", body = ErrorBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 404, description = "Invoice not found", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn get(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    query: QueryParams<InvoiceFormat>,
    id: Id<InvoiceId>,
) -> Result<HttpResponse, ApiError> {
    let pdf = query.wants_pdf(&req)?;
    let view = state.invoices.get(&caller.0, id.get()?).await?;
    if !pdf {
        return Ok(HttpResponse::Ok().json(InvoiceBody::new(view, true)));
    }
    // Rendering is CPU work: on the blocking pool, off the worker's event loop.
    let name = pdf_name(&view);
    let service = state.invoices.clone();
    let bytes = web::block(move || service.render(&view))
        .await
        .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("rendering a PDF: {e}")))??;
    Ok(HttpResponse::Ok()
        .content_type("application/pdf")
        .insert_header((
            actix_web::http::header::CONTENT_DISPOSITION,
            format!("inline; filename=\"{name}\""),
        ))
        .body(bytes))
}

/// `PATCH /api/invoices/{id}`.
#[utoipa::path(
    operation_id = "updateInvoice",
    patch,
    path = "/api/invoices/{id}",
    tag = "Billing",
    summary = "Change a draft's notes, dates, tax, discount or extra lines; the totals follow (owners and admins)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::InvoicePath),
    request_body = InvoicePatchBody,
    responses(
        (status = 200, description = "The draft", body = InvoiceBody),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 404, description = "Invoice not found", body = ErrorBody),
        (status = 409, description = "Invoice is issued (or void)", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<InvoicePatchBody>,
    id: Id<InvoiceId>,
) -> Result<HttpResponse, ApiError> {
    let id = id.get()?;
    let patch = body.into_inner().parse()?;
    let view = state.invoices.update(&caller.0, id, &patch).await?;
    Ok(HttpResponse::Ok().json(InvoiceBody::new(view, true)))
}

/// `DELETE /api/invoices/{id}`.
#[utoipa::path(
    operation_id = "deleteInvoice",
    delete,
    path = "/api/invoices/{id}",
    tag = "Billing",
    summary = "Delete a draft, releasing its entries (owners and admins)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::InvoicePath),
    responses(
        (status = 200, description = "Deleted", body = SuccessBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 404, description = "Invoice not found", body = ErrorBody),
        (status = 409, description = "Invoice is issued (or void)", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
    id: Id<InvoiceId>,
) -> Result<HttpResponse, ApiError> {
    state.invoices.delete(&caller.0, id.get()?).await?;
    Ok(HttpResponse::Ok().json(SuccessBody::TRUE))
}

/// `POST /api/invoices/{id}/issue`.
#[utoipa::path(
    operation_id = "issueInvoice",
    post,
    path = "/api/invoices/{id}/issue",
    tag = "Billing",
    summary = "Issue a draft: the next number of the workspace's pattern, its dates, frozen from now on (owners and admins)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::InvoicePath),
    responses(
        (status = 200, description = "The issued invoice", body = InvoiceBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 404, description = "Invoice not found", body = ErrorBody),
        (status = 409, description = "Invoice is issued, or void", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn issue(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
    id: Id<InvoiceId>,
) -> Result<HttpResponse, ApiError> {
    let view = state.invoices.issue(&caller.0, id.get()?).await?;
    Ok(HttpResponse::Ok().json(InvoiceBody::new(view, true)))
}

/// `POST /api/invoices/{id}/void`.
#[utoipa::path(
    operation_id = "voidInvoice",
    post,
    path = "/api/invoices/{id}/void",
    tag = "Billing",
    summary = "Void an issued invoice with a reason, releasing its entries (owners and admins)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::InvoicePath),
    request_body = VoidBody,
    responses(
        (status = 200, description = "The void invoice", body = InvoiceBody),
        (status = 400, description = "No reason, or one too long", body = ErrorBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 404, description = "Invoice not found", body = ErrorBody),
        (status = 409, description = "Invoice is a draft (delete it instead), or void already", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn void(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<VoidBody>,
    id: Id<InvoiceId>,
) -> Result<HttpResponse, ApiError> {
    let id = id.get()?;
    let body = body.into_inner();
    let view = state
        .invoices
        .void(&caller.0, id, body.reason.as_deref())
        .await?;
    Ok(HttpResponse::Ok().json(InvoiceBody::new(view, true)))
}

/// `POST /api/invoices/{id}/payments`.
#[utoipa::path(
    operation_id = "addInvoicePayment",
    post,
    path = "/api/invoices/{id}/payments",
    tag = "Billing",
    summary = "Record a payment on an issued invoice, at most its balance (owners and admins)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::InvoicePath),
    request_body = PaymentRequestBody,
    responses(
        (status = 201, description = "The invoice with the payment", body = InvoiceBody),
        (status = 400, description = "Invalid fields, or more than the balance", body = ErrorBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 404, description = "Invoice not found", body = ErrorBody),
        (status = 409, description = "Invoice is a draft, or void", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn add_payment(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<PaymentRequestBody>,
    id: Id<InvoiceId>,
) -> Result<HttpResponse, ApiError> {
    let id = id.get()?;
    let body = body.into_inner();
    let required = |field: &str| DomainError::validation(format!("{field} is required"));
    let amount_minor = minor_units(
        "amount_minor",
        body.amount_minor
            .as_ref()
            .ok_or_else(|| required("amount_minor"))?,
    )?;
    let payment = NewPayment {
        amount_minor,
        paid_on: body_date(
            "paid_on",
            body.paid_on.as_deref().ok_or_else(|| required("paid_on"))?,
        )?,
        note: body.note,
    };
    let view = state.invoices.add_payment(&caller.0, id, &payment).await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(InvoiceBody::new(view, true)))
}

/// `DELETE /api/invoices/{id}/payments/{payment_id}`.
#[utoipa::path(
    operation_id = "deleteInvoicePayment",
    delete,
    path = "/api/invoices/{id}/payments/{payment_id}",
    tag = "Billing",
    summary = "Delete a payment of an issued invoice (owners and admins)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::InvoicePath, crate::openapi::paths::PaymentPath),
    responses(
        (status = 200, description = "The invoice without the payment", body = InvoiceBody),
        (status = 403, description = "A member", body = ErrorBody),
        (status = 404, description = "Invoice or payment not found", body = ErrorBody),
        (status = 409, description = "Invoice is void", body = ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delete_payment(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
    id: Id<InvoiceId>,
    payment: Id<PaymentId>,
) -> Result<HttpResponse, ApiError> {
    let (id, payment) = (id.get()?, payment.get()?);
    let view = state
        .invoices
        .delete_payment(&caller.0, id, payment)
        .await?;
    Ok(HttpResponse::Ok().json(InvoiceBody::new(view, true)))
}
