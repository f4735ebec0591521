//! Scenario 8, timestamps and cursors at the edges of the calendar: RFC 3339 values at year 0,
//! year 9999 and beyond once their offset is applied, and cursors whose microseconds lie far
//! outside any calendar, sent to every place that reads them. Each must be answered 2xx or 400
//! with a JSON body, never a 5xx or a dropped connection, and every time a 2xx body shows must be
//! RFC 3339 in UTC.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, bail};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::env::Env;
use crate::scenario::{Scenario, say, shorten};

/// RFC 3339 values at and past the edges of the four-digit calendar, with extreme offsets, and a
/// few that are not valid at all.
const EDGE_TIMES: &[&str] = &[
    // Year 10000 once the offset is applied.
    "9999-12-31T23:30:00-01:00",
    "9999-12-31T23:59:59-23:59",
    // The last representable instants.
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59.999999999Z",
    "9999-12-30T00:00:00Z",
    // Year 0, and before it once the offset is applied.
    "0000-01-01T00:00:00Z",
    "0000-01-01T00:30:00+01:00",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    // Around the Unix epoch.
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:00:00Z",
    // The largest offsets RFC 3339 can write.
    "2026-01-01T00:00:00+23:59",
    "2026-01-01T00:00:00-23:59",
    // More precision than a nanosecond, a leap second, a day that does not exist.
    "2026-01-01T00:00:00.1234567891234Z",
    "2026-12-31T23:59:60Z",
    "2026-02-29T00:00:00Z",
];

/// An ordinary instant, for the other end of a pair.
const ORDINARY: &str = "2026-01-01T09:00:00Z";

/// Made last, in this order, as the newest manual entry and the latest stopped timer: year -1,
/// year 0, the end of year 9999, and year 10000 once their offsets are applied.
const LAST_ENTRIES: &[(&str, &str)] = &[
    ("0000-01-01T00:30:00+01:00", "0000-01-01T00:00:00Z"),
    ("0001-01-01T00:00:00+14:00", ORDINARY),
    ("9999-12-30T00:00:00Z", "9999-12-31T23:59:59.999999999Z"),
    ("9999-12-31T23:30:00-01:00", "9999-12-31T23:59:59-23:59"),
];

/// The ends of the calendar every edge time is paired with in a quick run.
const CALENDAR_ENDS: &[&str] = &[
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-23:59",
];

/// The time fields a body may show; each must be RFC 3339 in UTC (or `null`).
const TIME_FIELDS: &[&str] = &[
    "start",
    "end",
    "created_at",
    "updated_at",
    "startTime",
    "endTime",
    "createdAt",
    "updatedAt",
];

/// Cursor microseconds far outside the calendar, at its edges, and past what `i64` holds.
const CURSOR_MICROS: &[&str] = &[
    "-377705116800000000",
    "253402300800000000",
    "253402300799999999",
    "9223372036854775807",
    "-9223372036854775808",
    "-62135596800000001",
    "-62135596800000000",
    "-62167219200000000",
    "0",
    "-1",
    "+5",
    "99999999999999999999999999999",
    "170141183460469231731687303715884105727",
    "-170141183460469231731687303715884105728",
];

/// One answer as seen.
#[derive(Debug)]
struct Seen {
    /// `None`: no answer (connection dropped, time-out).
    status: Option<u16>,
    content_type: String,
    body: Value,
    /// Why there was no answer, or why the body was not JSON.
    problem: Option<String>,
}

impl Seen {
    /// 2xx or 400, with a JSON content type and body; a 400 carries `{"error": "..."}`.
    fn well_formed(&self) -> bool {
        let json = self.content_type.starts_with("application/json") && self.problem.is_none();
        match self.status {
            Some(200..=299) => json,
            Some(400) => json && self.body["error"].is_string(),
            _ => false,
        }
    }

    fn label(&self) -> String {
        match (self.status, &self.problem) {
            (None, Some(p)) => format!("no answer ({p})"),
            (Some(status), Some(p)) => format!("{status} {p}"),
            (Some(status), None) => format!("{status} {}", shorten(&self.body.to_string(), 100)),
            (None, None) => "no answer".to_owned(),
        }
    }
}

