//! Scenario 6, tenant isolation: workspace B's ids, used with workspace A's key on every keyed
//! operation of the OpenAPI document (and, for webhooks, a second user's key in A), read, change
//! and reveal nothing of B; and a member's replay of their own webhook never sends the notices
//! about another member's webhook (which carry its URL); and a tenant's delivery ids and feed
//! cursors do not count another tenant's deliveries and events.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use reqwest::Method;
use serde_json::{Value, json};
use timetrack_testkit::ServerProcess;
use uuid::Uuid;

use crate::env::Env;
use crate::scenario::{Scenario, say, shorten};

const WEBHOOKS: &str = "/api/integrations/automation/webhooks";
const TRIGGERS: &str = "/api/integrations/automation/triggers";
/// Operations that take no key and hold no tenant's data.
const UNKEYED: [&str; 2] = ["/api/health", "/api/openapi.json"];
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];
const EVENTS: [&str; 4] = [
    "TIMER_STARTED",
    "TIMER_STOPPED",
    "CLIENT_CREATED",
    "TIME_ENTRY_CREATED",
];
/// The triggers whose fallback endpoints answer with the workspace's latest record.
const FALLBACKS: [&str; 4] = [
    "time-entries/manual_entry",
    "time-entries/stop",
    "time-entries/start",
    "clients",
];
const REFUSED: &[u16] = &[400, 403, 404];
const OK: &[u16] = &[200];
const CREATED: &[u16] = &[201];
/// Guessable on purpose: knowing B's idempotency keys must get A nothing of B's.
const B_CLIENT_IDEMPOTENCY_KEY: &str = "isolation-client";
const B_ENTRY_IDEMPOTENCY_KEY: &str = "isolation-entry";

/// Method and path template, as the OpenAPI document names an operation.
type Operation = (String, String);

/// Workspace B: what it holds, and everything an answer to anyone else must not contain.
struct Victim {
    key: String,
    workspace_id: String,
    user_id: String,
    client_id: String,
    project_id: String,
    task_id: String,
    tag_id: String,
    entry_ids: [String; 3],
    webhook_id: String,
    webhook_secret: String,
    /// The bodies B created its client and manual entry with, for A to replay.
    client_body: Value,
    entry_body: Value,
    /// Names, contact details, descriptions and the webhook's URL.
    words: Vec<(&'static str, String)>,
}

impl Victim {
    fn ids(&self) -> Vec<(&'static str, &str)> {
        let [manual, stopped, running] = &self.entry_ids;
        vec![
            ("client id", self.client_id.as_str()),
            ("project id", &self.project_id),
            ("task id", &self.task_id),
            ("tag id", &self.tag_id),
            ("manual entry id", manual),
            ("stopped entry id", stopped),
            ("running entry id", running),
            ("webhook id", &self.webhook_id),
            ("workspace id", &self.workspace_id),
            ("user id", &self.user_id),
        ]
    }

    fn word(&self, label: &str) -> &str {
        let found = self.words.iter().find(|(l, _)| *l == label);
        found.map_or("", |(_, w)| w.as_str())
    }

    fn secrets(&self) -> Vec<(&'static str, String)> {
        let ids = self.ids().into_iter().map(|(l, v)| (l, v.to_owned()));
        let secret = ("webhook secret", self.webhook_secret.clone());
        ids.chain([secret])
            .chain(self.words.iter().cloned())
            .collect()
    }
}

/// Workspace A: its first user's key and records, and a second user's key.
struct Attacker {
    key: String,
    member_key: String,
    workspace_id: String,
    entry_id: String,
    webhook_id: String,
}

/// One request and the statuses it may be answered with.
struct Probe {
    op: Operation,
    path: String,
    body: Option<Value>,
    idempotency_key: Option<&'static str>,
    expect: &'static [u16],
    /// B's values the request itself carries: repeating them back reveals nothing.
    echoes: Vec<String>,
}

/// A request to `path`, whose template is `path` without its query.
fn probe(method: &str, path: &str, expect: &'static [u16]) -> Probe {
    let template = path.split('?').next().unwrap_or(path);
    Probe {
        op: (method.to_owned(), template.to_owned()),
        path: path.to_owned(),
        body: None,
        idempotency_key: None,
        expect,
        echoes: Vec::new(),
    }
}

impl Probe {
    fn at(mut self, path: String) -> Self {
        self.path = path;
        self
    }

