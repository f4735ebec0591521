//! The event-type catalog (`events.md` section 2): every type with its description, whether a
//! subscription may list it, a JSON Schema (draft 2020-12) of its body, and a sample body.
//!
//! The schemas are generated from the Rust types that build the payloads (their `ToSchema`
//! derives, which the OpenAPI document's components use too), then narrowed per type: the
//! `action` of a time-entry event, the end a started timer lacks and a stopped one has,
//! `changedFields` on change events only, and no field beyond those listed.

use std::sync::LazyLock;

use actix_web::web;
use serde::Serialize;
use serde_json::{Map, Value, json};
use timetrack_domain::model::EventType;
use timetrack_domain::payload::{
    ClientPayload, InvoicePayload, ProjectPayload, TimeEntryPayload, WebhookNoticePayload,
    WebhookTestPayload, samples,
};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::Caller;

/// The JSON Schema dialect of every schema of the catalog.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// An entry of the catalog.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EventTypeObject {
    /// The event type, e.g. `TIMER_STOPPED`.
    #[serde(rename = "type")]
    event_type: &'static str,
    /// What it reports.
    description: &'static str,
    /// Whether a subscription may list it (all but `WEBHOOK_TEST`).
    subscribable: bool,
    /// A JSON Schema (draft 2020-12) that every delivered body of this type validates against.
    #[schema(value_type = Object)]
    schema: Value,
    /// A sample body, shaped like the live one.
    #[schema(value_type = Object)]
    sample: Value,
}

/// `T`'s schema as a standalone JSON Schema: its references point into its own `$defs`, and
/// every object admits only the properties it lists.
fn standalone<T: ToSchema>() -> Value {
    let mut dependencies = Vec::new();
    T::schemas(&mut dependencies);
    let mut defs = Map::new();
    for (name, schema) in dependencies {
        let mut schema = serde_json::to_value(schema).expect("a schema serializes");
        close(&mut schema);
        defs.insert(name, schema);
    }
    let mut root = serde_json::to_value(T::schema()).expect("a schema serializes");
    close(&mut root);
    let Value::Object(mut root) = root else {
        unreachable!("a payload's schema is an object")
    };
    let mut schema = Map::new();
    schema.insert("$schema".into(), json!(DIALECT));
    schema.append(&mut root);
    if !defs.is_empty() {
        schema.insert("$defs".into(), Value::Object(defs));
    }
    Value::Object(schema)
}

/// Points `#/components/schemas/X` references at `#/$defs/X`, and closes every object schema
/// that lists its properties (`additionalProperties: false`).
fn close(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref")
                && let Some(name) = target.strip_prefix("#/components/schemas/")
            {
                *target = format!("#/$defs/{name}");
            }
            if map.contains_key("properties") {
                map.insert("additionalProperties".into(), json!(false));
            }
            map.values_mut().for_each(close);
        }
        Value::Array(items) => items.iter_mut().for_each(close),
        _ => {}
    }
}

/// Narrows the schema of `event_type`'s body.
fn narrowed(event_type: EventType) -> Value {
    let mut schema = if event_type.is_time_entry() {
        standalone::<TimeEntryPayload>()
    } else if event_type.is_client() {
        standalone::<ClientPayload>()
    } else if event_type.is_project() {
        standalone::<ProjectPayload>()
    } else if event_type.is_invoice() {
        standalone::<InvoicePayload>()
    } else if event_type == EventType::WebhookTest {
        standalone::<WebhookTestPayload>()
    } else {
        standalone::<WebhookNoticePayload>()
    };
    let updated = matches!(
        event_type,
        EventType::TimeEntryUpdated | EventType::ClientUpdated | EventType::ProjectUpdated
    );
    let properties = schema["properties"]
        .as_object_mut()
        .expect("a payload lists its properties");
    let mut required: Vec<&str> = Vec::new();
    if updated {
        required.push("changedFields");
    } else {
        properties.remove("changedFields");
    }
    let action = match event_type {
        EventType::TimerStarted => Some("start_timer"),
        EventType::TimerStopped => Some("stop_timer"),
        EventType::TimeEntryCreated => Some("manual_entry"),
        EventType::TimeEntryUpdated => Some("update"),
        EventType::TimeEntryDeleted => Some("delete"),
        _ => None,
    };
    if let Some(action) = action {
        properties.insert("action".into(), json!({"type": "string", "const": action}));
    }
    // An end, when shown, is never null.
    if properties.contains_key("endTime") {
        properties.insert(
            "endTime".into(),
            json!({"type": "string", "description": "End (absent while running)."}),
        );
        properties.insert(
            "duration".into(),
            json!({"type": "integer", "description": "Whole seconds from start to end."}),
        );
    }
    match event_type {
        EventType::TimerStarted => {
            properties.remove("endTime");
            properties.remove("duration");
        }
        EventType::TimerStopped | EventType::TimeEntryCreated => {
            required.extend(["endTime", "duration"]);
        }
        _ => {}
    }
    if properties.contains_key("event") {
        properties.insert(
            "event".into(),
            json!({"type": "string", "const": event_type.as_str()}),
        );
    }
    if let Some(list) = schema["required"].as_array_mut() {
        list.extend(required.into_iter().map(|name| json!(name)));
    }
    schema
}

/// The catalog, built once.
static CATALOG: LazyLock<Vec<EventTypeObject>> = LazyLock::new(|| {
    EventType::ALL
        .into_iter()
        .map(|t| EventTypeObject {
            event_type: t.as_str(),
            description: t.description(),
            subscribable: t.is_subscribable(),
            schema: narrowed(t),
            sample: serde_json::from_str(&samples::body(t)).expect("a sample is JSON"),
        })
        .collect()
});

/// `GET /api/integrations/automation/event-types`: the catalog.
#[utoipa::path(
    operation_id = "listEventTypes",
    get,
    path = "/api/integrations/automation/event-types",
    tag = "Events",
    summary = "Every event type, with a JSON Schema of its body and a sample",
    description = "Each `schema` is a JSON Schema (draft 2020-12) generated from the types that \
                   build the payloads (the components `TimeEntryPayload`, `ClientPayload`, \
                   `ProjectPayload`, `WebhookNoticePayload` and `WebhookTestPayload` of this \
                   document), narrowed to the type.",
    security(("bearer_auth" = [])),
    responses(
        (status = 200, description = "Every event type", body = Vec<EventTypeObject>),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(_caller: Caller) -> Result<web::Json<&'static [EventTypeObject]>, ApiError> {
    Ok(web::Json(CATALOG.as_slice()))
}
