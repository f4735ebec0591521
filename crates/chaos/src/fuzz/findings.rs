//! What a Schemathesis run's NDJSON event stream shows: requests, responses by status, server
//! errors, error bodies that are not JSON, and each check's passes and failures.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::scenario::shorten;

/// The 400 messages of rules a JSON Schema cannot state: what a value must be depends on another
/// field, on stored records, or on an opaque token. A valid-by-schema request the service refuses
/// with one of these is the rule working, not the document lying; any other refusal still counts
/// against `positive_data_acceptance`.
pub const UNSTATABLE_RULES: &[&str] = &[
    "invalid cursor",
    "to must be after from",
    "end must be after start",
    "end must not be before start",
    "a running timer has no end; stop it instead",
    "a running timer cannot start in the future",
    "client_id does not name a client of this workspace",
    "project_id does not name a project of this workspace",
    "task_id does not name a task of this workspace",
    "task_id does not belong to project_id",
    "tag_ids contains an id that is not a tag of this workspace",
    "user_id does not name a member of this workspace",
    "after and before cannot be used together",
    "from and to must be at most 366 days apart",
    "to must not be before from",
    "until must be later than since",
    "group_by is required: one to three of client, project, task, user, tag, day, week, month",
];

/// The starts of 400 messages (the `error`, or a 400 `Invalid request parameters`'s `detail`)
/// that carry a value, of rules a JSON Schema cannot state either: a time zone must be one of
/// the IANA database's names, the feed's `types` a comma-separated list of the catalog's event
/// types, a filter's ids the workspace's and its kind one that applies to the listed event types
/// (the description closes the filter object and bounds its lists, so no other filter refusal
/// is left), a replay's start within the retained events (relative to now).
pub const UNSTATABLE_PREFIXES: &[&str] = &[
    "unknown time zone: ",
    "Invalid event type: ",
    "Invalid filter: ",
    "since is older than the retained events",
];

/// Parts of 400 messages of a rate's scope rules: which of `user_id`, `client_id`,
/// `project_id` and `task_id` a rate names depends on its `scope` (`<field> is required for
/// scope <scope>`, `<field> must be null for scope <scope>`).
pub const SCOPE_RULES: &[&str] = &[" is required for scope ", " must be null for scope "];

/// Parts of a 400 `detail` that refuse a value breaking a `format` the description states
/// (`date`, `uuid`). JSON Schema's formats are annotations unless a validator asserts them, and
/// Schemathesis' coverage phase sends `""` for a string of any format as valid; the service
/// asserts the format, as documented.
pub const FORMAT_REFUSALS: &[&str] = &[
    " must be a date (YYYY-MM-DD)",
    "UUID parsing failed",
    " must be a UUID",
    // Decimal places of a JSON number: `multipleOf: 0.001` on binary floating point would refuse
    // exact decimals and admit others, so the description says it in words.
    " with at most 3 decimals",
    // A date or time beyond the years the service stores (`0002-01-01` to `9998-12-31` for a
    // date): `format: date` admits years 0001 to 9999 and cannot be bounded.
    " must be between 0",
    // The same key twice in a comma-separated list (`group_by`).
    " appears twice",
    // JSON Schema's `integer` admits a number with a zero fraction (`293.0`); the service takes
    // integers written as integers.
    "invalid type: floating point `",
    " must be an integer (minor units)",
];

/// What the run's NDJSON event stream shows: every request, response and check result.
#[derive(Debug, Default)]
pub struct Findings {
    /// Requests sent.
    pub requests: u64,
    /// Requests that got no response (connection errors, time-outs).
    pub unanswered: u64,
    /// Responses by status.
    pub statuses: BTreeMap<u16, u64>,
    /// 5xx responses, with up to a few examples.
    pub server_errors: (u64, Vec<String>),
    /// Error responses (4xx, 5xx).
    pub error_responses: u64,
    /// Error responses that are not `{"error": string}` with a JSON content type, with examples.
    pub non_json_errors: (u64, Vec<String>),
    /// Per check: runs that passed, runs that failed.
    pub runs: BTreeMap<String, (u64, u64)>,
    /// Per check: how many error responses it ran on.
    pub on_errors: BTreeMap<String, u64>,
    /// Per check, per operation: one failure, described.
    pub examples: BTreeMap<String, BTreeMap<String, String>>,
    /// `positive_data_acceptance` failures answered by one of [`UNSTATABLE_RULES`], per message.
    pub unstatable: BTreeMap<String, u64>,
}

