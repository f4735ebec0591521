//! Client search: a seeded dataset of small workspaces plus one big one, queries of 1, 2, 3 and 8
//! characters (hits and misses) at several concurrencies, through the API and directly through a
//! pool calling the same repository method, and the plan of the query on the big workspace.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use timetrack_adapters::postgres::{DeliveryAnnouncer, PgClientRepository, SEARCH_SQL};
use timetrack_domain::ids::WorkspaceId;
use timetrack_domain::ports::ClientRepository;
use uuid::Uuid;

use crate::cpu::{CpuPerRequest, CpuSample};
use crate::lean::LeanPost;
use crate::setup::connect;
use crate::setup::{Environment, Server};
use crate::stats::{Latencies, Repeated};
use crate::{Options, Sizes, progress};

/// The generator's seed: the same dataset every time.
const SEED: u64 = 20_261_122;
/// Concurrencies measured.
pub const CONCURRENCY: [usize; 3] = [1, 8, 32];
/// Queries: characters, text, and whether the dataset holds it. The vocabulary has no `z` or `q`,
/// so the misses match nothing.
pub const QUERIES: [(usize, &str, bool); 8] = [
    (1, "a", true),
    (2, "lo", true),
    (3, "log", true),
    (8, "logistic", true),
    (1, "z", false),
    (2, "zq", false),
    (3, "zqz", false),
    (8, "zqzqzqzq", false),
];

const PREFIXES: &[&str] = &[
    "Acme",
    "Northwind",
    "Globe",
    "Summit",
    "Pioneer",
    "Blue River",
    "Silver Oak",
    "Redwood",
    "Evergreen",
    "Atlas",
    "Beacon",
    "Cobalt",
    "Crescent",
    "Delta",
    "Eagle",
    "Falcon",
    "Granite",
    "Harbor",
    "Iron",
    "Juniper",
    "Keystone",
    "Lakeside",
    "Liberty",
    "Maple",
    "Meridian",
    "Nova",
    "Oakland",
    "Orchard",
    "Pacific",
    "Paragon",
    "Pinnacle",
    "Prairie",
    "Riverside",
    "Sierra",
    "Sterling",
    "Stone",
    "Sunrise",
    "Titan",
    "Union",
    "Valley",
    "Vanguard",
    "Vista",
    "Westfield",
    "Willow",
    "Bright",
    "Cedar",
    "Clear",
    "Copper",
    "Golden",
    "Highland",
    "Lighthouse",
    "Main Street",
    "Metro",
    "Mountain",
    "Park",
    "Royal",
    "Silver",
    "Spring",
    "United",
    "Central",
    "Coastal",
    "Diamond",
    "Emerald",
    "First",
    "Frontier",
    "Harvest",
    "Heritage",
    "Landmark",
    "Legacy",
    "Lotus",
    "Mosaic",
    "Noble",
    "Olympic",
    "Patriot",
    "Premier",
    "Radiant",
    "Rock",
    "Sage",
    "Solid",
    "Swift",
    "Trinity",
    "True North",
    "Urban",
    "Venture",
    "Wild",
    "Wolf",
];
const INDUSTRIES: &[&str] = &[
    "Logistics",
    "Consulting",
    "Design",
    "Media",
    "Software",
    "Analytics",
    "Bakery",
    "Builders",
    "Capital",
    "Catering",
    "Clinic",
    "Construction",
    "Dental",
    "Electric",
    "Energy",
    "Engineering",
    "Farms",
    "Fitness",
    "Foods",
    "Freight",
    "Furniture",
    "Graphics",
    "Health",
    "Holdings",
    "Hotels",
    "Imaging",
    "Insurance",
    "Interiors",
    "Labs",
    "Landscaping",
    "Law",
    "Legal",
    "Marketing",
    "Motors",
    "Networks",
    "Optics",
    "Partners",
    "Pharma",
    "Plumbing",
    "Printing",
    "Properties",
    "Publishing",
    "Realty",
    "Robotics",
    "Security",
    "Solutions",
    "Studio",
    "Supply",
    "Systems",
    "Technologies",
    "Tools",
    "Travel",
    "Ventures",
    "Wellness",
    "Works",
];
const CITIES: &[&str] = &[
    "Berlin", "Paris", "Lyon", "Austin", "Denver", "Boston", "Leeds", "Dublin", "Oslo", "Porto",
    "Milan", "Seattle", "Toronto", "Madrid", "Vienna", "Lisbon", "Munich", "Hamburg", "Chicago",
    "Atlanta", "Houston", "Portland", "Geneva", "Utrecht", "Nantes", "Bristol", "Glasgow",
    "Cardiff", "Ghent", "Bergen",
];
const SUFFIXES: &[&str] = &[
    "Inc", "LLC", "Ltd", "GmbH", "SARL", "BV", "AG", "Co", "Group", "& Sons", "Corp", "",
];

