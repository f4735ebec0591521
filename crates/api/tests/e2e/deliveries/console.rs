//! The console in Chromium.

use super::*;

/// The Rust verification snippet the console shows, compiled here as it is served.
mod console_snippet {
    include!("../../../console/snippets/verify.rs");
}

/// The console in a real Chromium, through the proof list of the console spec: the script
/// `tests/console/console.cjs` drives the page (playwright-core) and asks this test to change
/// the HTTPS receiver's answer and to show what it received; screenshots go to
/// `target/console-screenshots/`. Then the page's Python and Rust snippets verify the last
/// delivery too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_chromium_walks_the_proof_list() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let chromium = timetrack_testkit::chromium();
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let modules = [
        timetrack_testkit::npm_package(tmp, "playwright-core@1.64.1", "playwright-core"),
        timetrack_testkit::npm_package(tmp, "standardwebhooks@1.1.1", "standardwebhooks"),
    ];
    let node_path = std::env::join_paths(&modules).unwrap();
    let shots = tmp.join("../console-screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    // Failed deliveries wait for a resend rather than an automatic retry.
    let s = Setup::with(&[("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1h")]).await;
    s.receiver
        .respond("/hook", Behaviour::Respond(200, Vec::new()));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console/console.cjs");
    let mut node = tokio::process::Command::new("node")
        .arg(&script)
        .env("NODE_PATH", node_path)
        .env("CONSOLE_BASE", &s.server.base)
        .env("CONSOLE_KEY", &s.key)
        .env("CONSOLE_RECEIVER", s.receiver.url(""))
        .env("CONSOLE_SHOTS", &shots)
        .env("CONSOLE_CHROMIUM", &chromium)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node is needed for the console test");
    let mut to_script = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut result = None;
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let line = tokio::time::timeout_at(deadline.into(), lines.next_line())
            .await
            .expect("the console script finished in time")
            .unwrap();
        let Some(line) = line else { break };
        if let Some(ask) = line.strip_prefix("ASK ") {
            let ask: Value = serde_json::from_str(ask).unwrap();
            let reply = if let Some(respond) = ask.get("respond") {
                let status = u16::try_from(respond["status"].as_u64().unwrap()).unwrap();
                s.receiver.respond(
                    respond["path"].as_str().unwrap(),
                    Behaviour::Respond(status, Vec::new()),
                );
                json!({"done": true})
            } else {
                let path = ask["received"].as_str().unwrap();
                let received: Vec<Value> = s
                    .receiver
                    .received()
                    .iter()
                    .filter(|r| r.path == path)
                    .map(|r| {
                        json!({
                            "headers": r.headers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
                            "body": String::from_utf8_lossy(&r.body),
                        })
                    })
                    .collect();
                Value::Array(received)
            };
            to_script
                .write_all(format!("{reply}\n").as_bytes())
                .await
                .unwrap();
        } else if let Some(found) = line.strip_prefix("RESULT ") {
            result = Some(serde_json::from_str::<Value>(found).unwrap());
        } else {
            // The script's progress, shown with `--nocapture` or on failure.
            eprintln!("{line}");
        }
    }
    let status = node.wait().await.unwrap();
    assert!(
        status.success(),
        "the console script failed ({status}); its output is above"
    );
    let result = result.expect("the script reported its result");
    assert!(result["checks"].as_u64().unwrap() >= 40, "{result}");
    let taken = std::fs::read_dir(&shots)
        .unwrap()
        .filter(|entry| entry.as_ref().unwrap().path().extension() == Some("png".as_ref()))
        .count();
    assert!(taken >= 15, "{taken} screenshots in {}", shots.display());

    // The snippets the page showed are the served files, and they verify a real delivery.
    let secret = result["secret"].as_str().unwrap();
    let last = s
        .receiver
        .received()
        .into_iter()
        .rfind(|r| r.path == "/hook")
        .unwrap();
    let snippets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console/snippets");
    assert_eq!(
        result["rust"].as_str().unwrap(),
        std::fs::read_to_string(snippets.join("verify.rs")).unwrap()
    );
    assert!(console_snippet::verify(
        secret,
        last.header("webhook-id").unwrap(),
        last.header("webhook-timestamp").unwrap(),
        last.header("webhook-signature").unwrap(),
        &last.body,
        time::OffsetDateTime::now_utc().unix_timestamp(),
    ));
    assert!(!console_snippet::verify(
        "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        last.header("webhook-id").unwrap(),
        last.header("webhook-timestamp").unwrap(),
        last.header("webhook-signature").unwrap(),
        &last.body,
        time::OffsetDateTime::now_utc().unix_timestamp(),
    ));
    let python = format!(
        "{}\nimport json, sys\nc = json.load(sys.stdin)\n\
         verify(c['secret'], c['body'].encode(), c['headers'])\nprint('verified')\n",
        result["python"].as_str().unwrap()
    );
    let mut program = Command::new("python3");
    program
        .arg("-c")
        .arg(python)
        .env("PYTHONPATH", standard_webhooks());
    assert_verifier_accepts(program, &last, secret);
}
