//! The reports workload: a workspace of 50 members and (full size) 1,000,000 priced entries over
//! two years, and through the API: a month's summary by project and day, answered many times
//! one after another (p50, p99); a year's summary; a year's detailed CSV streamed whole (rows a
//! second, and how much the server's resident memory grows meanwhile); a client rate that
//! reaches a tenth of the entries, tried with `dry_run` and then added (and removed again), with
//! a `VACUUM` of the entries after each run.
//!
//! Beside each, the machine's own limit: the same summary statement executed directly on a
//! connection of the tool's, the bare scan of the period's entries (a count and a sum, nothing
//! else), and a plain `UPDATE` of the rows the rate change writes, rolled back; and the plans.
//!
//! Then invoices on the same data, after a `VACUUM` of the entries (the rate part's dead row
//! versions cleaned up, as autovacuum does soon after): one client's billable entries from
//! January 2026 on, as many as make 10,000 at full size, grouped by project and task: the
//! preview, the create (its draft deleted again after each run, which releases the entries), the
//! invoice's PDF one at a time, and eight PDFs at once while the server's resident memory is
//! sampled.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;
use timetrack_adapters::postgres::{FOR_ONE_AGGREGATE, ReportSource, summary_statement};
use timetrack_domain::model::GroupKey;
use uuid::Uuid;

use crate::setup::{Environment, Server, connect};
use crate::stats::{Latencies, Repeated};
use crate::{Sizes, progress};

/// The dataset, with `$1` (the workspace) and `$2` (the number of entries) written in.
const SEED: &str = include_str!("sql/report_seed.sql");

/// The month and the year measured (the year is the longest range a report takes).
const MONTH: (&str, &str) = ("2026-03-01", "2026-03-31");
const YEAR: (&str, &str) = ("2025-07-01", "2026-06-30");
/// The workspace's zone, as seeded.
const ZONE: &str = "Europe/Berlin";

/// What the workload measured.
#[derive(Debug, Clone, Default)]
pub struct Reports {
    pub entries: usize,
    pub month_entries: i64,
    pub year_entries: i64,
    /// The month's summary through the API, one request after another (ms).
    pub month: Latencies,
    /// The same statement executed directly, and the bare scan of the month (ms, medians).
    pub month_direct: Repeated,
    pub month_scan: Repeated,
    /// The summary's statement summed from the entries instead of the day totals (ms).
    pub month_from_entries: Repeated,
    pub year_from_entries: Repeated,
    /// The day totals' buckets of the month and of the year.
    pub month_buckets: i64,
    pub year_buckets: i64,
    /// The year's summary through the API, directly, and the bare scan (ms).
    pub year: Repeated,
    pub year_direct: Repeated,
    pub year_scan: Repeated,
    /// The year's detailed CSV: its rows, rows a second, and the server's RSS growth (MB).
    pub csv_rows: usize,
    pub csv_rows_per_second: Repeated,
    pub csv_rss_growth_mb: Repeated,
    /// The client rate: entries it reaches and re-prices, the dry run, the change and its
    /// removal (ms), and a plain UPDATE of the rows the change writes (ms).
    pub rate_reach: i64,
    pub rate_affected: u64,
    pub dry_run: Repeated,
    pub change: Repeated,
    pub removal: Repeated,
    pub plain_update: Repeated,
    /// The invoice: the entries it bills and its lines; preview, create and the draft's deletion
    /// (ms); its PDF rendered one at a time (ms) and its size (KB); eight at once (ms for all)
    /// and the server's RSS growth meanwhile (MB).
    pub invoice_entries: usize,
    pub invoice_lines: usize,
    pub invoice_to: String,
    pub preview: Repeated,
    pub create: Repeated,
    pub draft_delete: Repeated,
    pub pdf: Repeated,
    pub pdf_kb: f64,
    pub pdf_eight: Repeated,
    pub pdf_rss_growth_mb: Repeated,
    /// Plans: the month's and the year's summary statements.
    pub plans: Vec<(&'static str, String)>,
    /// Checks that failed (the seed's prices differ from the service's rule, a wrong answer).
    pub failures: Vec<String>,
}

/// The workspace of a dataset of `entries` (sizes are in the id, so datasets never mix; the
/// second group is the seed's version, so a changed seed is seeded afresh).
pub(crate) fn workspace_id(entries: usize) -> Uuid {
    Uuid::from_u128(0x7e50_0002_0000_4000_8000_0000_0000_0000 | entries as u128)
}

/// A new key of the owner of the dataset's workspace.
pub(crate) async fn owner_key(env: &Environment, workspace: Uuid) -> Result<String> {
    let (client, driver) = connect(&env.database_url).await?;
    let owner: String = client
        .query_one(
            "SELECT user_id::text FROM memberships WHERE workspace_id = $1::text::uuid \
             AND role = 'owner'",
            &[&workspace.to_string()],
        )
        .await?
        .get(0);
    drop(client);
    driver.abort();
    env.key_for(&workspace.to_string(), &owner).await
}

/// Runs the workload.
pub async fn measure(env: &Environment, server: &Server, sizes: Sizes) -> Result<Reports> {
    let entries = sizes.report_entries;
    let workspace = workspace_id(entries);
    seed(env, workspace, entries).await?;
    let mut out = Reports {
        entries,
        ..Reports::default()
    };
    let (client, driver) = connect(&env.database_url).await?;
    let id_of = |sql: &'static str| {
        let client = client.clone();
        async move {
            let row = client.query_one(sql, &[&workspace.to_string()]).await?;
            anyhow::Ok(row.get::<_, String>(0))
        }
    };
    let owner_id = id_of(
        "SELECT user_id::text FROM memberships WHERE workspace_id = $1::text::uuid \
         AND role = 'owner'",
    )
    .await?;
    let client_3 = id_of(
        "SELECT id::text FROM clients WHERE workspace_id = $1::text::uuid AND name = 'Client 3'",
    )
    .await?;
    let owner = env.key_for(&workspace.to_string(), &owner_id).await?;