/// One query at one concurrency.
#[derive(Debug, Clone, Default)]
pub struct SearchCase {
    pub chars: usize,
    pub query: &'static str,
    pub hit: bool,
    pub concurrency: usize,
    pub rows: usize,
    pub service_rps: Repeated,
    pub service_p50: Repeated,
    pub service_p99: Repeated,
    pub direct_rps: Repeated,
    pub direct_p50: Repeated,
    pub direct_p99: Repeated,
    /// CPU per request through the API, one per repetition (where `/proc` could be read).
    pub service_cpu: Vec<CpuPerRequest>,
    /// CPU per direct query, one per repetition.
    pub direct_cpu: Vec<CpuPerRequest>,
    /// Requests not answered 200.
    pub errors: usize,
}

impl SearchCase {
    /// Service throughput over direct throughput, on the medians.
    pub fn ratio(&self) -> f64 {
        self.service_rps.median() / self.direct_rps.median().max(1e-9)
    }
}

/// The search figures.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub dataset: String,
    pub cases: Vec<SearchCase>,
    /// `EXPLAIN ANALYZE` of the search on the big workspace, per query.
    pub plans: Vec<(&'static str, String)>,
}

/// Workload 3.
pub async fn measure(
    env: &Environment,
    server: &Server,
    sizes: Sizes,
    options: &Options,
) -> Result<Search> {
    let big = seed(env, sizes).await?;
    let account = env.account_in(&big.to_string()).await?;
    let repository = PgClientRepository::new(env.pool.clone(), DeliveryAnnouncer::new());
    let mut search = Search {
        dataset: format!(
            "{} workspaces × {} clients, plus one workspace of {} clients (seed {SEED})",
            sizes.small_workspaces, sizes.clients_per_workspace, sizes.big_workspace_clients
        ),
        ..Search::default()
    };
    let queries = QUERIES.into_iter().filter(|(_, query, _)| {
        options.search_queries.is_empty() || options.search_queries.iter().any(|q| q == query)
    });
    for (chars, query, hit) in queries {
        let rows = repository
            .search(WorkspaceId(big), query, 100)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .len();
        let concurrencies = CONCURRENCY.into_iter().filter(|c| {
            options.search_concurrency.is_empty() || options.search_concurrency.contains(c)
        });
        for concurrency in concurrencies {
            let mut case = SearchCase {
                chars,
                query,
                hit,
                concurrency,
                rows,
                ..SearchCase::default()
            };
            for _ in 0..sizes.runs {
                let post = Arc::new(LeanPost::new(
                    &server.base,
                    "/api/integrations/automation/triggers/clients/find",
                    &account.key,
                    &json!({"workspace_id": big, "name": query}),
                )?);
                let (rps, latencies, errors, cpu) = drive(concurrency, sizes, server, move || {
                    let post = post.clone();
                    async move { post.send().await }
                })
                .await;
                case.service_cpu.extend(cpu);
                case.service_rps.push(rps);
                case.service_p50.push(latencies.percentile(50.0));
                case.service_p99.push(latencies.percentile(99.0));
                case.errors += errors;

                let repository = repository.clone();
                let (rps, latencies, _, cpu) = drive(concurrency, sizes, server, move || {
                    let repository = repository.clone();
                    async move {
                        repository
                            .search(WorkspaceId(big), query, 100)
                            .await
                            .is_ok()
                    }
                })
                .await;
                case.direct_cpu.extend(cpu);
                case.direct_rps.push(rps);
                case.direct_p50.push(latencies.percentile(50.0));
                case.direct_p99.push(latencies.percentile(99.0));
            }
            let cpu = |runs: &[CpuPerRequest]| {
                CpuPerRequest::median(runs).map_or_else(String::new, |c| {
                    format!(
                        " (CPU µs: tool {:.0}, server {:.0}, database {:.0}, rest {:.0})",
                        c.tool, c.server, c.database, c.rest
                    )
                })
            };
            progress(&format!(
                "find {query:?} c={concurrency}: {:.0} req/s p99 {:.2} ms{}; direct {:.0} req/s{}; ratio {:.2}",
                case.service_rps.median(),
                case.service_p99.median(),
                cpu(&case.service_cpu),
                case.direct_rps.median(),
                cpu(&case.direct_cpu),
                case.ratio()
            ));
            search.cases.push(case);
        }
    }
    let (client, driver) = connect(&env.database_url).await?;
    // The three-character statement, kept as the service keeps it: its generic plan serves
    // every call after the first five.
    client
        .batch_execute(&format!(
            "PREPARE find_clients(uuid, text, text, bigint) AS {}",
            *SEARCH_SQL
        ))
        .await?;
    for query in ["log", "logistic", "zqz", "a", "z"] {
        // The statement the repository runs (see `PgClientRepository::search`): one or two
        // characters pick the newest matches from the index alone, then fetch them by key; three
        // or more run `SEARCH_SQL`, which walks the workspace newest first for a needle common
        // among its newest names and reads the trigram index for a rare one.
        let sql = if query.chars().count() < 3 {
            format!(
                "EXPLAIN (ANALYZE, BUFFERS) SELECT id, workspace_id, name, type, status, email, \
                 phone, address, note, currency, created_at, updated_at FROM clients \
                 WHERE id IN (SELECT id FROM clients WHERE workspace_id = '{big}' \
                              AND strpos(name_lower, '{query}') > 0 \
                              ORDER BY created_at DESC, id DESC LIMIT 100) \
                 ORDER BY created_at DESC, id DESC"
            )
        } else {
            let execute = format!("EXECUTE find_clients('{big}', '{query}', '%{query}%', 100)");
            for _ in 0..5 {
                client.batch_execute(&execute).await?;
            }
            format!("EXPLAIN (ANALYZE, BUFFERS) {execute}")
        };
        let mut plan = String::new();
        for message in client.simple_query(&sql).await? {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                plan.push_str(row.get(0).unwrap_or_default());
                plan.push('\n');
            }
        }
        search.plans.push((query, plan));
    }
    drop(client);
    driver.abort();
    Ok(search)
}

