//! SSRF: every blocked range and spelling (user-info and backslash tricks included) refused at
//! subscribe time, and refused again at send time (a name that starts resolving to loopback after
//! subscribing, and subscriptions written straight into the database), with a loopback canary
//! that must see no connection.
//!
//! Names resolve through a hosts file of the suite's own: the server runs in a mount namespace of
//! its own (`unshare`) where that file is bind-mounted over `/etc/hosts`, so the machine's file is
//! never touched.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use timetrack_testkit::HttpsReceiver;

use crate::env::{Db, Env};
use crate::scenario::{Scenario, check_canary_untouched, say};

/// A public address (documentation of no one: it is never connected to, only resolved).
const PUBLIC: &str = "93.184.215.14";

/// Hosts refused at subscribe time: blocked ranges, IPv6 forms, other spellings of IPv4, and
/// names that resolve (through the suite's hosts file) to blocked addresses.
const BLOCKED_HOSTS: &[&str] = &[
    // IPv4 ranges.
    "0.1.2.3",
    "10.0.0.1",
    "100.64.0.1",
    "127.0.0.1",
    "127.255.255.254",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.1",
    "192.0.2.1",
    "192.168.0.1",
    "198.18.0.1",
    "198.51.100.1",
    "203.0.113.1",
    "224.0.0.1",
    "240.0.0.1",
    "255.255.255.255",
    // IPv6 ranges and IPv4 embedded in IPv6.
    "[::1]",
    "[::]",
    "[fc00::1]",
    "[fd12:3456::1]",
    "[fe80::1]",
    "[ff02::1]",
    "[2001:db8::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:127.0.0.1]",
    "[::ffff:10.0.0.1]",
    "[64:ff9b::7f00:1]",
    "[64:ff9b::a9fe:a9fe]",
    "[2002:7f00:1::1]",
    "[2002:c0a8:1::1]",
    // Teredo: the client address is stored inverted; 80ff:fffe is 127.0.0.1.
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
    // Other spellings of 127.0.0.1 and 169.254.169.254.
    "2130706433",
    "0x7f000001",
    "017700000001",
    "0177.0.0.1",
    "127.1",
    "0x7f.1",
    "127.0.0.1.",
    "%31%32%37.0.0.1",
    "2852039166",
    "0xa9fea9fe",
    "0251.0376.0251.0376",
    // Names.
    "localhost",
    "LOCALHOST.",
    "api.localhost",
    "canary.chaos.test",
    "private.chaos.test",
    "v6.chaos.test",
    "mixed.chaos.test",
];

/// Whole URLs refused at subscribe time: user-info and backslashes that parsers read
/// differently (one sees the public host, another the loopback one after the `@`), empty
/// user-info, and IPv4 embedded in IPv6 in forms not covered above (IPv4-translated
/// `::ffff:0:0/96`, NAT64 with a dotted tail). `{port}` is the canary's, so a request that gets
/// through would reach it.
const BLOCKED_URLS: &[&str] = &[
    r"https://8.8.8.8\@127.0.0.1:{port}/",
    r"https://8.8.8.8\\@127.0.0.1:{port}/",
    r"https://8.8.8.8%5C@127.0.0.1:{port}/",
    r"https://8.8.8.8%5c@127.0.0.1:{port}/",
    r"https://8.8.8.8\@localhost:{port}/",
    r"https://:@8.8.8.8/",
    r"https://user@8.8.8.8/",
    r"https://@8.8.8.8/",
    r"https://user:@8.8.8.8/",
    r"https://:pass@8.8.8.8/",
    r"https://public.chaos.test\@canary.chaos.test:{port}/",
    r"https://[::ffff:0:7f00:1]:{port}/",
    r"https://[::ffff:0:127.0.0.1]:{port}/",
    r"https://[::ffff:0:a00:1]/",
    r"https://[64:ff9b::127.0.0.1]:{port}/",
    r"https://[64:ff9b:1::7f00:1]:{port}/",
];