    fn with(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    fn echoing(mut self, value: &str) -> Self {
        self.echoes.push(value.to_owned());
        self
    }

    /// The same body under the same idempotency key as B sent.
    fn replaying(mut self, body: &Value, key: &'static str) -> Self {
        let fields = body.as_object().into_iter().flat_map(|o| o.values());
        self.echoes = fields
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        self.idempotency_key = Some(key);
        self.with(body.clone())
    }
}

/// An answer as text, headers included, for the leak search.
struct Answer {
    status: u16,
    body: String,
    content_type: String,
    headers: String,
}

async fn send(server: &ServerProcess, key: &str, p: &Probe) -> Result<Answer> {
    let url = format!("{}{}", server.base, p.path);
    let method = Method::from_bytes(p.op.0.as_bytes())?;
    let mut request = server.http.request(method, url).bearer_auth(key);
    if let Some(body) = &p.body {
        request = request.json(body);
    }
    if let Some(idempotency_key) = p.idempotency_key {
        request = request.header("Idempotency-Key", idempotency_key);
    }
    let res = request.send().await.with_context(|| p.path.clone())?;
    let header = |v: &reqwest::header::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into();
    let content_type = res.headers().get("content-type").map(header);
    let headers = res
        .headers()
        .iter()
        .map(|(n, v)| format!("{n}: {}\n", header(v)));
    Ok(Answer {
        status: res.status().as_u16(),
        content_type: content_type.unwrap_or_default(),
        headers: headers.collect(),
        body: res.text().await?,
    })
}

/// Sends a setup request with `key`; its JSON body, or an error unless 2xx.
async fn made(server: &ServerProcess, key: &str, p: Probe) -> Result<Value> {
    let answer = send(server, key, &p).await?;
    if !(200..300).contains(&answer.status) {
        bail!("{} {}: {} {}", p.op.0, p.path, answer.status, answer.body);
    }
    serde_json::from_str(&answer.body).with_context(|| p.path.clone())
}

fn text(value: &Value, pointer: &str) -> Result<String> {
    let found = value.pointer(pointer).and_then(Value::as_str);
    found
        .map(str::to_owned)
        .with_context(|| format!("no {pointer} in {value}"))
}

/// What each operation was answered, and what was wrong with the answers.
#[derive(Default)]
struct Ledger {
    ops: BTreeMap<Operation, Record>,
    sent: usize,
    refused: usize,
    leaks: usize,
}

/// One operation's statuses, whether a request carried something of B's, and what was wrong.
#[derive(Default)]
struct Record {
    statuses: BTreeMap<u16, usize>,
    carried_b: bool,
    problems: Vec<String>,
}

impl Ledger {
    fn judge(&mut self, p: &Probe, a: &Answer, secrets: &[(&'static str, String)]) {
        let record = self.ops.entry(p.op.clone()).or_default();
        *record.statuses.entry(a.status).or_default() += 1;
        self.sent += 1;
        let request = format!("{} {}", p.op.0, p.path);
        let sent = format!(
            "{request} {}",
            p.body.as_ref().map(Value::to_string).unwrap_or_default()
        );
        record.carried_b |= secrets.iter().any(|(_, v)| sent.contains(v.as_str()));
        let short: String = a.body.chars().take(240).collect();
        if !p.expect.contains(&a.status) {
            record
                .problems
                .push(format!("{request} answered {} {short}", a.status));
        }
        if (400..500).contains(&a.status) {
            self.refused += 1;
            let body = serde_json::from_str::<Value>(&a.body).unwrap_or_default();
            if !body["error"].is_string() || !a.content_type.starts_with("application/json") {
                record
                    .problems
                    .push(format!("{request}: not a JSON {{error}}: {short}"));
            }
        }
        let seen = format!("{}\n{}", a.headers, a.body).to_lowercase();
        let revealed: Vec<&str> = secrets
            .iter()
            .filter(|(_, v)| !p.echoes.contains(v) && seen.contains(&v.to_lowercase()))
            .map(|(label, _)| *label)
            .collect();
        if !revealed.is_empty() {
            self.leaks += 1;
            let what = revealed.join(", ");
            record
                .problems
                .push(format!("{request} reveals B's {what}: {short}"));
        }
    }
}

pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    let url = env.database("isolation").await?;
    let serve = env.plain_serve(&url, "isolation")?.unlimited();
    let server = serve.start().await?;
    let mark = Uuid::new_v4().simple().to_string()[..8].to_owned();
    let b = plant_victim(env, &url, &server, &mark).await?;
    let a = plant_attacker(env, &url, &server, &mark).await?;
    let before = snapshot(&server, &b).await?;
    if let Some((path, read)) = before.iter().find(|(_, read)| read[0] != 200) {
        bail!("B reading its own {path} before the attack: {read}");
    }
    let deliveries = before
        .iter()
        .find(|(path, _)| path.ends_with("/deliveries"));
    let queued = deliveries.and_then(|(_, read)| read[1].as_array().map(Vec::len));
    say(&format!(
        "  B planted: {} reads of its data, {} deliveries queued for its webhook",
        before.len(),
        queued.unwrap_or(0)
    ));

    let openapi = format!("{}/api/openapi.json", server.base);
    let document: Value = server.http.get(openapi).send().await?.json().await?;
    let operations = keyed_operations(&document)?;
    let secrets = b.secrets();
    let mut ledger = Ledger::default();

    let table = attack_table(&a, &b);
    let (known, stale): (Vec<&Probe>, Vec<&Probe>) =
        table.iter().partition(|p| operations.contains_key(&p.op));
    let stale: BTreeSet<String> = stale
        .iter()
        .map(|p| format!("{} {}", p.op.0, p.op.1))
        .collect();
    s.check(
        "every case of the attack table names an operation of the OpenAPI document",
        stale.is_empty(),
        format!("{} cases; not in the document: {stale:?}", table.len()),
    );
    for p in known {
        let answer = send(&server, &a.key, p).await?;
        ledger.judge(p, &answer, &secrets);
    }
    for (op, takes_body) in operations.iter().filter(|(op, _)| op.1.contains('{')) {
        attack_path(&server, &a.key, op, *takes_body, &b, &secrets, &mut ledger).await?;
    }
    member_cannot_touch_webhooks(s, &server, &a, &b, &secrets, &mut ledger).await?;

    for ((method, template), record) in &ledger.ops {
        let what = if template.contains('{') {
            "with B's ids: refused as for an unknown id, nothing of B revealed"
        } else if record.carried_b {
            "carrying B's ids or names: none used, nothing of B revealed"
        } else {
            "with A's key: nothing of B in the answers"
        };
        let counts = record.statuses.iter().map(|(st, n)| format!("{st}×{n}"));
        let seen: Vec<String> = counts
            .chain(record.problems.iter().take(3).cloned())
            .collect();
        let ok = record.problems.is_empty();
        s.check(format!("{method} {template} {what}"), ok, seen.join("; "));
    }
    let unattacked: Vec<String> = operations
        .keys()
        .filter(|op| !ledger.ops.contains_key(*op))
        .map(|(m, t)| format!("{m} {t}"))
        .collect();
    let attacked = operations.len() - unattacked.len();
    s.check(
        "every keyed operation of the OpenAPI document was attacked",
        unattacked.is_empty(),
        format!(
            "{attacked} of {}; not attacked: {unattacked:?}",
            operations.len()
        ),
    );

    let after = snapshot(&server, &b).await?;
    let changed: Vec<&str> = (before.iter().zip(&after))
        .filter(|(x, y)| x != y)
        .map(|((path, _), _)| path.as_str())
        .collect();
    let unchanged = changed.is_empty() && before.len() == after.len();
    // The first change, before and after, to tell what moved.
    let first_change = (before.iter().zip(&after))
        .find(|(x, y)| x != y)
        .map(|((_, x), (_, y))| {
            format!(
                "; before {}, after {}",
                shorten(&x.to_string(), 600),
                shorten(&y.to_string(), 600)
            )
        })
        .unwrap_or_default();
    s.check(
        "B's data, read with B's key, is the same after the attack",
        unchanged,
        format!("{} reads; changed: {changed:?}{first_change}", after.len()),
    );
    let webhooks = after.iter().find(|(path, _)| path == WEBHOOKS);
    let listed = webhooks.and_then(|(_, read)| read[1]["webhooks"].as_array().cloned());
    let status = (listed.unwrap_or_default().iter())
        .find(|w| w["id"] == b.webhook_id.as_str())
        .map(|w| w["status"].clone());
    s.check_eq(
        "B's webhook is still listed for B, ACTIVE",
        status,
        Some(json!("ACTIVE")),
    );
    s.check_eq("answers that revealed anything of B", ledger.leaks, 0);

    s.figure("keyed operations in the OpenAPI document", operations.len());
    s.figure("operations attacked", attacked);
    s.figure("requests sent", ledger.sent);
    s.figure("requests refused (4xx)", ledger.refused);
    s.figure("leaks found", ledger.leaks);
    s.figure("B's data unchanged", if unchanged { "yes" } else { "no" });
    another_members_notices(env, s).await?;
    others_activity_is_not_shown(env, s).await
}

/// How many clients the busy tenant creates between the watcher's two.
const BUSY_CLIENTS: usize = 40;

/// The watcher's workspace creates a client, another workspace creates [`BUSY_CLIENTS`], the
/// watcher creates one more: nothing the watcher reads (its two delivery ids, its feed cursors
/// before and after) differs by about the other's count, as installation-wide sequences would.
async fn others_activity_is_not_shown(env: &Env, s: &mut Scenario) -> Result<()> {
    let url = env.database("activity").await?;
    let receiver = timetrack_testkit::HttpsReceiver::start().await;
    let server = env.serve(&url, &receiver, "activity")?.start().await?;
    let watcher = env.account(&url, "Watcher").await?;
    let busy = env.account(&url, "Busy").await?;
    let (watcher_hook, _) = server
        .subscribe(&watcher.key, &receiver.url("/watcher"), &["CLIENT_CREATED"])
        .await?;
    server
        .subscribe(&busy.key, &receiver.url("/busy"), &["CLIENT_CREATED"])
        .await?;
    let feed = "/api/integrations/automation/events";
    let cursor_numbers = |page: &Value| -> Option<Vec<i128>> {
        use base64::Engine;
        let cursor = page["next_cursor"].as_str()?;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()?;
        let text = String::from_utf8(raw).ok()?;
        text.split(':')
            .skip(1)
            .take(2)
            .map(|n| n.parse().ok())
            .collect()
    };
    let mut statuses = Vec::new();
    let (status, _) = server
        .post(&watcher.key, "/api/clients", &json!({"name": "First"}))
        .await?;
    statuses.push(status);
    let (_, first_page) = server.get(&watcher.key, feed).await?;
    for n in 0..BUSY_CLIENTS {
        let (status, _) = server
            .post(
                &busy.key,
                "/api/clients",
                &json!({"name": format!("Busy {n}")}),
            )
            .await?;
        statuses.push(status);
    }
    let (status, _) = server
        .post(&watcher.key, "/api/clients", &json!({"name": "Second"}))
        .await?;
    statuses.push(status);
    let (_, second_page) = server.get(&watcher.key, feed).await?;
    let (_, log) = server
        .get(
            &watcher.key,
            &format!("{WEBHOOKS}/{watcher_hook}/deliveries"),
        )
        .await?;
    let ids: Vec<i128> = (log["data"].as_array().into_iter().flatten())
        .filter_map(|d| d["id"].as_str()?.parse().ok())
        .collect();
    // Sequences would differ by about the count between (plus the watcher's own); a masked
    // number differs by anything up to 2^63. (A number that stays the same tells nothing: a
    // cursor at the feed's horizon has sequence 0 each time.)
    let near = |a: i128, b: i128| (1..=100 * BUSY_CLIENTS as i128).contains(&(a - b).abs());
    let ids_near = ids.len() == 2 && near(ids[0], ids[1]);
    let (before, after) = (cursor_numbers(&first_page), cursor_numbers(&second_page));
    let cursors_near = match (&before, &after) {
        (Some(x), Some(y)) if x.len() == 2 && y.len() == 2 => near(x[0], y[0]) || near(x[1], y[1]),
        _ => true,
    };
    s.check(
        "a tenant's delivery ids and feed cursors say nothing of another tenant's activity",
        statuses.iter().all(|s| *s == 201) && ids.len() == 2 && !ids_near && !cursors_near,
        format!(
            "{} clients created; the watcher's delivery ids {ids:?}, cursor numbers {before:?} \
             then {after:?}, around {BUSY_CLIENTS} clients of another workspace",
            statuses.iter().filter(|s| **s == 201).count()
        ),
    );
    Ok(())
}

/// Two members of one workspace: Bea's webhook fails until its owner is told
/// (`WEBHOOK_FAILING`, with its URL); Al's webhook lists the notices. Al's replay of everything
/// since before, and resend of what his log shows, must bring him nothing about Bea's webhook.
async fn another_members_notices(env: &Env, s: &mut Scenario) -> Result<()> {
    let url = env.database("notices").await?;
    let receiver = timetrack_testkit::HttpsReceiver::start().await;
    let server = env
        .serve(&url, &receiver, "notices")?
        .env("TIMETRACK_WEBHOOK_FAILING_AFTER", "1s")
        .start()
        .await?;
    let al = env.account(&url, "Notices").await?;
    let bea = env.member(&url, &al.workspace_id).await?;
    receiver.respond(
        "/bea/secret-capability",
        timetrack_testkit::Behaviour::Respond(503, vec![]),
    );
    let notices = ["WEBHOOK_FAILING", "WEBHOOK_DISABLED", "CLIENT_CREATED"];
    let (_, _) = server
        .subscribe(
            &bea.key,
            &receiver.url("/bea/secret-capability"),
            &["CLIENT_CREATED"],
        )
        .await?;
    server
        .subscribe(&bea.key, &receiver.url("/bea/told"), &notices)
        .await?;
    let (al_hook, _) = server
        .subscribe(&al.key, &receiver.url("/al"), &notices)
        .await?;
    let (status, _) = server
        .post(&bea.key, "/api/clients", &json!({"name": "Fails at Bea's"}))
        .await?;
    // Retried after 1 s, 1 s, 2 s: failing for over a second by the second attempt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let told = |path: &str| {
        receiver
            .received()
            .iter()
            .filter(|r| {
                r.path == path && String::from_utf8_lossy(&r.body).contains("WEBHOOK_FAILING")
            })
            .count()
    };
    while told("/bea/told") == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    s.check(
        "a notice about Bea's failing webhook reaches Bea's other webhook",
        status == 201 && told("/bea/told") > 0,
        format!("client {status}; notices at Bea's: {}", told("/bea/told")),
    );
    let since = (time::OffsetDateTime::now_utc() - time::Duration::hours(1))
        .format(&time::format_description::well_known::Rfc3339)?;
    let hook = format!("{WEBHOOKS}/{al_hook}");
    let (replayed, body) = server
        .post(
            &al.key,
            &format!("{hook}/replay"),
            &json!({"since": since, "only_failed": false}),
        )
        .await?;
    let (_, log) = server.get(&al.key, &format!("{hook}/deliveries")).await?;
    let mut resent = Vec::new();
    for d in log["data"].as_array().into_iter().flatten() {
        let id = d["id"].as_str().unwrap_or_default();
        let (status, _) = server
            .post(
                &al.key,
                &format!("{hook}/deliveries/{id}/resend"),
                &json!({}),
            )
            .await?;
        resent.push(status);
    }
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let at_al: Vec<String> = receiver
        .received()
        .iter()
        .filter(|r| r.path == "/al")
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    let leaked = at_al
        .iter()
        .filter(|b| b.contains("secret-capability") || b.contains("WEBHOOK_FAILING"))
        .count();
    s.check(
        "Al's replay and resends of his own webhook bring him nothing about Bea's (no notice, \
         not her URL), and his log shows none",
        replayed == 202 && leaked == 0 && !log.to_string().contains("secret-capability"),
        format!(
            "replay {replayed} {body}; resends {resent:?}; {} requests at Al's, {leaked} about \
             Bea's webhook",
            at_al.len()
        ),
    );
    Ok(())
}

/// Every operation of the document that needs a key, and whether it takes a request body.
fn keyed_operations(document: &Value) -> Result<BTreeMap<Operation, bool>> {
    let paths = document["paths"]
        .as_object()
        .context("no paths in the OpenAPI document")?;
    let mut operations = BTreeMap::new();
    for (template, item) in paths.iter().filter(|(t, _)| !UNKEYED.contains(&t.as_str())) {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                let takes_body = op.get("requestBody").is_some();
                operations.insert((method.to_uppercase(), template.clone()), takes_body);
            }
        }
    }
    if operations.is_empty() {
        bail!("the OpenAPI document lists no keyed operation");
    }
    Ok(operations)
}