    // The seed's prices are the ones the service's rule gives (so the rate change below moves
    // what it would in use).
    let mispriced: i64 = client
        .query_one(
            "SELECT count(*) FROM timetrack_code.entry_prices($1::text::uuid)",
            &[&workspace.to_string()],
        )
        .await?
        .get(0);
    if mispriced != 0 {
        out.failures.push(format!(
            "reports: {mispriced} seeded entries are priced otherwise than the service would"
        ));
    }

    let http = reqwest::Client::new();
    let get = |path: String| {
        let http = http.clone();
        let url = format!("{}{path}", server.base);
        let key = owner.clone();
        async move {
            let started = Instant::now();
            let res = http.get(url).bearer_auth(key).send().await?;
            let status = res.status().as_u16();
            let body: serde_json::Value = res.json().await.unwrap_or_default();
            anyhow::Ok((status, body, started.elapsed()))
        }
    };
    let summary = |(from, to): (&str, &str)| {
        format!("/api/reports/summary?from={from}&to={to}&group_by=project,day")
    };

    // The month: many requests, one after another, after a few to warm up.
    for _ in 0..3 {
        get(summary(MONTH)).await?;
    }
    for _ in 0..sizes.report_month_requests {
        let (status, body, took) = get(summary(MONTH)).await?;
        if status != 200 {
            bail!("the month's summary answered {status}: {body}");
        }
        out.month_entries = body["totals"]["entries"].as_i64().unwrap_or_default();
        out.month.push(took);
    }
    for _ in 0..sizes.runs.max(3) {
        let (status, body, took) = get(summary(YEAR)).await?;
        if status != 200 {
            bail!("the year's summary answered {status}: {body}");
        }
        out.year_entries = body["totals"]["entries"].as_i64().unwrap_or_default();
        out.year.push(took.as_secs_f64() * 1_000.0);
    }
    progress(&format!(
        "reports: month summary p50 {:.1} ms p99 {:.1} ms ({} entries); year {:.0} ms ({} entries)",
        out.month.percentile(50.0),
        out.month.percentile(99.0),
        out.month_entries,
        out.year.median(),
        out.year_entries
    ));

