//! The MCP tools' output schemas, taken from the served OpenAPI document: a tool answers the
//! REST operation's JSON, so the schema of that operation's success answer is the tool's, and
//! the two cannot drift apart.
//!
//! A schema is made self-contained for the MCP client that validates against it: every
//! `#/components/schemas/X` it reaches is copied under `$defs` and referred to there, and the
//! `example` keyword (OpenAPI's, which a strict JSON Schema validator refuses) is dropped. Each
//! is built once per process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value, json};

/// A JSON Schema object, as the MCP SDK takes it.
pub type Schema = Arc<Map<String, Value>>;

/// The document's component schemas, by name.
static COMPONENTS: LazyLock<(Value, Map<String, Value>)> = LazyLock::new(|| {
    let doc: Value = serde_json::from_str(crate::routes::openapi_document())
        .expect("the served OpenAPI document is JSON");
    let components = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    (doc, components)
});

/// Schemas already built, by tool.
static BUILT: LazyLock<std::sync::Mutex<HashMap<&'static str, Schema>>> =
    LazyLock::new(Default::default);

/// The JSON answer schema of `method path` with `status`, self-contained.
fn answer(method: &str, path: &str, status: &str) -> Value {
    let (doc, _) = &*COMPONENTS;
    let pointer = format!(
        "/paths/{}/{method}/responses/{status}/content/application~1json/schema",
        path.replace('~', "~0").replace('/', "~1")
    );
    doc.pointer(&pointer)
        .cloned()
        .unwrap_or_else(|| panic!("no JSON {status} answer of {method} {path} in the document"))
}

/// `schema` with its component references under `$defs`.
fn self_contained(schema: Value) -> Map<String, Value> {
    let (_, components) = &*COMPONENTS;
    let mut defs: BTreeMap<String, Value> = BTreeMap::new();
    let mut pending: Vec<String> = Vec::new();
    // MCP wants an object schema at the root (`type: "object"`), not a reference to one.
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(target) => target
            .strip_prefix("#/components/schemas/")
            .and_then(|name| components.get(name))
            .cloned()
            .unwrap_or(schema),
        None => schema,
    };
    let mut root = rewrite(schema, &mut pending);
    while let Some(name) = pending.pop() {
        if defs.contains_key(&name) {
            continue;
        }
        let component = components
            .get(&name)
            .cloned()
            .unwrap_or_else(|| panic!("component {name} is referred to but missing"));
        let component = rewrite(component, &mut pending);
        defs.insert(name, component);
    }
    // An answer that is not an object (a list, a null) is not a tool's structured content.
    let mut object = match root.take() {
        Value::Object(map) if map.get("type") == Some(&json!("object")) => map,
        other => panic!("a tool's answer is an object, not {other}"),
    };
    if !defs.is_empty() {
        object.insert("$defs".into(), Value::Object(defs.into_iter().collect()));
    }
    object
}

/// `value` with `#/components/schemas/X` made `#/$defs/X` (each X noted in `pending`) and the
/// `example` keyword dropped, a property named so kept.
fn rewrite(value: Value, pending: &mut Vec<String>) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(key, _)| key != "example")
                .map(|(key, value)| {
                    let value = match (key.as_str(), value) {
                        ("$ref", Value::String(target)) => {
                            match target.strip_prefix("#/components/schemas/") {
                                Some(name) => {
                                    pending.push(name.to_owned());
                                    Value::String(format!("#/$defs/{name}"))
                                }
                                None => Value::String(target),
                            }
                        }
                        // Property names are not keywords: each value is a schema.
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .into_iter()
                                .map(|(name, schema)| (name, rewrite(schema, pending)))
                                .collect(),
                        ),
                        (_, value) => rewrite(value, pending),
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| rewrite(v, pending)).collect())
        }
        other => other,
    }
}

/// What a tool's output schema is made of.
#[derive(Debug, Clone, Copy)]
pub enum Output {
    /// The answer of `method path` with `status`, as it is.
    Answer(&'static str, &'static str, &'static str),
    /// That answer under one key (an array or a null answer is no object).
    Under(&'static str, (&'static str, &'static str, &'static str)),
    /// `{data: [items of that answer's data], truncated: boolean}` (`list_time_entries`).
    DataTruncated(&'static str, &'static str, &'static str),
}

/// The output schema of `tool`, built from `output` once.
pub fn of(tool: &'static str, output: Output) -> Schema {
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    built
        .entry(tool)
        .or_insert_with(|| Arc::new(build(output)))
        .clone()
}

fn build(output: Output) -> Map<String, Value> {
    match output {
        Output::Answer(method, path, status) => self_contained(answer(method, path, status)),
        Output::Under(key, (method, path, status)) => self_contained(json!({
            "type": "object",
            "properties": {key: answer(method, path, status)},
            "required": [key],
        })),
        Output::DataTruncated(method, path, status) => {
            let page = answer(method, path, status);
            let (_, components) = &*COMPONENTS;
            // The page's `data` items, through its component if it is one.
            let page = match page.get("$ref").and_then(Value::as_str) {
                Some(target) => components
                    .get(target.trim_start_matches("#/components/schemas/"))
                    .cloned()
                    .unwrap_or(page),
                None => page,
            };
            let data = page
                .pointer("/properties/data")
                .cloned()
                .unwrap_or_else(|| panic!("no data in the answer of {method} {path}"));
            self_contained(json!({
                "type": "object",
                "properties": {
                    "data": data,
                    "truncated": {
                        "type": "boolean",
                        "description": "True when the period holds more entries than answered",
                    },
                },
                "required": ["data", "truncated"],
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_move_under_defs_and_examples_go() {
        let mut pending = Vec::new();
        let rewritten = rewrite(
            json!({
                "type": "object",
                "example": {"id": 1},
                "properties": {
                    "example": {"type": "string", "example": "x"},
                    "client": {"$ref": "#/components/schemas/ClientResponse"},
                    "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
                },
            }),
            &mut pending,
        );
        assert_eq!(
            rewritten,
            json!({
                "type": "object",
                "properties": {
                    "example": {"type": "string"},
                    "client": {"$ref": "#/$defs/ClientResponse"},
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                },
            })
        );
        assert_eq!(pending, ["ClientResponse", "Tag"]);
    }
}