impl Findings {
    pub fn read(events: &str) -> Result<Self> {
        let mut found = Self::default();
        for line in events.lines().filter(|l| !l.trim().is_empty()) {
            let event: Value = serde_json::from_str(line).context("an NDJSON event")?;
            if let Some(recorder) = event.pointer("/ScenarioFinished/recorder") {
                found.scenario(recorder);
            }
        }
        Ok(found)
    }

    /// One finished scenario: its interactions (by case id) and the check results on them.
    fn scenario(&mut self, recorder: &Value) {
        let empty = serde_json::Map::new();
        let interactions = recorder["interactions"].as_object().unwrap_or(&empty);
        for interaction in interactions.values() {
            self.interaction(interaction);
        }
        for (case, results) in recorder["checks"].as_object().unwrap_or(&empty) {
            let interaction = interactions.get(case);
            let is_error = interaction
                .and_then(|i| i.pointer("/response/status_code"))
                .and_then(Value::as_u64)
                .is_some_and(|s| s >= 400);
            for result in results.as_array().into_iter().flatten() {
                let name = result["name"].as_str().unwrap_or("?").to_owned();
                if name == "positive_data_acceptance"
                    && result["status"] == "failure"
                    && let Some(rule) = interaction.and_then(unstatable_rule)
                {
                    *self.unstatable.entry(rule.to_owned()).or_default() += 1;
                    continue;
                }
                let runs = self.runs.entry(name.clone()).or_default();
                match result["status"].as_str() {
                    Some("success") => runs.0 += 1,
                    Some("failure") => {
                        runs.1 += 1;
                        let failure = &result["failure_info"]["failure"];
                        let operation = failure["operation"]
                            .as_str()
                            .or_else(|| recorder["label"].as_str())
                            .unwrap_or("?")
                            .to_owned();
                        self.examples
                            .entry(name.clone())
                            .or_default()
                            .entry(operation)
                            .or_insert_with(|| describe_failure(failure, interaction));
                    }
                    _ => continue,
                }
                if is_error {
                    *self.on_errors.entry(name).or_default() += 1;
                }
            }
        }
    }

    fn interaction(&mut self, interaction: &Value) {
        self.requests += 1;
        let response = &interaction["response"];
        let Some(status) = response["status_code"].as_u64() else {
            self.unanswered += 1;
            return;
        };
        let status = u16::try_from(status).unwrap_or(u16::MAX);
        *self.statuses.entry(status).or_default() += 1;
        if status < 400 {
            return;
        }
        self.error_responses += 1;
        let body = decode_body(&response["content"]);
        if status >= 500 {
            push_example(&mut self.server_errors, describe_interaction(interaction));
        }
        let json_type = response["headers"]
            .as_object()
            .and_then(|h| {
                h.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            })
            .and_then(|(_, v)| v[0].as_str())
            .is_some_and(|v| v.starts_with("application/json"));
        let is_error_body = serde_json::from_slice::<Value>(&body)
            .ok()
            .is_some_and(|b| b["error"].is_string());
        if !(json_type && is_error_body) {
            push_example(&mut self.non_json_errors, describe_interaction(interaction));
        }
    }
}

/// The rule of [`UNSTATABLE_RULES`], [`UNSTATABLE_PREFIXES`], [`FORMAT_REFUSALS`] or
/// [`SCOPE_RULES`] that a 400
/// answer names (in its `error`, or its `detail`), if any.
fn unstatable_rule(interaction: &Value) -> Option<&'static str> {
    let response = &interaction["response"];
    if response["status_code"].as_u64() != Some(400) {
        return None;
    }
    let body: Value = serde_json::from_slice(&decode_body(&response["content"])).ok()?;
    let messages = [
        body["error"].as_str()?,
        body["detail"].as_str().unwrap_or(""),
    ];
    messages.into_iter().find_map(|message| {
        UNSTATABLE_RULES
            .iter()
            .copied()
            .find(|rule| *rule == message)
            .or_else(|| {
                UNSTATABLE_PREFIXES
                    .iter()
                    .copied()
                    .find(|rule| message.starts_with(rule))
            })
            .or_else(|| {
                FORMAT_REFUSALS
                    .iter()
                    .chain(SCOPE_RULES)
                    .copied()
                    .find(|rule| message.contains(rule))
            })
    })
}