    // The same statement, directly, in a transaction with the settings the service gives it:
    // from the day totals, as the service runs it for the owner, and from the entries, as it
    // would without them; both must answer the same rows.
    let keys = [GroupKey::Project, GroupKey::Day];
    for (name, source) in [
        ("report_summary", ReportSource::DayTotals),
        ("report_summary_entries", ReportSource::Entries),
    ] {
        let statement = summary_statement(source, &keys);
        client
            .batch_execute(&format!(
                "PREPARE {name}(uuid, text, date, date, uuid[], uuid[], uuid[], uuid[], \
                 uuid[], boolean, boolean, integer, text) AS {statement}"
            ))
            .await?;
    }
    let run = |name: &str, (from, to): (&str, &str)| {
        format!(
            "BEGIN; {FOR_ONE_AGGREGATE}; \
             EXECUTE {name}('{workspace}', '{ZONE}', '{from}', '{to}', '{{}}', '{{}}', \
             '{{}}', '{{}}', '{{}}', NULL, NULL, 0, 'nearest'); COMMIT"
        )
    };
    let execute = |period: (&str, &str)| run("report_summary", period);
    let from_entries = |period: (&str, &str)| run("report_summary_entries", period);
    for period in [MONTH, YEAR] {
        let rows = |sql: String| {
            let client = client.clone();
            async move {
                let mut rows: Vec<Vec<Option<String>>> = Vec::new();
                for message in client.simple_query(&sql).await? {
                    if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                        rows.push(
                            (0..row.len())
                                .map(|i| row.get(i).map(str::to_owned))
                                .collect(),
                        );
                    }
                }
                rows.sort();
                anyhow::Ok(rows)
            }
        };
        if rows(execute(period)).await? != rows(from_entries(period)).await? {
            out.failures.push(format!(
                "reports: the summary of {} to {} from the day totals differs from the one \
                 from the entries",
                period.0, period.1
            ));
        }
    }
    let buckets = |(from, to): (&'static str, &'static str)| {
        let client = client.clone();
        async move {
            let row = client
                .query_one(
                    "SELECT count(*) FROM report_day_totals WHERE workspace_id = $1::text::uuid \
                     AND day BETWEEN $2::text::date AND $3::text::date",
                    &[&workspace.to_string(), &from, &to],
                )
                .await?;
            anyhow::Ok(row.get::<_, i64>(0))
        }
    };
    out.month_buckets = buckets(MONTH).await?;
    out.year_buckets = buckets(YEAR).await?;
    let scan = |(from, to): (&str, &str)| {
        format!(
            "SELECT count(*), sum(date_part('epoch', end_at - start_at)::bigint) \
             FROM time_entries WHERE workspace_id = '{workspace}' \
             AND start_at >= ('{from}'::date::timestamp AT TIME ZONE '{ZONE}') \
             AND start_at < (('{to}'::date + 1)::timestamp AT TIME ZONE '{ZONE}') \
             AND end_at IS NOT NULL"
        )
    };
    let timed = |sql: String| {
        let client = client.clone();
        async move {
            let started = Instant::now();
            client.batch_execute(&sql).await?;
            anyhow::Ok(started.elapsed().as_secs_f64() * 1_000.0)
        }
    };
    for _ in 0..sizes.runs.max(3) {
        out.month_direct.push(timed(execute(MONTH)).await?);
        out.month_from_entries
            .push(timed(from_entries(MONTH)).await?);
        out.month_scan.push(timed(scan(MONTH)).await?);
        out.year_direct.push(timed(execute(YEAR)).await?);
        out.year_from_entries.push(timed(from_entries(YEAR)).await?);
        out.year_scan.push(timed(scan(YEAR)).await?);
    }
    for (name, period) in [("month", MONTH), ("year", YEAR)] {
        let explain = execute(period).replace(
            "EXECUTE report_summary",
            "EXPLAIN (ANALYZE, BUFFERS) EXECUTE report_summary",
        );
        let mut plan = String::new();
        for message in client.simple_query(&explain).await? {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                plan.push_str(row.get(0).unwrap_or_default());
                plan.push('\n');
            }
        }
        out.plans.push((name, plan));
    }

    // The year's detailed CSV, streamed whole, the server's memory sampled meanwhile.
    for _ in 0..sizes.runs {
        let before = server.memory()?.rss_kb;
        let started = Instant::now();
        let mut res = http
            .get(format!(
                "{}/api/reports/detailed?from={}&to={}&format=csv",
                server.base, YEAR.0, YEAR.1
            ))
            .bearer_auth(&owner)
            .send()
            .await?;
        if res.status().as_u16() != 200 {
            bail!("the year's CSV answered {}", res.status());
        }
        let mut lines = 0usize;
        let mut highest = before;
        let mut sampled = Instant::now();
        while let Some(chunk) = res.chunk().await? {
            lines += chunk.iter().filter(|b| **b == b'\n').count();
            if sampled.elapsed() >= Duration::from_millis(50) {
                highest = highest.max(server.memory()?.rss_kb);
                sampled = Instant::now();
            }
        }
        let took = started.elapsed().as_secs_f64();
        highest = highest.max(server.memory()?.rss_kb);
        out.csv_rows = lines.saturating_sub(1);
        if i64::try_from(out.csv_rows).ok() != Some(out.year_entries) {
            out.failures.push(format!(
                "reports: the year's CSV has {} rows, its summary {} entries",
                out.csv_rows, out.year_entries
            ));
        }
        out.csv_rows_per_second.push(out.csv_rows as f64 / took);
        out.csv_rss_growth_mb
            .push(highest.saturating_sub(before) as f64 / 1_024.0);
    }
    progress(&format!(
        "reports: year CSV {} rows at {:.0} rows/s, RSS +{:.1} MB",
        out.csv_rows,
        out.csv_rows_per_second.median(),
        out.csv_rss_growth_mb.median()
    ));

    // A client rate reaching a tenth of the entries (client 3: projects 2, 12, 22 and 32).
    out.rate_reach = client
        .query_one(
            "SELECT count(*) FROM time_entries e JOIN projects p ON p.id = e.project_id \
             WHERE e.workspace_id = $1::text::uuid AND p.client_id = $2::text::uuid",
            &[&workspace.to_string(), &client_3],
        )
        .await?
        .get(0);
    let post = |dry_run: bool| {
        let http = http.clone();
        let url = format!("{}/api/rates", server.base);
        let key = owner.clone();
        let body = json!({"kind": "billable", "scope": "client", "client_id": client_3,
            "currency": "EUR", "hourly_minor": 15_000, "effective_from": "2024-12-31",
            "dry_run": dry_run});
        async move {
            let started = Instant::now();
            let res = http.post(url).bearer_auth(key).json(&body).send().await?;
            let status = res.status().as_u16();
            let body: serde_json::Value = res.json().await.unwrap_or_default();
            anyhow::Ok((status, body, started.elapsed().as_secs_f64() * 1_000.0))
        }
    };
    for _ in 0..sizes.runs {
        let (status, tried, took) = post(true).await?;
        if status != 200 {
            bail!("the dry run answered {status}: {tried}");
        }
        out.dry_run.push(took);
        let (status, rate, took) = post(false).await?;
        if status != 201 {
            bail!("the rate answered {status}: {rate}");
        }
        out.change.push(took);
        let id = rate["id"].as_str().context("no rate id")?.to_owned();
        let affected = tried["affected_entries"].as_u64().unwrap_or_default();
        out.rate_affected = affected;
        let started = Instant::now();
        let res = http
            .delete(format!("{}/api/rates/{id}", server.base))
            .bearer_auth(&owner)
            .send()
            .await?;
        if !res.status().is_success() {
            bail!("removing the rate answered {}", res.status());
        }
        out.removal.push(started.elapsed().as_secs_f64() * 1_000.0);
        // The machine's own cost of writing those rows: the same rows, one column, rolled back.
        out.plain_update.push(
            timed(format!(
                "BEGIN; UPDATE time_entries e SET billable_rate_minor = 15000 \
                 FROM projects p WHERE p.id = e.project_id AND e.workspace_id = '{workspace}' \
                 AND p.client_id = '{client_3}' AND e.billable; ROLLBACK"
            ))
            .await?,
        );
        // That reference leaves 80,000 aborted row versions, and the run's change and removal
        // 160,000 dead ones, on every page holding the client's entries: the next run's dry run
        // would prune them as it reads, writing a full-page image of each page (the first change
        // after a checkpoint does). Between one admin's rate changes, reads of the entries
        // (reports, exports) prune them first; here nothing else reads them, so clean up.
        client.batch_execute("VACUUM time_entries").await?;
    }
    if out.rate_affected == 0 {
        out.failures
            .push("reports: the client rate's dry run changed no entry".to_owned());
    }
    progress(&format!(
        "reports: rate over {} entries ({} re-priced): dry run {:.0} ms, change {:.0} ms, \
         removal {:.0} ms; plain UPDATE {:.0} ms",
        out.rate_reach,
        out.rate_affected,
        out.dry_run.median(),
        out.change.median(),
        out.removal.median(),
        out.plain_update.median()
    ));
    invoices(
        &mut out, server, &http, &owner, &client, workspace, &client_3, sizes,
    )
    .await?;
    drop(client);
    driver.abort();
    Ok(out)
}