/// Runs `request` from `concurrency` loops for the window: requests per second, latencies,
/// failures, and the CPU each answered request cost the tool, the server and the rest.
pub(crate) async fn drive<F, Fut>(
    concurrency: usize,
    sizes: Sizes,
    server: &Server,
    request: F,
) -> (f64, Latencies, usize, Option<CpuPerRequest>)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let request = Arc::new(request);
    // Warm every connection the measurement will use.
    let warm: Vec<_> = (0..concurrency)
        .map(|_| {
            let request = request.clone();
            tokio::spawn(async move { request().await })
        })
        .collect();
    for task in warm {
        let _ = task.await;
    }
    let latencies = Arc::new(Mutex::new(Latencies::default()));
    let failures = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cpu_before = CpuSample::now(server.pid());
    let started = Instant::now();
    let deadline = started + sizes.search_window;
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (request, latencies, failures) =
                (request.clone(), latencies.clone(), failures.clone());
            tokio::spawn(async move {
                let mut mine = Latencies::default();
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    if request().await {
                        mine.push(sent.elapsed());
                    } else {
                        failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                latencies
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
                    .extend(mine.0);
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = CpuSample::now(server.pid());
    let latencies = std::mem::take(&mut *latencies.lock().unwrap_or_else(PoisonError::into_inner));
    let rps = latencies.0.len() as f64 / elapsed;
    let cpu = cpu_before
        .zip(cpu_after)
        .and_then(|(before, after)| before.per_request(&after, latencies.0.len()));
    (
        rps,
        latencies,
        failures.load(std::sync::atomic::Ordering::Relaxed),
        cpu,
    )
}

/// The big workspace's id for these sizes.
fn workspace_id(sizes: Sizes, index: usize) -> Uuid {
    // Sizes are part of the id, so a smoke dataset and a full one never mix.
    let tag = (sizes.big_workspace_clients as u128) << 32;
    Uuid::from_u128(0x7b00_0000_0000_4000_8000_0000_0000_0000 | tag | index as u128)
}

/// Creates the dataset unless it is already there; the big workspace's id.
pub(crate) async fn seed(env: &Environment, sizes: Sizes) -> Result<Uuid> {
    let big = workspace_id(sizes, 0);
    let (client, driver) = connect(&env.database_url).await?;
    let present: i64 = client
        .query_one(
            "SELECT count(*) FROM clients WHERE workspace_id = $1::text::uuid",
            &[&big.to_string()],
        )
        .await?
        .get(0);
    let last_small = workspace_id(sizes, sizes.small_workspaces);
    let small_present: i64 = client
        .query_one(
            "SELECT count(*) FROM clients WHERE workspace_id = $1::text::uuid",
            &[&last_small.to_string()],
        )
        .await?
        .get(0);
    if usize::try_from(present).ok() == Some(sizes.big_workspace_clients)
        && usize::try_from(small_present).ok() == Some(sizes.clients_per_workspace)
    {
        progress("search dataset already present");
        drop(client);
        driver.abort();
        return Ok(big);
    }
    progress("seeding the search dataset (once; kept for later runs)");
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(SEED);
    let insert_workspace = client
        .prepare(
            "INSERT INTO workspaces (id, name, created_at) VALUES ($1::text::uuid, $2, now()) \
             ON CONFLICT (id) DO NOTHING",
        )
        .await?;
    let insert_clients = client
        .prepare(
            "INSERT INTO clients (id, workspace_id, name, name_lower, type, status, currency, \
             created_at, updated_at) \
             SELECT gen_random_uuid(), $1::text::uuid, n, lower(n), 'company', 'active', 'USD', \
                    timestamptz '2026-01-01 00:00:00+00' + ($3::bigint + i) * interval '1 second', \
                    timestamptz '2026-01-01 00:00:00+00' + ($3::bigint + i) * interval '1 second' \
             FROM unnest($2::text[]) WITH ORDINALITY AS t(n, i)",
        )
        .await?;
    let workspaces: Vec<(Uuid, usize)> = std::iter::once((big, sizes.big_workspace_clients))
        .chain(
            (1..=sizes.small_workspaces)
                .map(|i| (workspace_id(sizes, i), sizes.clients_per_workspace)),
        )
        .collect();
    for (index, (id, count)) in workspaces.iter().enumerate() {
        let id_text = id.to_string();
        client
            .execute(
                "DELETE FROM workspaces WHERE id = $1::text::uuid",
                &[&id_text],
            )
            .await
            .context("clearing a partial dataset")?;
        client
            .execute(
                &insert_workspace,
                &[&id_text, &format!("Bench workspace {index}")],
            )
            .await?;
        let names = names(&mut rng, *count);
        for (chunk_index, chunk) in names.chunks(20_000).enumerate() {
            let offset = i64::try_from(chunk_index * 20_000)?;
            client
                .execute(&insert_clients, &[&id_text, &chunk, &offset])
                .await?;
        }
        if index % 100 == 0 {
            progress(&format!(
                "seeded {} of {} workspaces ({:.0} s)",
                index + 1,
                workspaces.len(),
                started.elapsed().as_secs_f64()
            ));
        }
    }
    client.batch_execute("ANALYZE clients").await?;
    progress(&format!(
        "dataset seeded in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    drop(client);
    driver.abort();
    Ok(big)
}

/// `count` distinct realistic company names.
fn names(rng: &mut StdRng, count: usize) -> Vec<String> {
    let mut seen = HashSet::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let prefix = PREFIXES[rng.random_range(0..PREFIXES.len())];
        let industry = INDUSTRIES[rng.random_range(0..INDUSTRIES.len())];
        let suffix = SUFFIXES[rng.random_range(0..SUFFIXES.len())];
        let mut name = format!("{prefix} {industry}");
        if rng.random_bool(0.6) {
            name.push(' ');
            name.push_str(CITIES[rng.random_range(0..CITIES.len())]);
        }
        if !suffix.is_empty() {
            name.push(' ');
            name.push_str(suffix);
        }
        if !seen.insert(name.to_lowercase()) {
            // Rare once the space fills: a branch number keeps names distinct.
            name = format!("{name} {}", rng.random_range(2..1000));
            if !seen.insert(name.to_lowercase()) {
                continue;
            }
        }
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_repeatable_and_never_contain_the_misses() {
        let a = names(&mut StdRng::seed_from_u64(SEED), 5_000);
        let b = names(&mut StdRng::seed_from_u64(SEED), 5_000);
        assert_eq!(a, b);
        let distinct: HashSet<String> = a.iter().map(|n| n.to_lowercase()).collect();
        assert_eq!(distinct.len(), 5_000);
        for name in &a {
            let lower = name.to_lowercase();
            assert!(!lower.contains('z') && !lower.contains('q'), "{name}");
        }
        assert!(a.iter().any(|n| n.to_lowercase().contains("logistic")));
    }
}