/// Requests with B's ids or names in their bodies or queries, and requests with no id at all,
/// whose answers must hold A's data only. Sent in this order.
fn attack_table(a: &Attacker, b: &Victim) -> Vec<Probe> {
    let find = &format!("{TRIGGERS}/clients/find");
    let projects_find = &format!("{TRIGGERS}/projects/find");
    let (a_space, b_space) = (&a.workspace_id, &b.workspace_id);
    let b_client = b.word("client name");
    let mut table = vec![
        probe("GET", "/api/me", OK),
        probe("GET", "/api/clients?limit=200", OK),
        probe("GET", "/api/projects?limit=200", OK),
        probe("GET", "/api/tags?limit=200", OK),
        probe("GET", "/api/time-entries?limit=200", OK),
        probe(
            "GET",
            &format!("/api/time-entries?user_id={}", b.user_id),
            OK,
        ),
        probe("GET", WEBHOOKS, OK),
        // The catch-up feed is the workspace's own: none of B's events.
        probe("GET", "/api/integrations/automation/events?limit=1000", OK),
        probe(
            "GET",
            "/api/integrations/automation/events?types=CLIENT_CREATED,TIME_ENTRY_CREATED",
            OK,
        ),
        probe("GET", "/api/integrations/automation/event-types", OK),
        probe("POST", find, &[403]).with(json!({"workspace_id": b_space, "name": b_client})),
        probe("POST", find, &[403])
            .with(json!({"workspace_id": b_space, "name": "a", "limit": 100})),
        probe("POST", find, OK).with(json!({"workspace_id": a_space, "name": b_client})),
        probe("POST", find, OK).with(json!({"workspace_id": a_space, "name": "bravo"})),
        probe("POST", find, OK).with(json!({"workspace_id": a_space, "name": "e"})),
        // The project find and the running-timer look-up answer A's own, whatever is named.
        probe("POST", projects_find, &[403]).with(json!({"workspace_id": b_space, "name": "a"})),
        probe("POST", projects_find, OK).with(json!({"name": b.word("project name")})),
        probe("POST", projects_find, OK).with(json!({"name": "e"})),
        probe("GET", &format!("{TRIGGERS}/time-entries/running"), OK),
        probe(
            "GET",
            &format!("{WEBHOOKS}?url=https%3A%2F%2Fexample.com%2Fhook"),
            OK,
        ),
        probe("POST", "/api/projects", REFUSED)
            .with(json!({"name": "Alpha project", "client_id": b.client_id})),
        probe("POST", "/api/time-entries", REFUSED)
            .replaying(&b.entry_body, B_ENTRY_IDEMPOTENCY_KEY),
    ];
    for trigger in FALLBACKS {
        table.push(probe("GET", &format!("{TRIGGERS}/{trigger}/fallback"), OK));
    }
    // Billing: the workspace, its members and rates are A's own; B's ids in a rate or a report's
    // filter are refused, and a report without a filter sums A's entries only.
    let range = "from=2024-01-01&to=2024-12-31";
    table.extend([
        probe("GET", "/api/workspace", OK),
        probe("PATCH", "/api/workspace", OK).with(json!({"settings": {"payment_terms_days": 30}})),
        probe("GET", "/api/members", OK),
        // Keys: A lists only A's, and a key is always made in the caller's own workspace (a body
        // naming B's is refused for its unknown field).
        probe("GET", "/api/keys", OK),
        probe("POST", "/api/keys", &[201]).with(json!({"name": "Alpha key", "scopes": ["read"]})),
        probe("POST", "/api/keys", REFUSED)
            .with(json!({"name": "Alpha key", "workspace_id": b_space})),
        probe("GET", "/api/rates", OK),
        probe(
            "GET",
            &format!("/api/rates?project_id={}", b.project_id),
            OK,
        ),
        probe("POST", "/api/rates", REFUSED).with(json!({
            "kind": "billable", "scope": "project", "project_id": b.project_id,
            "currency": "EUR", "hourly_minor": 100, "effective_from": "2024-01-01"})),
        probe("POST", "/api/rates", REFUSED).with(json!({
            "kind": "billable", "scope": "member", "user_id": b.user_id,
            "currency": "EUR", "hourly_minor": 100, "effective_from": "2024-01-01"})),
        probe(
            "GET",
            &format!("/api/reports/summary?{range}&group_by=client,project,user"),
            OK,
        ),
        probe(
            "GET",
            &format!(
                "/api/reports/summary?{range}&group_by=tag&tag_ids={}",
                b.tag_id
            ),
            REFUSED,
        )
        // The refusal names the id it was given: an echo, which reveals nothing.
        .echoing(&b.tag_id),
        probe(
            "GET",
            &format!("/api/reports/detailed?{range}&limit=1000"),
            OK,
        ),
        probe(
            "GET",
            &format!("/api/reports/detailed?{range}&user_ids={}", b.user_id),
            REFUSED,
        )
        // The refusal names the id it was given: an echo, which reveals nothing.
        .echoing(&b.user_id),
        probe("GET", &format!("/api/reports/uninvoiced?{range}"), OK),
        probe(
            "GET",
            &format!("/api/reports/uninvoiced?{range}&client_ids={}", b.client_id),
            REFUSED,
        )
        // The refusal names the id it was given: an echo, which reveals nothing.
        .echoing(&b.client_id),
        // Invoices: B's client cannot be billed or previewed; a list filtered by it is empty.
        probe("POST", "/api/invoices/preview", REFUSED).with(json!({
            "client_id": b.client_id, "from": "2024-01-01", "to": "2024-12-31"})),
        probe("POST", "/api/invoices", REFUSED).with(json!({
            "client_id": b.client_id, "from": "2024-01-01", "to": "2024-12-31",
            "extra_lines": [{"description": "fee", "quantity": 1, "unit_price_minor": 100}]})),
        probe("GET", "/api/invoices", OK),
        probe(
            "GET",
            &format!("/api/invoices?client_id={}", b.client_id),
            OK,
        ),
    ]);
    let own_entry = format!("/api/time-entries/{}", a.entry_id);
    for refs in [
        json!({"project_id": b.project_id}),
        json!({"task_id": b.task_id}),
        json!({"tag_ids": [b.tag_id]}),
    ] {
        let mut manual = json!({"start": "2024-05-01T08:00:00Z", "end": "2024-05-01T09:00:00Z"});
        merge(&mut manual, &refs);
        table.push(probe("POST", "/api/time-entries", REFUSED).with(manual));
        table.push(probe("POST", "/api/time-entries/start", REFUSED).with(refs.clone()));
        let patch = probe("PATCH", "/api/time-entries/{id}", REFUSED).at(own_entry.clone());
        table.push(patch.with(refs));
    }
    // B's timer runs throughout: A's start, current and stop must see A's timer only.
    table.push(
        probe("POST", "/api/time-entries/start", CREATED).with(json!({"description": "Alpha"})),
    );
    table.push(probe("GET", "/api/time-entries/current", OK));
    table.push(probe("POST", "/api/time-entries/stop", OK));
    // Last, because A then holds copies of B's words that A's own reads would rightly show:
    // neither a shared idempotency store nor a workspace-blind name check may hand A B's records,
    // and a subscription to B's very URL is A's own, with its own id and secret.
    let (tag, hook_url) = (b.word("tag name"), b.word("webhook URL"));
    table.extend([
        probe("POST", "/api/clients", CREATED).replaying(&b.client_body, B_CLIENT_IDEMPOTENCY_KEY),
        probe("POST", "/api/tags", CREATED)
            .with(json!({"name": tag}))
            .echoing(tag),
        probe("POST", &format!("{WEBHOOKS}/subscribe"), CREATED)
            .with(json!({"url": hook_url, "events": EVENTS}))
            .echoing(hook_url),
    ]);
    table
}