/// The invoices part (see the module's header).
#[allow(clippy::too_many_arguments)]
async fn invoices(
    out: &mut Reports,
    server: &Server,
    http: &reqwest::Client,
    owner: &str,
    client: &tokio_postgres::Client,
    workspace: Uuid,
    client_3: &str,
    sizes: Sizes,
) -> Result<()> {
    // The last day that keeps the invoice at 10,000 entries at most (all of them, when fewer).
    let to: String = client
        .query_opt(
            "SELECT ((e.start_at AT TIME ZONE 'Europe/Berlin')::date - 1)::text              FROM time_entries e JOIN projects p ON p.id = e.project_id              WHERE e.workspace_id = $1::text::uuid AND p.client_id = $2::text::uuid                AND e.billable AND e.start_at >= '2026-01-01'              ORDER BY e.start_at OFFSET 10000 LIMIT 1",
            &[&workspace.to_string(), &client_3],
        )
        .await?
        .map_or_else(|| "2026-12-31".to_owned(), |row| row.get(0));
    out.invoice_to = to.clone();
    let body = json!({"client_id": client_3, "from": "2026-01-01", "to": to,
        "group_by": ["project", "task"], "tax_percent": 19});
    let post = |path: &'static str| {
        let url = format!("{}{path}", server.base);
        let request = http.post(url).bearer_auth(owner).json(&body);
        async move {
            let started = Instant::now();
            let res = request.send().await?;
            let status = res.status().as_u16();
            let body: serde_json::Value = res.json().await.unwrap_or_default();
            anyhow::Ok((status, body, started.elapsed().as_secs_f64() * 1_000.0))
        }
    };
    let pdf = |id: String| {
        let request = http
            .get(format!("{}/api/invoices/{id}?format=pdf", server.base))
            .bearer_auth(owner);
        async move {
            let started = Instant::now();
            let res = request.send().await?;
            if res.status().as_u16() != 200 {
                bail!("the invoice's PDF answered {}", res.status());
            }
            let bytes = res.bytes().await?;
            anyhow::Ok((bytes.len(), started.elapsed().as_secs_f64() * 1_000.0))
        }
    };
    // The rate part just wrote and removed hundreds of thousands of row versions; autovacuum,
    // past its threshold, cleans them up within a minute or so. Start from that state, so the
    // invoice's figures are its own work and not the rate part's leftovers.
    client.batch_execute("VACUUM ANALYZE time_entries").await?;
    for run in 0..sizes.runs.max(3) {
        let (status, preview, took) = post("/api/invoices/preview").await?;
        if status != 200 {
            bail!("the invoice preview answered {status}: {preview}");
        }
        out.preview.push(took);
        let (status, draft, took) = post("/api/invoices").await?;
        if status != 201 {
            bail!("the invoice create answered {status}: {draft}");
        }
        out.create.push(took);
        let billed = |v: &serde_json::Value| -> usize {
            v["lines"].as_array().map_or(0, |lines| {
                lines
                    .iter()
                    .map(|l| l["entry_ids"].as_array().map_or(0, Vec::len))
                    .sum()
            })
        };
        out.invoice_entries = billed(&draft);
        out.invoice_lines = draft["lines"].as_array().map_or(0, Vec::len);
        if billed(&preview) != out.invoice_entries || preview["total_minor"] != draft["total_minor"]
        {
            out.failures
                .push("invoices: the create billed otherwise than its preview".to_owned());
        }
        let id = draft["id"].as_str().context("no invoice id")?.to_owned();
        if run == 0 {
            for _ in 0..sizes.runs.max(5) {
                let (size, took) = pdf(id.clone()).await?;
                out.pdf_kb = size as f64 / 1_024.0;
                out.pdf.push(took);
            }
            for _ in 0..sizes.runs.max(3) {
                let before = server.memory()?.rss_kb;
                let started = Instant::now();
                let eight = futures_util::future::join_all((0..8).map(|_| pdf(id.clone())));
                tokio::pin!(eight);
                let mut highest = before;
                let results = loop {
                    tokio::select! {
                        results = &mut eight => break results,
                        () = tokio::time::sleep(Duration::from_millis(20)) => {
                            highest = highest.max(server.memory()?.rss_kb);
                        }
                    }
                };
                for result in results {
                    result?;
                }
                out.pdf_eight
                    .push(started.elapsed().as_secs_f64() * 1_000.0);
                highest = highest.max(server.memory()?.rss_kb);
                out.pdf_rss_growth_mb
                    .push(highest.saturating_sub(before) as f64 / 1_024.0);
            }
        }
        let started = Instant::now();
        let res = http
            .delete(format!("{}/api/invoices/{id}", server.base))
            .bearer_auth(owner)
            .send()
            .await?;
        if !res.status().is_success() {
            bail!("deleting the draft answered {}", res.status());
        }
        out.draft_delete
            .push(started.elapsed().as_secs_f64() * 1_000.0);
    }
    progress(&format!(
        "invoices: {} entries in {} lines: preview {:.0} ms, create {:.0} ms, delete {:.0} ms; \
         PDF {:.0} ms ({:.0} KB), eight at once {:.0} ms, RSS +{:.1} MB",
        out.invoice_entries,
        out.invoice_lines,
        out.preview.median(),
        out.create.median(),
        out.draft_delete.median(),
        out.pdf.median(),
        out.pdf_kb,
        out.pdf_eight.median(),
        out.pdf_rss_growth_mb.median()
    ));
    Ok(())
}

