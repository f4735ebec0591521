//! Webhook deliveries from the real binary to a local HTTPS receiver with its own CA.

use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use timetrack_testkit::{Behaviour, HttpsReceiver, Received, TestDatabase};

use super::{ServerProcess, json_stdout, run, seed_account, serve};

mod console;
mod headers;
mod hostile;
mod mcp;
mod metrics;
mod operate;
mod payloads;
mod pooler;
mod processes;
mod retries;

/// Checks a Standard Webhooks signature with an HMAC computed here, not by the service's code.
fn assert_signed(received: &Received, secret: &str) {
    let id = received.header("webhook-id").unwrap();
    let timestamp = received.header("webhook-timestamp").unwrap();
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(&received.body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    assert_eq!(
        received.header("webhook-signature"),
        Some(expected.as_str())
    );
    let age = time::OffsetDateTime::now_utc().unix_timestamp() - timestamp.parse::<i64>().unwrap();
    assert!((0..60).contains(&age), "timestamp {timestamp}");
}

/// The path holding the `standardwebhooks` package from PyPI, installed on first use: an
/// implementation of the scheme independent of the service's.
fn standard_webhooks() -> std::path::PathBuf {
    timetrack_testkit::python_package(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "standardwebhooks==1.1.0",
        "standardwebhooks",
    )
}

/// Runs a verifier (`program`, which reads a case `{secret, body, headers}` of `received` on
/// stdin) and asserts that it printed `verified`.
fn assert_verifier_accepts(program: Command, received: &Received, secret: &str) {
    let (stdout, stderr) = verifier_says(program, received, secret);
    assert_eq!(stdout, "verified", "{stderr}");
}

/// What a verifier (`program`, as for [`assert_verifier_accepts`]) printed on stdout and on
/// stderr for `received` checked with `secret`.
fn verifier_says(mut program: Command, received: &Received, secret: &str) -> (String, String) {
    let case = json!({
        "secret": secret,
        "body": String::from_utf8(received.body.clone()).unwrap(),
        "headers": {
            "webhook-id": received.header("webhook-id"),
            "webhook-timestamp": received.header("webhook-timestamp"),
            "webhook-signature": received.header("webhook-signature"),
        },
    });
    let mut child = program
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {program:?}: {e}"));
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(case.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `standardwebhooks` package's verifier, as a program for [`verifier_says`]: it prints
/// `verified`, or `rejected: <why>`.
fn python_verifier() -> Command {
    let script = "import json, sys\n\
                  from standardwebhooks.webhooks import Webhook\n\
                  case = json.load(sys.stdin)\n\
                  try:\n\
                  \x20   Webhook(case['secret']).verify(case['body'].encode(), case['headers'])\n\
                  except Exception as e:\n\
                  \x20   print('rejected:', e)\n\
                  \x20   sys.exit(0)\n\
                  print('verified')\n";
    let mut python = Command::new("python3");
    python
        .arg("-c")
        .arg(script)
        .env("PYTHONPATH", standard_webhooks());
    python
}

/// Verifies a delivery with the `standardwebhooks` package.
fn assert_verified_by_standard_webhooks(received: &Received, secret: &str) {
    assert_verifier_accepts(python_verifier(), received, secret);
}

/// The Node.js example of `docs/integration-guide.md` ("Verifying the signature"), as it is
/// written there.
fn guides_node_example() -> String {
    let guide = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/integration-guide.md"),
    )
    .unwrap();
    let start = guide.find("```js\n").expect("the guide has a js example") + "```js\n".len();
    let end = start + guide[start..].find("```").unwrap();
    guide[start..end].to_owned()
}

/// Verifies a delivery with the guide's Node.js example, on the npm `standardwebhooks`
/// package.
fn assert_verified_by_the_guides_node_example(received: &Received, secret: &str) {
    let modules = timetrack_testkit::npm_package(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "standardwebhooks@1.1.1",
        "standardwebhooks",
    );
    let script = format!(
        "{}\nconst c = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n\
         verify(c.secret, c.body, c.headers);\nconsole.log('verified');\n",
        guides_node_example()
    );
    let mut node = Command::new("node");
    node.arg("-e").arg(script).env("NODE_PATH", modules);
    assert_verifier_accepts(node, received, secret);
}

/// Fields drop in order: the server stops before its database goes.
struct Setup {
    server: ServerProcess,
    receiver: HttpsReceiver,
    key: String,
    client: ::reqwest::Client,
    _db: TestDatabase,
}

impl Setup {
    async fn new() -> Self {
        Self::with(&[]).await
    }

    /// A setup whose server also has the settings `env`.
    async fn with(env: &[(&'static str, &'static str)]) -> Self {
        let env = env.to_vec();
        let db = TestDatabase::new().await;
        let receiver = HttpsReceiver::start().await;
        let url = db.url().to_owned();
        let ca = receiver.ca_pem_path();
        let (key, server) = tokio::task::spawn_blocking(move || {
            let key = seed_account(
                &url,
                &["--name", "Deliveries", "--timezone", "Europe/Paris"],
            );
            let mut command = serve(&url)
                .env("TIMETRACK_WEBHOOK_ALLOW_PRIVATE_TARGETS", "true")
                .env("TIMETRACK_WEBHOOK_ROOT_CERTS", ca.to_string_lossy())
                .env("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s")
                .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000")
                .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000");
            for (name, value) in env {
                command = command.env(name, value);
            }
            let server = command.start_blocking().unwrap();
            (key, server)
        })
        .await
        .unwrap();
        Self {
            _db: db,
            receiver,
            server,
            key,
            client: ::reqwest::Client::new(),
        }
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let res = self
            .client
            .post(format!("{}{path}", self.server.base))
            .bearer_auth(&self.key)
            .json(&body)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    }

    async fn get(&self, path: &str) -> Value {
        self.client
            .get(format!("{}{path}", self.server.base))
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// `method` on `path` with an optional JSON body: status and body (`null` when empty).
    async fn send(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(
                method.parse().unwrap(),
                format!("{}{path}", self.server.base),
            )
            .bearer_auth(&self.key);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn subscribe(&self, path: &str, events: &[&str]) -> (String, String) {
        let (status, body) = self
            .post(
                "/api/integrations/automation/webhooks/subscribe",
                json!({"url": self.receiver.url(path), "events": events}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        (
            body["webhook"]["id"].as_str().unwrap().to_owned(),
            body["webhook"]["secret"].as_str().unwrap().to_owned(),
        )
    }
}

fn on<'a>(received: &'a [Received], path: &str) -> Vec<&'a Received> {
    received.iter().filter(|r| r.path == path).collect()
}

/// Waits up to `timeout` until `done` holds for what the receiver got; what it got then.
async fn received_until(
    s: &Setup,
    timeout: Duration,
    done: impl Fn(&[Received]) -> bool,
) -> Vec<Received> {
    let deadline = Instant::now() + timeout;
    loop {
        let received = s.receiver.received();
        if done(&received) || Instant::now() > deadline {
            return received;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The JSON body of a delivery.
fn body_of(received: &Received) -> Value {
    serde_json::from_slice(&received.body).unwrap()
}

/// Waits until the log of webhook `id` shows delivery `delivery` in a final state; it.
async fn settled(s: &Setup, id: &str, delivery: &str) -> Value {
    let path = format!("/api/integrations/automation/webhooks/{id}/deliveries/{delivery}");
    let mut detail = Value::Null;
    for _ in 0..100 {
        detail = s.get(&path).await;
        if detail["status"] != "PENDING" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    detail
}

/// The `jsonschema` package (draft 2020-12), an independent validator.
fn json_schema_package() -> std::path::PathBuf {
    timetrack_testkit::python_package(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "jsonschema==4.26.0",
        "jsonschema",
    )
}

/// Validates every one of `received` against the schema the event-type catalog gives for its
/// `X-Webhook-Event`, and every sample of the catalog against its own schema, with the
/// `jsonschema` package; returns the types seen.
async fn assert_valid_against_the_catalog(s: &Setup, received: &[&Received]) -> Vec<String> {
    let catalog = s.get("/api/integrations/automation/event-types").await;
    let schemas: serde_json::Map<String, Value> = catalog
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["type"].as_str().unwrap().to_owned(), e["schema"].clone()))
        .collect();
    let mut bodies: Vec<Value> = catalog
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!({"type": e["type"], "body": e["sample"].to_string(), "what": "sample"}))
        .collect();
    let mut types = Vec::new();
    for r in received {
        let t = r.header("x-webhook-event").unwrap().to_owned();
        bodies.push(json!({
            "type": t,
            "body": String::from_utf8(r.body.clone()).unwrap(),
            "what": "delivery",
        }));
        types.push(t);
    }
    let script = "import json, sys\n\
                  from jsonschema import Draft202012Validator\n\
                  case = json.load(sys.stdin)\n\
                  for schema in case['schemas'].values():\n\
                  \x20   Draft202012Validator.check_schema(schema)\n\
                  bad = []\n\
                  for item in case['bodies']:\n\
                  \x20   v = Draft202012Validator(case['schemas'][item['type']])\n\
                  \x20   for e in v.iter_errors(json.loads(item['body'])):\n\
                  \x20       bad.append(item['what'] + ' ' + item['type'] + ': ' + e.message)\n\
                  canary = Draft202012Validator(case['schemas']['TIMER_STARTED'])\n\
                  caught = len(list(canary.iter_errors(json.loads(case['canary']))))\n\
                  print(json.dumps({'checked': len(case['bodies']), 'bad': bad, 'caught': caught}))\n";
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(script)
        .env("PYTHONPATH", json_schema_package())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            json!({
                "schemas": schemas,
                "bodies": bodies,
                // A stopped timer is not a started one: the validator must say so.
                "canary": catalog[1]["sample"].to_string(),
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "the validator failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(verdict["bad"], json!([]), "{verdict}");
    assert_eq!(verdict["checked"], bodies.len());
    assert!(verdict["caught"].as_u64().unwrap() > 0, "{verdict}");
    types.sort();
    types.dedup();
    types
}

/// Tests that load the machine run one at a time: on two cores, several at once would measure
/// the machine, not the service.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A server on `url` for delivery tests: private targets allowed, the receiver's CA trusted,
/// rate limits lifted, retries after a second.
fn delivery_server(url: &str, ca: &std::path::Path) -> ServerProcess {
    serve(url)
        .trusting_receiver(ca)
        .env("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s")
        .env("TIMETRACK_WEBHOOK_TIMEOUT", "3")
        .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000")
        .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000")
        .start_blocking()
        .unwrap()
}

async fn count_events(db: &TestDatabase) -> usize {
    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let row = client
        .query_one("SELECT count(*) FROM events", &[])
        .await
        .unwrap();
    usize::try_from(row.get::<_, i64>(0)).unwrap()
}

/// Creates `count` clients through `base` with 16 concurrent callers; returns how many got 201.
async fn create_clients(base: &str, key: &str, prefix: &str, count: usize) -> usize {
    let client = ::reqwest::Client::new();
    let created = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let (client, created, next) = (client.clone(), created.clone(), next.clone());
            let (base, key, prefix) = (base.to_owned(), key.to_owned(), prefix.to_owned());
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if n >= count {
                        return;
                    }
                    // A 503 (no database connection in time) and a request lost on its way
                    // (a kept-alive connection closed as it left) are retried with the same
                    // Idempotency-Key, as a careful client does: a retry never creates a
                    // second client.
                    for attempt in 1..=5 {
                        let res = client
                            .post(format!("{base}/api/clients"))
                            .bearer_auth(&key)
                            .header("Idempotency-Key", format!("{prefix}-{n}"))
                            .json(&json!({"name": format!("{prefix} {n}")}))
                            .send()
                            .await;
                        let retry = match res {
                            Ok(res) if res.status() == 201 => {
                                created.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                break;
                            }
                            Ok(res) => res.status() == 503,
                            // A server that is down (connection refused) stays down here.
                            Err(err) => !err.is_connect(),
                        };
                        if !retry || attempt == 5 {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    created.load(std::sync::atomic::Ordering::SeqCst)
}

fn unique_ids(received: &[Received], path: &str) -> (usize, usize) {
    let on_path = on(received, path);
    let unique: std::collections::HashSet<&str> = on_path
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    (unique.len(), on_path.len() - unique.len())
}
