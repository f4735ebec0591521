//! The catch-up feed (`events.md` section 5): the workspace's events, oldest first, by cursor.

use actix_web::web;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use timetrack_domain::DomainError;
use timetrack_domain::model::{EventType, FeedEvent};
use timetrack_domain::services::feed::DEFAULT_FEED_LIMIT;
use timetrack_domain::timefmt::rfc3339;

use crate::error::ApiError;
use crate::extract::{Caller, QueryParams};
use crate::replica::ReadAfter;
use crate::state::AppState;

/// The feed's query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FeedQuery {
    /// The `next_cursor` of an earlier page; absent, from the oldest retained event.
    after: Option<String>,
    /// Read backwards instead, newest first: `latest` for the newest events, then the
    /// `next_cursor` of the previous backward page for older ones (a short page means the
    /// oldest was reached; a read past it is empty). Not with `after`.
    before: Option<String>,
    /// Event types, comma-separated (every type but `WEBHOOK_TEST` when absent or empty).
    types: Option<String>,
    /// Events per page, 1 to 1000; 100 when absent.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

/// An event of the feed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FeedEventObject {
    /// The event id: the `webhook-id` of its deliveries.
    id: String,
    /// The event type.
    #[serde(rename = "type")]
    event_type: &'static str,
    /// When it was recorded.
    created_at: String,
    /// The delivered body, byte for byte.
    #[schema(schema_with = crate::openapi::fields::event_payload)]
    payload: Box<RawValue>,
}

impl TryFrom<FeedEvent> for FeedEventObject {
    type Error = ApiError;

    fn try_from(e: FeedEvent) -> Result<Self, ApiError> {
        let payload = RawValue::from_string(e.body).map_err(|err| {
            ApiError::from(DomainError::Unexpected(anyhow::anyhow!(
                "a stored event body is not JSON: {err}"
            )))
        })?;
        Ok(Self {
            id: e.id.to_string(),
            event_type: e.event_type.as_str(),
            created_at: rfc3339(e.created_at),
            payload,
        })
    }
}

/// `{data: [...], next_cursor}`: `next_cursor` is on every page, an empty one too.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FeedPageObject {
    /// The events, oldest first (newest first when read with `before`).
    data: Vec<FeedEventObject>,
    /// Where the next read goes on.
    next_cursor: String,
}

/// Parses `types`: comma-separated published names; an unknown one is `Invalid event type: X`.
fn parse_types(raw: Option<&str>) -> Result<Vec<EventType>, DomainError> {
    let raw = raw.unwrap_or_default();
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let mut types = Vec::new();
    for name in raw.split(',') {
        let t = EventType::parse(name)
            .ok_or_else(|| DomainError::validation(format!("Invalid event type: {name}")))?;
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Ok(types)
}

/// `GET /api/integrations/automation/events`: the catch-up feed.
#[utoipa::path(
    operation_id = "listEvents",
    get,
    path = "/api/integrations/automation/events",
    tag = "Events",
    summary = "The workspace's events, oldest first: the polling fallback and the proof that nothing was missed",
    description = "Events are shown once their transaction, and every older one, has ended, so a \
                   cursor never passes an event that commits late. `next_cursor` is on every \
                   page; a cursor belongs to the `types` it was read with. A notice about a \
                   webhook (`WEBHOOK_FAILING`, ...) shows only to that webhook's owner; \
                   `WEBHOOK_TEST` is never shown. With `before` (`latest`, then the previous \
                   page's `next_cursor`) the feed is read backwards, newest first, for people \
                   browsing it; pollers use `after`.",
    security(("bearer_auth" = [])),
    params(FeedQuery),
    responses(
        (status = 200, description = "A page of events, oldest first", body = FeedPageObject),
        (status = 400, description = "Invalid event type, limit or cursor, or a cursor older than the retained events", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn feed(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    query: QueryParams<FeedQuery>,
) -> Result<web::Json<FeedPageObject>, ApiError> {
    let QueryParams(query) = query;
    let types = parse_types(query.types.as_deref())?;
    let limit = query.limit.unwrap_or(DEFAULT_FEED_LIMIT);
    let after = query.after.as_deref().filter(|a| !a.is_empty());
    let page = match query.before.as_deref().filter(|b| !b.is_empty()) {
        Some(_) if after.is_some() => {
            return Err(DomainError::validation("after and before cannot be used together").into());
        }
        Some(before) => crate::read_lagging!(state, &caller.0, seen, |s| {
            s.feed.page_back(&caller.0, before, &types, limit).await
        })?,
        None => crate::read_lagging!(state, &caller.0, seen, |s| {
            s.feed.page(&caller.0, after, &types, limit).await
        })?,
    };
    Ok(web::Json(FeedPageObject {
        data: page
            .events
            .into_iter()
            .map(FeedEventObject::try_from)
            .collect::<Result<_, _>>()?,
        next_cursor: page.next_cursor,
    }))
}