/// Creates the dataset unless it is already there.
pub(crate) async fn seed(env: &Environment, workspace: Uuid, entries: usize) -> Result<()> {
    let (client, driver) = connect(&env.database_url).await?;
    // The workspace is named after the seed's text, so a dataset of an older seed is made again.
    let version: String = client
        .query_one("SELECT left(md5($1), 12)", &[&SEED])
        .await?
        .get(0);
    let present: i64 = client
        .query_one(
            "SELECT count(*) FROM time_entries e JOIN workspaces w ON w.id = e.workspace_id \
             WHERE e.workspace_id = $1::text::uuid AND w.name = 'Reports bench ' || $2",
            &[&workspace.to_string(), &version],
        )
        .await?
        .get(0);
    if usize::try_from(present).ok() == Some(entries) {
        progress("reports dataset already present");
    } else {
        progress(&format!(
            "seeding the reports dataset: {entries} entries (once; kept for later runs)"
        ));
        let started = Instant::now();
        let id = format!("'{workspace}'::uuid");
        client
            .batch_execute(&format!(
                "DELETE FROM time_entries WHERE workspace_id = {id}; \
                 DELETE FROM rates WHERE workspace_id = {id}; \
                 DELETE FROM tasks WHERE workspace_id = {id}; \
                 DELETE FROM projects WHERE workspace_id = {id}; \
                 DELETE FROM workspaces WHERE id = {id};"
            ))
            .await
            .context("clearing a partial dataset")?;
        let sql = SEED
            .replace("$1", &id)
            .replace("$2", &entries.to_string())
            .replace("$3", &version);
        client.batch_execute(&sql).await.context("seeding")?;
        client
            .batch_execute("VACUUM ANALYZE time_entries, time_entry_tags, report_day_totals")
            .await?;
        progress(&format!(
            "reports dataset seeded in {:.0} s",
            started.elapsed().as_secs_f64()
        ));
    }
    drop(client);
    driver.abort();
    Ok(())
}