/// Counts one more and keeps the first three examples.
fn push_example(into: &mut (u64, Vec<String>), example: String) {
    into.0 += 1;
    if into.1.len() < 3 {
        into.1.push(example);
    }
}

/// `CODE title: message; METHOD uri body -> status body`.
fn describe_failure(failure: &Value, interaction: Option<&Value>) -> String {
    let message = failure["message"].as_str().unwrap_or("").replace('\n', " ");
    format!(
        "{} {}: {}; {}",
        failure["code"].as_str().unwrap_or("?"),
        failure["title"].as_str().unwrap_or("?"),
        shorten(message.trim(), 200),
        interaction.map_or_else(
            || "(no interaction recorded)".to_owned(),
            describe_interaction
        )
    )
}

/// `METHOD uri body -> status body`, bodies shortened.
fn describe_interaction(interaction: &Value) -> String {
    let request = &interaction["request"];
    let body = decode_body(&request["body"]);
    let response = &interaction["response"];
    format!(
        "{} {}{} -> {}",
        request["method"].as_str().unwrap_or("?"),
        request["uri"].as_str().unwrap_or("?"),
        if body.is_empty() {
            String::new()
        } else {
            format!(" {}", shorten(&String::from_utf8_lossy(&body), 200))
        },
        match response["status_code"].as_u64() {
            Some(status) => format!(
                "{status} {}",
                shorten(
                    &String::from_utf8_lossy(&decode_body(&response["content"])),
                    200
                )
            ),
            None => "no response".to_owned(),
        }
    )
}

/// A recorded body (`{"$base64": ...}` in the NDJSON events); empty when there is none or it is
/// not base64.
fn decode_body(content: &Value) -> Vec<u8> {
    match content {
        Value::Object(map) => map
            .get("$base64")
            .and_then(Value::as_str)
            .and_then(|text| STANDARD.decode(text).ok())
            .unwrap_or_default(),
        Value::String(text) => text.as_bytes().to_vec(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_400_naming_an_unstatable_rule_is_explained() {
        let answer = |status: u16, body: &str| {
            serde_json::json!({"response": {
                "status_code": status,
                "content": {"$base64": STANDARD.encode(body)},
            }})
        };
        assert_eq!(
            unstatable_rule(&answer(400, r#"{"error":"to must be after from"}"#)),
            Some("to must be after from")
        );
        assert_eq!(
            unstatable_rule(&answer(400, r#"{"error":"name must not be empty"}"#)),
            None
        );
        assert_eq!(
            unstatable_rule(&answer(422, r#"{"error":"to must be after from"}"#)),
            None
        );
        assert_eq!(unstatable_rule(&answer(400, "to must be after from")), None);
        assert_eq!(
            unstatable_rule(&answer(
                400,
                r#"{"error":"Invalid request parameters","detail":"unknown time zone: A"}"#
            )),
            Some("unknown time zone: ")
        );
        assert_eq!(
            unstatable_rule(&answer(
                400,
                r#"{"error":"Invalid request parameters","detail":"from must be a date (YYYY-MM-DD)"}"#
            )),
            Some(" must be a date (YYYY-MM-DD)")
        );
        assert_eq!(
            unstatable_rule(&answer(
                400,
                r#"{"error":"Invalid request parameters","detail":"unknown field x"}"#
            )),
            None
        );
    }

    #[test]
    fn recorded_bodies_are_decoded_from_base64_or_taken_as_text() {
        let encoded = serde_json::json!({"$base64": "eyJlcnJvciI6IngifQ=="});
        assert_eq!(decode_body(&encoded), br#"{"error":"x"}"#);
        assert_eq!(decode_body(&serde_json::json!({"$base64": ""})), b"");
        assert_eq!(decode_body(&serde_json::json!("plain")), b"plain");
        assert_eq!(decode_body(&Value::Null), b"");
    }
}