/// Sends `request`; what came back.
async fn send(request: reqwest::RequestBuilder) -> Seen {
    match request.send().await {
        Err(err) => Seen {
            status: None,
            content_type: String::new(),
            body: Value::Null,
            problem: Some(error_chain(&err.without_url())),
        },
        Ok(res) => {
            let status = res.status().as_u16();
            let content_type = res
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let (body, problem) = match res.bytes().await {
                Err(err) => (Value::Null, Some(format!("body cut off: {err}"))),
                Ok(bytes) => match serde_json::from_slice(&bytes) {
                    Ok(body) => (body, None),
                    Err(_) => (
                        Value::Null,
                        Some(format!(
                            "not JSON ({}): {:?}",
                            if content_type.is_empty() {
                                "no content type"
                            } else {
                                &content_type
                            },
                            shorten(&String::from_utf8_lossy(&bytes), 80)
                        )),
                    ),
                },
            };
            Seen {
                status: Some(status),
                content_type,
                body,
                problem,
            }
        }
    }
}

/// An error and its causes, as `a: b: c`.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Whether `text` is `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`.
fn is_utc_rfc3339(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let digits = |from: usize, to: usize| b[from..to].iter().all(u8::is_ascii_digit);
    let rest = &b[19..];
    let fraction = rest == b"Z"
        || (rest.len() >= 3
            && rest[0] == b'.'
            && rest[rest.len() - 1] == b'Z'
            && rest[1..rest.len() - 1].iter().all(u8::is_ascii_digit));
    digits(0, 4)
        && b[4] == b'-'
        && digits(5, 7)
        && b[7] == b'-'
        && digits(8, 10)
        && b[10] == b'T'
        && digits(11, 13)
        && b[13] == b':'
        && digits(14, 16)
        && b[16] == b':'
        && digits(17, 19)
        && fraction
}

/// Every time field anywhere in `value` that is not RFC 3339 in UTC, as `name=value`.
fn bad_time_fields(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (name, v) in map {
                if TIME_FIELDS.contains(&name.as_str()) {
                    let good = match v {
                        Value::String(text) => is_utc_rfc3339(text),
                        Value::Null => true,
                        _ => false,
                    };
                    if !good {
                        out.push(format!("{name}={v}"));
                    }
                }
                bad_time_fields(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| bad_time_fields(v, out)),
        _ => {}
    }
}

