//! `timetrack listen` against a real `serve` on its private cluster: a first webhook received on
//! this machine, verified, printed and forwarded to a plain-HTTP handler, with no flag or
//! certificate work.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::mpsc;

use serde_json::json;

use super::*;

/// One request a plain-HTTP handler received: its headers (names lower-case) and body.
struct Forwarded {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Forwarded {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// A plain-HTTP handler on a free port answering 200 to each request, and what it received.
fn plain_handler() -> (u16, mpsc::Receiver<Forwarded>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut data = Vec::new();
            let mut buf = [0u8; 8192];
            let (head_end, length) = loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break (None, 0);
                }
                data.extend_from_slice(&buf[..n]);
                if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&data[..end]).to_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    break (Some(end + 4), length);
                }
            };
            let Some(start) = head_end else { continue };
            while data.len() < start + length {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break;
                }
                data.extend_from_slice(&buf[..n]);
            }
            let head = String::from_utf8_lossy(&data[..start]).into_owned();
            let headers = head
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned()))
                .collect();
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
            let _ = tx.send(Forwarded {
                headers,
                body: data[start..(start + length).min(data.len())].to_vec(),
            });
        }
    });
    (port, rx)
}

/// Lines of a child's stdout, read on a thread, so a test can wait for one with a deadline.
fn lines_of(stdout: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The first line (within 30 s) for which `wanted` is true, every line read kept in `seen`.
fn wait_for(
    lines: &mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                seen.push(line.clone());
                if wanted(&line) {
                    return line;
                }
            }
            Err(_) => panic!(
                "no such line within 30 s; listen printed:\n{}",
                seen.join("\n")
            ),
        }
    }
}

/// A child process killed if the test fails before it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `POST url` with a bearer key and a JSON body: the status.
fn post(url: &str, key: &str, body: &Value) -> u16 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        ::reqwest::Client::new()
            .post(url)
            .bearer_auth(key)
            .json(body)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    })
}

#[test]
fn listen_receives_verifies_prints_and_forwards_then_unsubscribes() {
    let dir = std::env::temp_dir().join(format!("timetrack-listen-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = tuned(ServeCommand::on_private_cluster(Path::new(BIN)))
        .without_command_name()
        .current_dir(&dir)
        .start_blocking()
        .unwrap();
    let banner = read_banner(&mut server);
    let key = banner
        .split_whitespace()
        .find(|w| w.starts_with("tt_"))
        .map(|w| w.trim_end_matches('\'').to_owned())
        .expect("key in banner");

    let (handler_port, forwarded) = plain_handler();
    // Nothing but the data directory (the default, in the working directory) is given: the base
    // URL, the key and the trust come from the running serve.
    let mut listen = Child(
        Command::new(BIN)
            .args([
                "listen",
                "--events",
                "client_created",
                "--forward-to",
                &format!("http://127.0.0.1:{handler_port}/hook"),
            ])
            .current_dir(&dir)
            .env_remove("DATABASE_URL")
            .env_remove("TIMETRACK_DATA_DIR")
            .env_remove("TIMETRACK_API_KEY")
            .env_remove("TIMETRACK_BASE_URL")
            .env("TIMETRACK_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let lines = lines_of(listen.0.stdout.take().unwrap());
    let mut seen = Vec::new();
    let ready = wait_for(&lines, &mut seen, |l| l.starts_with("Ready:"));
    assert!(
        ready.contains("CLIENT_CREATED") && ready.contains(&server.base),
        "{ready}"
    );
    let url = ready.split_whitespace().last().unwrap().to_owned();
    assert!(url.starts_with("https://127.0.0.1:"), "{ready}");
    let webhook_line = wait_for(&lines, &mut seen, |l| l.starts_with("Webhook "));
    let words: Vec<&str> = webhook_line.split_whitespace().collect();
    let webhook_id = words[1].trim_end_matches(',').to_owned();
    let secret = words
        .iter()
        .find(|w| w.starts_with("whsec_"))
        .expect("the signing secret")
        .to_string();

    let hooks = format!("{}/api/integrations/automation/webhooks", server.base);
    // Only the port listen registered is let through: another loopback port stays refused.
    let port: u16 = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let elsewhere = json!({
        "url": format!("https://127.0.0.1:{}/", port.wrapping_add(1)),
        "events": ["CLIENT_CREATED"],
    });
    assert_eq!(post(&format!("{hooks}/subscribe"), &key, &elsewhere), 400);

    // Create a client: see it arrive, verified, and forwarded with its headers.
    let clients = format!("{}/api/clients", server.base);
    assert_eq!(post(&clients, &key, &json!({"name": "Listen Co"})), 201);
    let printed = wait_for(&lines, &mut seen, |l| l.contains("CLIENT_CREATED"));
    assert!(
        printed.contains("verified")
            && !printed.contains("NOT VERIFIED")
            && printed.contains("Listen Co"),
        "{printed}"
    );
    let forwarded_line = wait_for(&lines, &mut seen, |l| l.trim_start().starts_with("->"));
    assert!(forwarded_line.ends_with(" 200"), "{forwarded_line}");
    let request = forwarded
        .recv_timeout(Duration::from_secs(10))
        .expect("the handler received the delivery");
    assert_eq!(request.header("x-webhook-event"), "CLIENT_CREATED");
    let signature = timetrack_domain::delivery::sign(
        &secret,
        request.header("webhook-id"),
        request.header("webhook-timestamp").parse().unwrap(),
        &request.body,
    )
    .unwrap();
    assert_eq!(
        request.header("webhook-signature"),
        signature,
        "forwarded with the original signature, which the printed secret verifies"
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["name"], "Listen Co", "{body}");

    // Ctrl-C: the webhook is deleted, and the port no longer let through.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(listen.0.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let stopped = wait_for(&lines, &mut seen, |l| l.starts_with("Stopped:"));
    assert!(stopped.contains(&webhook_id), "{stopped}");
    assert!(listen.0.wait().unwrap().success());
    let (status, list) = get_json(&server, "/api/integrations/automation/webhooks", &key);
    assert_eq!(status, 200);
    assert_eq!(list["webhooks"], json!([]), "the webhook is gone");
    let again = json!({"url": url, "events": ["CLIENT_CREATED"]});
    assert_eq!(
        post(&format!("{hooks}/subscribe"), &key, &again),
        400,
        "the stopped listener's port is refused again"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
