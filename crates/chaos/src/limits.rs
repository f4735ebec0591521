//! Rate limits under load: three instances share the PostgreSQL store and together admit no more
//! than the limit, and clients that honour `Retry-After` all get through.

use std::time::{Duration, Instant};

use anyhow::Result;
use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::env::Env;
use crate::scenario::{Scenario, say};

/// One answer: status, `Retry-After` in seconds, whether the rate-limit headers were there, body.
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    headers: bool,
    body: Value,
}

async fn call(http: &reqwest::Client, base: &str, key: &str) -> Answer {
    match http
        .get(format!("{base}/api/me"))
        .bearer_auth(key)
        .send()
        .await
    {
        Ok(res) => {
            let header = |name: &str| {
                res.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let retry_after = header("retry-after").and_then(|v| v.parse().ok());
            let headers = header("x-ratelimit-limit").is_some()
                && header("x-ratelimit-remaining").is_some()
                && header("x-ratelimit-reset").is_some();
            let status = res.status().as_u16();
            Answer {
                status,
                retry_after,
                headers,
                body: res.json().await.unwrap_or(Value::Null),
            }
        }
        Err(_) => Answer {
            status: 0,
            retry_after: None,
            headers: false,
            body: Value::Null,
        },
    }
}

pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    // (per second, per minute, the burst, clients that wait, paced requests after them)
    let (per_second, per_minute, burst, patient, paced): (usize, usize, usize, usize, usize) =
        if env.quick {
            (5, 30, 30, 20, 20)
        } else {
            (10, 100, 300, 60, 60)
        };
    let url = env.database("limits").await?;
    let mut servers = Vec::new();
    for i in 0..3 {
        servers.push(
            env.plain_serve(&url, &format!("limits-{i}"))?
                .env("TIMETRACK_RATE_LIMIT_STORE", "postgres")
                .env("TIMETRACK_RATE_LIMIT_PER_SECOND", per_second.to_string())
                .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", per_minute.to_string())
                .start()
                .await?,
        );
    }
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let account = env.account(&url, "Limits").await?;
    let key = account.key.as_str();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(512)
        .build()?;
    let window_start = Instant::now();

    // A. A burst spread over the three instances at once.
    let answers = join_all((0..burst).map(|i| call(&http, &bases[i % 3], key))).await;
    let admitted = answers.iter().filter(|a| a.status == 200).count();
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 429).collect();
    s.figure(
        "limits",
        format!("{per_second} per second, {per_minute} per minute, per key"),
    );
    s.figure(
        "A. burst over 3 instances: sent / admitted / 429",
        format!("{burst} / {admitted} / {}", refused.len()),
    );
    // The shared count's own times: the most admissions in any one second (the limit's window,
    // as the store counts it), and how long the burst took there. A burst that took the
    // instances more than a second (a loaded machine) may admit more than the per-second limit
    // in all, never more in one second.
    let db = crate::env::Db::connect(&url).await?;
    let counted = db
        .count("SELECT count(*) FROM rate_limit_hits WHERE key LIKE 'key:%'")
        .await?;
    let busiest = db
        .count(
            "SELECT coalesce(max(n), 0) FROM (SELECT count(*) OVER (ORDER BY at RANGE BETWEEN \
             CURRENT ROW AND INTERVAL '999999 microseconds' FOLLOWING) AS n \
             FROM rate_limit_hits WHERE key LIKE 'key:%') AS w",
        )
        .await?;
    let span_ms = db
        .count(
            "SELECT coalesce((extract(epoch FROM max(at) - min(at)) * 1000)::bigint, 0) \
             FROM rate_limit_hits WHERE key LIKE 'key:%'",
        )
        .await?;
    s.check(
        format!(
            "a burst of {burst} over three instances admits at most {per_second} in any one \
             second"
        ),
        admitted > 0
            && usize::try_from(busiest).is_ok_and(|n| n <= per_second)
            && usize::try_from(counted).is_ok_and(|n| n == admitted)
            && admitted + refused.len() == burst,
        format!(
            "{admitted} admitted ({counted} counted, at most {busiest} in one second, over \
             {span_ms} ms), {} refused",
            refused.len()
        ),
    );
    s.check(
        "every 429 is {\"error\":\"Too many requests\"} with Retry-After and the rate-limit headers",
        refused.iter().all(|a| {
            a.body == json!({"error": "Too many requests"})
                && a.retry_after.is_some_and(|r| (1..=60).contains(&r))
                && a.headers
        }),
        format!("{} refusals", refused.len()),
    );

    // B. Clients that honour Retry-After, spread over the instances: all get through.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    let outcomes = join_all((0..patient).map(|i| {
        let (http, base) = (http.clone(), bases[i % 3].clone());
        async move {
            let deadline = Instant::now() + Duration::from_secs(90);
            let mut tries = 0;
            loop {
                tries += 1;
                let answer = call(&http, &base, key).await;
                match (answer.status, answer.retry_after) {
                    (200, _) => return (true, tries),
                    (429, Some(wait)) if Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_secs(wait)).await;
                    }
                    _ => return (false, tries),
                }
            }
        }
    }))
    .await;
    let succeeded = outcomes.iter().filter(|(ok, _)| *ok).count();
    let tries: usize = outcomes.iter().map(|(_, t)| t).sum();
    let took = started.elapsed().as_secs_f64();
    s.figure(
        "B. clients honouring Retry-After: succeeded / requests / time",
        format!("{succeeded} of {patient} / {tries} / {took:.1} s"),
    );
    s.check_eq(
        "every client that honours Retry-After gets through",
        succeeded,
        patient,
    );
    // At most `per_second` a second: so many clients cannot all have passed in less time.
    let floor = (patient / per_second).saturating_sub(1) as f64;
    s.check(
        "they were spread out by the per-second limit",
        took >= floor,
        format!("{took:.1} s for {patient} at {per_second}/s"),
    );

    // C. Requests paced under the per-second limit until the minute's budget is spent.
    let used = admitted + patient;
    let left = per_minute.saturating_sub(used);
    let mut paced_admitted = 0;
    let mut last_retry = None;
    let pace = Duration::from_millis(1000 / per_second as u64 + 50);
    for i in 0..paced {
        let answer = call(&http, &bases[i % 3], key).await;
        if answer.status == 200 {
            paced_admitted += 1;
        } else if answer.status == 429 {
            last_retry = answer.retry_after;
        }
        tokio::time::sleep(pace).await;
    }
    let in_window = window_start.elapsed();
    say(&format!(
        "  paced: {paced_admitted} of {paced} admitted, {left} left in the minute"
    ));
    s.figure(
        "C. paced under the per-second limit: sent / admitted / minute's budget left",
        format!("{paced} / {paced_admitted} / {left}"),
    );
    s.check(
        format!(
            "across the three instances at most {per_minute} admitted in the minute ({:.0} s so far)",
            in_window.as_secs_f64()
        ),
        // Some of the paced requests pass while the minute has budget left; none when the
        // burst spanned two seconds and, with the waiting clients, spent it all.
        in_window < Duration::from_secs(60)
            && paced_admitted <= left
            && (paced_admitted > 0 || left == 0),
        format!(
            "{} admitted in all (burst {admitted}, waiting clients {patient}, paced {paced_admitted})",
            used + paced_admitted
        ),
    );
    s.check(
        "once the minute is spent, Retry-After points past the next second",
        last_retry.is_some_and(|r| r > 1),
        format!("{last_retry:?} s"),
    );
    Ok(())
}