/// `text` percent-encoded for a query string (everything but the unreserved characters).
fn query_escape(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The answers to one group of requests, judged together.
#[derive(Debug, Default)]
struct Tally {
    statuses: BTreeMap<String, usize>,
    /// Requests answered otherwise than 2xx or 400 JSON.
    malformed: Vec<String>,
    /// 2xx bodies with a time that is not RFC 3339 in UTC.
    bad_times: Vec<String>,
    sent: usize,
}

impl Tally {
    fn add(&mut self, what: &str, seen: &Seen) {
        self.sent += 1;
        let key = seen
            .status
            .map_or_else(|| "no answer".to_owned(), |s| s.to_string());
        *self.statuses.entry(key).or_default() += 1;
        if !seen.well_formed() {
            self.malformed.push(format!("{what}: {}", seen.label()));
        } else if seen.status.is_some_and(|s| (200..300).contains(&s)) {
            let mut bad = Vec::new();
            bad_time_fields(&seen.body, &mut bad);
            bad.sort();
            bad.dedup();
            if !bad.is_empty() {
                self.bad_times.push(format!("{what}: {}", bad.join(", ")));
            }
        }
    }

    fn statuses(&self) -> String {
        self.statuses
            .iter()
            .map(|(k, n)| format!("{k}×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Records the two checks of a group: answered well, and times well formed.
    fn record(&self, s: &mut Scenario, group: &str, check_times: bool) {
        s.figure(
            format!("{group}: requests (statuses)"),
            format!("{} ({})", self.sent, self.statuses()),
        );
        s.check(
            format!("{group}: every answer 2xx or 400 with a JSON body, never 5xx or dropped"),
            self.malformed.is_empty(),
            if self.malformed.is_empty() {
                self.statuses()
            } else {
                format!(
                    "{} of {}: {}",
                    self.malformed.len(),
                    self.sent,
                    examples(&self.malformed)
                )
            },
        );
        if check_times {
            s.check(
                format!("{group}: every time in a 2xx body is RFC 3339 UTC (…Z)"),
                self.bad_times.is_empty(),
                if self.bad_times.is_empty() {
                    "all well formed".to_owned()
                } else {
                    format!(
                        "{} bodies: {}",
                        self.bad_times.len(),
                        examples(&self.bad_times)
                    )
                },
            );
        }
    }
}

/// The first few of `items`, and how many more.
fn examples(items: &[String]) -> String {
    let shown: Vec<String> = items.iter().take(4).map(|x| shorten(x, 240)).collect();
    if items.len() > shown.len() {
        format!(
            "{} (and {} more)",
            shown.join("; "),
            items.len() - shown.len()
        )
    } else {
        shown.join("; ")
    }
}

/// The (start, end) pairs: every edge time against an ordinary one either side, and against
/// every other edge time (full run) or the ends of the calendar (quick).
fn pairs(quick: bool) -> Vec<(&'static str, &'static str)> {
    let partners = if quick { CALENDAR_ENDS } else { EDGE_TIMES };
    let mut out = Vec::new();
    for a in EDGE_TIMES {
        out.push((*a, ORDINARY));
        out.push((ORDINARY, *a));
        for b in partners {
            out.push((*a, *b));
            if quick {
                out.push((*b, *a));
            }
        }
    }
    out
}

/// `startTime .. endTime` of a fallback's one record, or what is wrong with the answer.
fn fallback_times(seen: &Seen) -> Result<String, String> {
    if seen.status != Some(200) || !seen.well_formed() {
        return Err(seen.label());
    }
    let record = match seen.body.as_array().map(Vec::as_slice) {
        Some([record]) => record,
        _ => {
            return Err(format!(
                "not an array of one: {}",
                shorten(&seen.body.to_string(), 100)
            ));
        }
    };
    let mut bad = Vec::new();
    bad_time_fields(record, &mut bad);
    for field in ["startTime", "endTime"] {
        if !record[field].is_string() {
            bad.push(format!("{field}={}", record[field]));
        }
    }
    if bad.is_empty() {
        Ok(format!("{} .. {}", record["startTime"], record["endTime"]))
    } else {
        bad.dedup();
        Err(bad.join(", "))
    }
}

/// Cursors to try: extreme microseconds with a valid id, then malformed texts.
fn cursors() -> Vec<(String, String)> {
    let id = uuid::Uuid::new_v4();
    let mut out: Vec<(String, String)> = CURSOR_MICROS
        .iter()
        .map(|m| {
            (
                format!("{m}:<uuid>"),
                URL_SAFE_NO_PAD.encode(format!("{m}:{id}")),
            )
        })
        .collect();
    out.push((
        "0:<nil uuid>".to_owned(),
        URL_SAFE_NO_PAD.encode(format!("0:{}", uuid::Uuid::nil())),
    ));
    let malformed: Vec<(&str, Vec<u8>)> = vec![
        ("no colon", b"hello".to_vec()),
        ("three parts", format!("1:2:{id}").into_bytes()),
        ("a colon alone", b":".to_vec()),
        ("no id", b"0:".to_vec()),
        ("no micros", format!(":{id}").into_bytes()),
        ("not a uuid", b"0:not-a-uuid".to_vec()),
        ("hex micros", format!("0x10:{id}").into_bytes()),
        ("exponent micros", format!("1e6:{id}").into_bytes()),
        ("fractional micros", format!("1.5:{id}").into_bytes()),
        ("a space first", format!(" 0:{id}").into_bytes()),
        ("a NUL at the end", format!("0:{id}\0").into_bytes()),
        ("invalid UTF-8", vec![0xff, 0xfe, b':', b'0']),
    ];
    out.extend(
        malformed
            .into_iter()
            .map(|(label, bytes)| (label.to_owned(), URL_SAFE_NO_PAD.encode(bytes))),
    );
    out.extend([
        ("empty".to_owned(), String::new()),
        ("not base64".to_owned(), "!!!not*base64!!!".to_owned()),
        (
            "padded standard base64".to_owned(),
            STANDARD.encode(format!("0:{id}?")),
        ),
        ("4 KB of A".to_owned(), "A".repeat(4096)),
        ("one character".to_owned(), "A".to_owned()),
    ]);
    out
}

/// Scenario 8: edge timestamps in entry bodies and range queries, extreme and malformed cursors
/// on every list, then the fallbacks.
pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    let url = env.database("edges").await?;
    let account = env.account(&url, "Edges").await?;
    // Rate limits are not the subject here; lifted so a 429 never hides an answer.
    let server = env.plain_serve(&url, "edges")?.unlimited().start().await?;
    let key = account.key.as_str();
    let base = server.base.as_str();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;

    // Something to list, and ids to patch.
    let project = {
        let (status, body) = server
            .post(key, "/api/projects", &json!({"name": "Edge project"}))
            .await?;
        if status != 201 {
            bail!("seeding a project: {status} {body}");
        }
        body["id"].as_str().unwrap_or_default().to_owned()
    };
    let tasks = format!("/api/projects/{project}/tasks");
    for (path, body) in [
        ("/api/clients", json!({"name": "Edge client"})),
        ("/api/tags", json!({"name": "edge"})),
        (tasks.as_str(), json!({"name": "Edge task"})),
    ] {
        let (status, answer) = server.post(key, path, &body).await?;
        if status != 201 {
            bail!("seeding {path}: {status} {answer}");
        }
    }
    let created =
        |start: &str, end: &str| json!({"start": start, "end": end, "description": "Edge seed"});
    let (status, manual) = server
        .post(
            key,
            "/api/time-entries",
            &created("2026-01-01T08:00:00Z", ORDINARY),
        )
        .await?;
    if status != 201 {
        bail!("seeding a manual entry: {status} {manual}");
    }
    let manual = manual["id"].as_str().unwrap_or_default().to_owned();
    let (status, timer) = server
        .post(
            key,
            "/api/time-entries/start",
            &json!({"description": "Edge timer"}),
        )
        .await?;
    if status != 201 {
        bail!("starting a timer: {status} {timer}");
    }
    let timer = timer["id"].as_str().unwrap_or_default().to_owned();
    let (status, body) = server
        .post(key, "/api/time-entries/stop", &json!({}))
        .await?;
    if status != 200 {
        bail!("stopping the timer: {status} {body}");
    }

    // A. Cursors, while every stored time is an ordinary one.
    let lists = [
        "/api/clients".to_owned(),
        "/api/projects".to_owned(),
        "/api/tags".to_owned(),
        "/api/time-entries".to_owned(),
        tasks.clone(),
    ];
    let cursors = cursors();
    let mut all = Tally::default();
    for list in &lists {
        let mut tally = Tally::default();
        for (label, cursor) in &cursors {
            let seen = send(
                http.get(format!("{base}{list}?cursor={}", query_escape(cursor)))
                    .bearer_auth(key),
            )
            .await;
            tally.add(&format!("cursor {label}"), &seen);
            all.add(&format!("{list} cursor {label}"), &seen);
        }
        let name = if list.contains("/tasks") {
            "/api/projects/{id}/tasks"
        } else {
            list.as_str()
        };
        s.check(
            format!("GET {name}?cursor= extreme or malformed: 200 or 400 JSON error, never 5xx or dropped"),
            tally.malformed.is_empty() && !tally.statuses.keys().any(|k| k != "200" && k != "400"),
            if tally.malformed.is_empty() {
                tally.statuses()
            } else {
                format!(
                    "{} of {}: {}",
                    tally.malformed.len(),
                    tally.sent,
                    examples(&tally.malformed)
                )
            },
        );
    }
    s.figure(
        "cursors tried per list (requests in all)",
        format!("{} ({})", cursors.len(), all.sent),
    );

    // B. Manual entries: pairs of edge times (every ordered pair in a full run; in a quick one,
    // each against the ends of the calendar), and each against an ordinary time either side.
    let pairs = pairs(env.quick);
    say(&format!(
        "  {} edge times, {} (start, end) pairs",
        EDGE_TIMES.len(),
        pairs.len()
    ));
    let mut posts = Tally::default();
    for (start, end) in &pairs {
        let seen = send(
            http.post(format!("{base}/api/time-entries"))
                .bearer_auth(key)
                .json(&json!({"start": start, "end": end, "description": "Edge"})),
        )
        .await;
        posts.add(&format!("start {start} end {end}"), &seen);
    }

    // C. Changes: each edge time as the start alone and the end alone, on a manual entry and on
    // a stopped timer, and the pairs on the manual entry.
    let mut patches = Tally::default();
    let patch = async |id: &str, body: Value| {
        send(
            http.patch(format!("{base}/api/time-entries/{id}"))
                .bearer_auth(key)
                .json(&body),
        )
        .await
    };
    for t in EDGE_TIMES {
        for (which, id) in [("manual", &manual), ("timer", &timer)] {
            for field in ["start", "end"] {
                let seen = patch(id, json!({ field: t })).await;
                patches.add(&format!("{which} {field} {t}"), &seen);
            }
        }
    }
    for (start, end) in &pairs {
        let seen = patch(&manual, json!({"start": start, "end": end})).await;
        patches.add(&format!("manual start {start} end {end}"), &seen);
    }

    // D. Range queries, correctly escaped, and a few with a bare `+` (read as a space).
    let mut ranges = Tally::default();
    for (from, to) in &pairs {
        let seen = send(
            http.get(format!(
                "{base}/api/time-entries?from={}&to={}&limit=200",
                query_escape(from),
                query_escape(to)
            ))
            .bearer_auth(key),
        )
        .await;
        ranges.add(&format!("from {from} to {to}"), &seen);
    }
    for t in EDGE_TIMES.iter().filter(|t| t.contains('+')) {
        let seen = send(
            http.get(format!("{base}/api/time-entries?from={t}"))
                .bearer_auth(key),
        )
        .await;
        ranges.add(&format!("from {t} (bare +)"), &seen);
    }

    // E. The newest manual entry and the latest stopped timer made edge ones, one after the
    // other; after each, the fallbacks that show them are read.
    let mut fallbacks: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for (start, end) in LAST_ENTRIES {
        let body = json!({"start": start, "end": end, "description": "Edge, last"});
        let seen = send(
            http.post(format!("{base}/api/time-entries"))
                .bearer_auth(key)
                .json(&body),
        )
        .await;
        posts.add(&format!("last: start {start} end {end}"), &seen);
        let seen = patch(&timer, json!({"start": start, "end": end})).await;
        patches.add(&format!("last, timer: start {start} end {end}"), &seen);
        for trigger in ["manual_entry", "stop"] {
            let path =
                format!("/api/integrations/automation/triggers/time-entries/{trigger}/fallback");
            let seen = send(http.get(format!("{base}{path}")).bearer_auth(key)).await;
            let (good, bad) = fallbacks.entry(trigger).or_default();
            match fallback_times(&seen) {
                Ok(times) => good.push(times),
                Err(problem) => bad.push(format!("after {start} .. {end}: {problem}")),
            }
        }
    }

    posts.record(s, "POST /api/time-entries (start, end)", true);
    patches.record(s, "PATCH /api/time-entries/{id} (start, end)", true);
    ranges.record(s, "GET /api/time-entries?from=&to=", true);
    for (trigger, (good, bad)) in &fallbacks {
        s.check(
            format!(
                "GET .../triggers/time-entries/{trigger}/fallback after each edge entry: 200 JSON, startTime and endTime RFC 3339 UTC"
            ),
            bad.is_empty(),
            if bad.is_empty() {
                good.join("; ")
            } else {
                format!("{} of {}: {}", bad.len(), good.len() + bad.len(), bad.join("; "))
            },
        );
    }

    let health = send(http.get(format!("{base}/api/health"))).await;
    s.check_eq("healthy after the edge values", health.status, Some(200));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_utc_rfc3339_with_z_is_accepted() {
        for good in [
            "2026-01-05T09:00:00Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999Z",
        ] {
            assert!(is_utc_rfc3339(good), "{good}");
        }
        for bad in [
            "253402300800",
            "10000-01-01T00:30:00Z",
            "-0001-12-31T23:30:00Z",
            "2026-01-05T09:00:00+00:00",
            "2026-01-05T09:00:00.Z",
            "2026-01-05 09:00:00Z",
            "2026-01-05T09:00:00z",
            "",
        ] {
            assert!(!is_utc_rfc3339(bad), "{bad}");
        }
    }

    #[test]
    fn time_fields_are_found_at_any_depth() {
        let body = json!({"data": [
            {"start": "2026-01-05T09:00:00Z", "end": null, "created_at": "253402300800"},
            {"nested": {"endTime": 5}, "name": "start"}
        ]});
        let mut bad = Vec::new();
        bad_time_fields(&body, &mut bad);
        assert_eq!(bad, ["created_at=\"253402300800\"", "endTime=5"]);
    }

    #[test]
    fn queries_escape_plus_and_colon() {
        assert_eq!(
            query_escape("2026-01-01T00:00:00+23:59"),
            "2026-01-01T00%3A00%3A00%2B23%3A59"
        );
    }
}