/// Targets written straight into the database, as if subscribed before a rule changed: the send
/// must refuse them too. `{port}` is the canary's.
const PLANTED: &[&str] = &[
    "https://127.0.0.1:{port}/planted",
    "https://[::1]:{port}/planted",
    "https://[::ffff:127.0.0.1]:{port}/planted",
    "https://localhost:{port}/planted",
    "https://canary.chaos.test:{port}/planted",
    "https://10.0.0.1:{port}/planted",
    "https://169.254.169.254/latest/meta-data/",
    "https://[fd00::1]:{port}/planted",
];

fn hosts_file(rebind_to: &str) -> String {
    format!(
        "127.0.0.1 localhost\n::1 localhost\n\
         127.0.0.1 canary.chaos.test\n\
         10.1.2.3 private.chaos.test\n\
         ::1 v6.chaos.test\n\
         {PUBLIC} mixed.chaos.test\n127.0.0.1 mixed.chaos.test\n\
         {PUBLIC} public.chaos.test\n\
         {rebind_to} rebind.chaos.test\n"
    )
}

/// The command prefix that runs the server with `hosts` over `/etc/hosts`.
fn in_own_mount_namespace(hosts: &Path) -> Vec<String> {
    let mut prefix = vec!["unshare".to_owned(), "--mount".to_owned()];
    if !nix::unistd::geteuid().is_root() {
        // Unprivileged: a user namespace in which the caller is root.
        prefix.push("--map-root-user".to_owned());
    }
    prefix.extend([
        "sh".to_owned(),
        "-c".to_owned(),
        r#"mount --bind "$0" /etc/hosts && exec "$@""#.to_owned(),
        hosts.to_string_lossy().into_owned(),
    ]);
    prefix
}

pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    let url = env.database("ssrf").await?;
    let canary = HttpsReceiver::start().await;
    let port = canary.addr().port();
    let hosts = env.dir.join("ssrf-hosts");
    std::fs::write(&hosts, hosts_file(PUBLIC))?;
    let prefix = in_own_mount_namespace(&hosts);
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    // Private targets stay forbidden; the canary's CA is trusted, so a request that got through
    // would even complete.
    let server = env
        .plain_serve(&url, "ssrf")?
        .unlimited()
        .env(
            "TIMETRACK_WEBHOOK_ROOT_CERTS",
            canary.ca_pem_path().to_string_lossy().into_owned(),
        )
        .env("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1s,1s,2s")
        .env("TIMETRACK_WEBHOOK_TIMEOUT", "3")
        .wrapped_in(&prefix)
        .start()
        .await
        .context("starting the server in a mount namespace of its own (needs `unshare`)")?;
    let account = env.account(&url, "Ssrf").await?;
    let subscribe = "/api/integrations/automation/webhooks/subscribe";

    // A control: a public name is accepted, so refusals below are about the address.
    let (status, _) = server
        .post(
            &account.key,
            subscribe,
            &json!({"url": format!("https://public.chaos.test:{port}/ok"), "events": ["CLIENT_CREATED"]}),
        )
        .await?;
    s.check_eq(
        "control: a name resolving to a public address is accepted",
        status,
        201,
    );

    let mut accepted = Vec::new();
    for host in BLOCKED_HOSTS {
        let target = format!("https://{host}:{port}/canary");
        let (status, body) = server
            .post(
                &account.key,
                subscribe,
                &json!({"url": target, "events": ["CLIENT_CREATED"]}),
            )
            .await?;
        if !refused_as_invalid_url(status, &body) {
            accepted.push(format!("{host}: {status} {body}"));
        }
    }
    s.figure("blocked URLs tried at subscribe", BLOCKED_HOSTS.len());
    s.check(
        format!(
            "all {} blocked hosts refused at subscribe with 400 Invalid URL format",
            BLOCKED_HOSTS.len()
        ),
        accepted.is_empty(),
        if accepted.is_empty() {
            "all refused".to_owned()
        } else {
            accepted.join("; ")
        },
    );

    let mut accepted = Vec::new();
    for pattern in BLOCKED_URLS {
        let target = pattern.replace("{port}", &port.to_string());
        let (status, body) = server
            .post(
                &account.key,
                subscribe,
                &json!({"url": target, "events": ["CLIENT_CREATED"]}),
            )
            .await?;
        if !refused_as_invalid_url(status, &body) {
            let answer = match body["error"].as_str() {
                Some(error) => format!("{status} {error:?}"),
                None if status == 201 => "201 subscribed".to_owned(),
                None => format!("{status} {body}"),
            };
            accepted.push(format!("{target} -> {answer}"));
        }
    }
    s.figure(
        "whole URLs (user-info, backslashes, embedded IPv4) tried at subscribe",
        BLOCKED_URLS.len(),
    );
    s.check(
        format!(
            "all {} URLs with user-info, backslashes or embedded IPv4 refused with 400 Invalid URL format",
            BLOCKED_URLS.len()
        ),
        accepted.is_empty(),
        if accepted.is_empty() {
            "all refused".to_owned()
        } else {
            format!("{} accepted or otherwise answered: {}", accepted.len(), accepted.join("; "))
        },
    );

    // DNS rebinding: public when subscribed, loopback when sent.
    let (rebound, _) = server
        .subscribe(
            &account.key,
            &format!("https://rebind.chaos.test:{port}/rebind"),
            &["CLIENT_CREATED"],
        )
        .await?;
    std::fs::write(&hosts, hosts_file("127.0.0.1"))?;

    // Subscriptions written straight into the database.
    let db = Db::connect(&url).await?;
    let planted: Vec<String> = PLANTED
        .iter()
        .map(|p| p.replace("{port}", &port.to_string()))
        .collect();
    for (i, target) in planted.iter().enumerate() {
        db.execute(&format!(
            "INSERT INTO webhook_subscriptions
               (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at)
             SELECT 'wh_planted{i:09}', workspace_id, user_id, id, '{target}', ARRAY['CLIENT_CREATED'],
                    'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', 'ACTIVE', now(), now()
             FROM api_keys WHERE user_id = '{}'",
            account.user_id
        ))
        .await?;
    }
    let (status, _) = server
        .post(&account.key, "/api/clients", &json!({"name": "Ssrf bait"}))
        .await?;
    s.check_eq("an event for every subscription", status, 201);
    say(&format!(
        "  {} planted subscriptions and one rebound name",
        planted.len()
    ));

    // Every delivery to a blocked target fails as `blocked_target`, attempt after attempt.
    let watched = format!("subscription_id LIKE 'wh_planted%' OR subscription_id = '{rebound}'");
    let expected = i64::try_from(planted.len() + 1)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let failed = loop {
        let failed = db
            .count(&format!(
                "SELECT count(*) FROM deliveries WHERE ({watched}) AND status = 'FAILED'"
            ))
            .await?;
        if failed >= expected || Instant::now() > deadline {
            break failed;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let blocked = db
        .count(&format!(
            "SELECT count(*) FROM deliveries WHERE ({watched}) AND last_error LIKE 'blocked_target%'"
        ))
        .await?;
    let attempts = db
        .count(&format!(
            "SELECT count(*) FROM delivery_attempts a
             JOIN (SELECT id FROM deliveries WHERE ({watched})) d ON d.id = a.delivery_id"
        ))
        .await?;
    let with_status = db
        .count(&format!(
            "SELECT count(*) FROM delivery_attempts a
             JOIN (SELECT id FROM deliveries WHERE ({watched})) d ON d.id = a.delivery_id
             WHERE a.status_code IS NOT NULL"
        ))
        .await?;
    s.figure(
        "send-time targets (planted + rebound)",
        format!("{expected}: {}", planted.join(", ")),
    );
    s.figure("send attempts refused", attempts);
    s.check(
        "every send to a blocked target is refused as blocked_target, retried, then FAILED",
        failed == expected && blocked == expected && with_status == 0,
        format!("{failed} FAILED, {blocked} blocked_target of {expected}; {with_status} attempts got a status"),
    );
    check_canary_untouched(s, &canary);
    s.figure("canary connections", canary.accepts());
    Ok(())
}

/// 400 with the published message `Invalid URL format` (and a `detail` saying which rule).
fn refused_as_invalid_url(status: u16, body: &serde_json::Value) -> bool {
    status == 400 && body["error"] == "Invalid URL format"
}