fn merge(target: &mut Value, extra: &Value) {
    if let (Some(t), Some(e)) = (target.as_object_mut(), extra.as_object()) {
        t.extend(e.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// Every one of B's ids in the path of a templated operation: each must be refused exactly as an
/// id that never existed is, so that the answer cannot even tell that B's record exists.
async fn attack_path(
    server: &ServerProcess,
    key: &str,
    op: &Operation,
    takes_body: bool,
    b: &Victim,
    secrets: &[(&'static str, String)],
    ledger: &mut Ledger,
) -> Result<()> {
    let (method, template) = op;
    let body = takes_body.then(|| match (method.as_str(), template.as_str()) {
        ("PATCH", "/api/clients/{id}") => json!({"name": "Alpha took this", "status": "inactive"}),
        ("PATCH", "/api/time-entries/{id}") => json!({"description": "changed by A"}),
        ("POST", "/api/projects/{id}/tasks") => json!({"name": "planted by A"}),
        _ => json!({}),
    });
    let attempt = |id: &str| {
        let segments = template
            .split('/')
            .map(|s| if s.starts_with('{') { id } else { s });
        let mut p = probe(method, template, REFUSED).at(segments.collect::<Vec<_>>().join("/"));
        p.body.clone_from(&body);
        p
    };
    let unknown_uuid = Uuid::new_v4().to_string();
    let unknown_webhook = format!("wh_{}", Uuid::new_v4().simple());
    let mut unknown = BTreeMap::new();
    for id in [&unknown_uuid, &unknown_webhook] {
        let p = attempt(id);
        let answer = send(server, key, &p).await?;
        ledger.judge(&p, &answer, secrets);
        unknown.insert(id.starts_with("wh_"), (answer.status, answer.body));
    }
    for (label, id) in b.ids() {
        let p = attempt(id);
        let answer = send(server, key, &p).await?;
        ledger.judge(&p, &answer, secrets);
        let (status, body) = &unknown[&id.starts_with("wh_")];
        if (answer.status, &answer.body) != (*status, body) {
            let problem = format!(
                "{method} {} (B's {label}) answered {} {}, an unknown id {status} {body}",
                p.path, answer.status, answer.body
            );
            ledger
                .ops
                .entry(op.clone())
                .or_default()
                .problems
                .push(problem);
        }
    }
    Ok(())
}

/// A second user of A may delete neither the first user's webhook nor B's.
async fn member_cannot_touch_webhooks(
    s: &mut Scenario,
    server: &ServerProcess,
    a: &Attacker,
    b: &Victim,
    secrets: &[(&'static str, String)],
    ledger: &mut Ledger,
) -> Result<()> {
    let not_found = (404, json!({"error": "Webhook not found"}));
    for (whose, id) in [("A1's", &a.webhook_id), ("B's", &b.webhook_id)] {
        let path = format!("{WEBHOOKS}/{id}");
        let p = probe("DELETE", &format!("{WEBHOOKS}/{{id}}"), &[404]).at(path);
        let answer = send(server, &a.member_key, &p).await?;
        ledger.judge(&p, &answer, secrets);
        let body = serde_json::from_str(&answer.body).unwrap_or_default();
        let what = format!("A2 deleting {whose} webhook: 404 Webhook not found");
        s.check_eq(what, (answer.status, body), not_found.clone());
    }
    let (status, list) = server.get(&a.key, WEBHOOKS).await?;
    let listed = list["webhooks"].as_array().is_some_and(|l| {
        l.iter()
            .any(|w| w["id"] == a.webhook_id.as_str() && w["status"] == "ACTIVE")
    });
    s.check(
        "A1's webhook is still listed for A1, ACTIVE, after A2's delete",
        status == 200 && listed,
        format!("{status}, listed: {listed}"),
    );
    Ok(())
}

/// Workspace B with one of everything, made through B1's key, and a timer left running.
async fn plant_victim(env: &Env, url: &str, server: &ServerProcess, mark: &str) -> Result<Victim> {
    let workspace_name = format!("Bravo {mark} Workspace");
    let account = env.account(url, &workspace_name).await?;
    let key = account.key.clone();
    let post =
        |path: &str, body: Value| made(server, &key, probe("POST", path, CREATED).with(body));
    let replayed = |path: &str, body: &Value, idempotency_key| {
        let p = probe("POST", path, CREATED).replaying(body, idempotency_key);
        made(server, &key, p)
    };
    let hook_url = format!("https://hooks.example.com/bravo-{mark}");
    let hook_description = format!("Bravo {mark} hook");
    let subscribe = json!({"url": hook_url, "events": EVENTS, "description": hook_description});
    let hook = post(&format!("{WEBHOOKS}/subscribe"), subscribe).await?;

    let client_name = format!("Bravo {mark} Client");
    let phone = format!("+1 555 {:07}", Uuid::new_v4().as_u128() % 10_000_000);
    let client_body = json!({
        "name": client_name, "type": "company", "email": format!("billing-{mark}@bravo.example"),
        "phone": phone, "address": format!("{mark} Bravo Street"),
        "note": format!("Bravo {mark} confidential note"),
    });
    let client = replayed("/api/clients", &client_body, B_CLIENT_IDEMPOTENCY_KEY).await?;
    let client_id = text(&client, "/id")?;
    let project_name = format!("Bravo {mark} Project");
    let project = post(
        "/api/projects",
        json!({"name": project_name, "client_id": client_id}),
    );
    let project_id = text(&project.await?, "/id")?;
    let task_name = format!("Bravo {mark} Task");
    let tasks = format!("/api/projects/{project_id}/tasks");
    let task_id = text(&post(&tasks, json!({"name": task_name})).await?, "/id")?;
    let tag_name = format!("Bravo {mark} Tag");
    let tag_id = text(&post("/api/tags", json!({"name": tag_name})).await?, "/id")?;
    let refs = json!({"project_id": project_id, "task_id": task_id, "tag_ids": [tag_id]});

    let described = |what: &str| {
        let mut body = json!({"description": format!("Bravo {mark} {what}")});
        merge(&mut body, &refs);
        body
    };
    let mut entry_body = described("manual work");
    merge(
        &mut entry_body,
        &json!({"start": "2024-03-01T09:00:00Z", "end": "2024-03-01T10:30:00Z", "billable": true}),
    );
    let manual = replayed("/api/time-entries", &entry_body, B_ENTRY_IDEMPOTENCY_KEY).await?;
    let stopped = post("/api/time-entries/start", described("timed work")).await?;
    post("/api/time-entries/stop", json!({})).await?;
    let running = post("/api/time-entries/start", described("running work")).await?;
    let me = made(server, &key, probe("GET", "/api/me", OK)).await?;

    let words = vec![
        ("workspace name", workspace_name),
        ("client name", client_name),
        ("project name", project_name),
        ("task name", task_name),
        ("tag name", tag_name),
        ("client email", text(&client_body, "/email")?),
        ("client phone", phone),
        ("client address", text(&client_body, "/address")?),
        ("client note", text(&client_body, "/note")?),
        ("user email", text(&me, "/user/email")?),
        ("entry description", format!("Bravo {mark} manual work")),
        ("entry description", format!("Bravo {mark} timed work")),
        ("entry description", format!("Bravo {mark} running work")),
        ("webhook URL", hook_url),
        ("webhook description", hook_description),
    ];
    Ok(Victim {
        key,
        workspace_id: account.workspace_id,
        user_id: account.user_id,
        client_id,
        project_id,
        task_id,
        tag_id,
        entry_ids: [
            text(&manual, "/id")?,
            text(&stopped, "/id")?,
            text(&running, "/id")?,
        ],
        webhook_id: text(&hook, "/webhook/id")?,
        webhook_secret: text(&hook, "/webhook/secret")?,
        client_body,
        entry_body,
        words,
    })
}

/// Workspace A: A1 with a webhook, a client and an entry of its own; A2 beside A1.
async fn plant_attacker(
    env: &Env,
    url: &str,
    server: &ServerProcess,
    mark: &str,
) -> Result<Attacker> {
    let account = env.account(url, &format!("Alpha {mark} Workspace")).await?;
    let member = env.member(url, &account.workspace_id).await?;
    let key = account.key;
    let hook_url = format!("https://hooks.example.com/alpha-{mark}");
    let (webhook_id, _) = server.subscribe(&key, &hook_url, &EVENTS).await?;
    let post =
        |path: &str, body: Value| made(server, &key, probe("POST", path, CREATED).with(body));
    post(
        "/api/clients",
        json!({"name": format!("Alpha {mark} Client")}),
    )
    .await?;
    let entry = json!({
        "start": "2024-04-01T09:00:00Z", "end": "2024-04-01T10:00:00Z", "description": "Alpha work",
    });
    let entry_id = text(&post("/api/time-entries", entry).await?, "/id")?;
    Ok(Attacker {
        key,
        member_key: member.key,
        workspace_id: account.workspace_id,
        entry_id,
        webhook_id,
    })
}

/// Every read of B's data through B's key, each as `[status, body]`, leaving out what delivery
/// attempts change by themselves.
/// `value` without what a running entry's price says of the time so far (its rounded duration
/// and amounts grow by themselves while it runs).
fn without_running_figures(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(without_running_figures),
        Value::Object(fields) => {
            if fields.get("running") == Some(&Value::Bool(true))
                && let Some(Value::Object(pricing)) = fields.get_mut("pricing")
            {
                for key in [
                    "rounded_seconds",
                    "billable_amount_minor",
                    "cost_amount_minor",
                ] {
                    pricing.remove(key);
                }
            }
            fields.values_mut().for_each(without_running_figures);
        }
        _ => {}
    }
}

async fn snapshot(server: &ServerProcess, b: &Victim) -> Result<Vec<(String, Value)>> {
    let mut paths: Vec<String> = [
        "/api/me",
        "/api/clients?limit=200",
        "/api/projects?limit=200",
        "/api/tags?limit=200",
        "/api/time-entries?limit=200",
        "/api/time-entries/current",
        WEBHOOKS,
    ]
    .map(str::to_owned)
    .into();
    paths.push(format!("/api/clients/{}", b.client_id));
    paths.push(format!("/api/projects/{}/tasks?limit=200", b.project_id));
    paths.extend(
        b.entry_ids
            .iter()
            .map(|id| format!("/api/time-entries/{id}")),
    );
    paths.push(format!("{WEBHOOKS}/{}/deliveries", b.webhook_id));
    for trigger in FALLBACKS {
        paths.push(format!("{TRIGGERS}/{trigger}/fallback"));
    }
    let mut reads = Vec::new();
    for path in paths {
        let (status, mut body) = server.get(&b.key, &path).await?;
        if path.ends_with("/deliveries") {
            // Which events were queued for B must not change; their attempts move on their own.
            let queued = body["data"].as_array().cloned().unwrap_or_default();
            let queued = queued
                .iter()
                .map(|d| json!([d["event_id"], d["event_type"], d["created_at"]]));
            body = queued.collect();
        }
        if path == WEBHOOKS {
            // B's webhook points at a host this machine cannot reach: its health moves with each
            // retry on its own (one every few seconds); what it is and how it is set must not.
            for webhook in body["webhooks"].as_array_mut().into_iter().flatten() {
                if let Some(fields) = webhook.as_object_mut() {
                    fields.remove("health");
                }
            }
        }
        without_running_figures(&mut body);
        reads.push((path, json!([status, body])));
    }
    let find = json!({"workspace_id": b.workspace_id, "name": b.word("client name")});
    let (status, found) = server
        .post(&b.key, &format!("{TRIGGERS}/clients/find"), &find)
        .await?;
    reads.push(("find B's client".to_owned(), json!([status, found])));
    Ok(reads)
}
