//! Migrations and the replaceable SQL functions.

use super::*;

#[tokio::test]
async fn migrations_are_idempotent() {
    let db = TestDatabase::new().await;
    assert_eq!(
        run_migrations(db.url()).await.unwrap(),
        Vec::<String>::new()
    );
}

/// Every migration there is, with why it exists. The schema is one baseline until the first
/// release (README, "Changing the schema"); a migration after it is a deliberate act, named here
/// with its reason, or this test fails. (A development database made before a fold is refused at
/// start, with what to do.)
const MIGRATIONS_AND_WHY: &[(&str, &str)] = &[(
    "2026-12-07-000003_baseline",
    "the whole schema, folded before any release",
)];

#[test]
fn every_migration_is_listed_with_why_it_exists() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    found.sort();
    let listed: Vec<&str> = MIGRATIONS_AND_WHY.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        found, listed,
        "a migration was added or removed: list each in MIGRATIONS_AND_WHY with why it cannot \
         wait for the next fold into the baseline"
    );
    assert!(
        MIGRATIONS_AND_WHY
            .iter()
            .all(|(_, why)| !why.trim().is_empty())
    );
}

/// Functions and triggers are code, replaced whole with the `timetrack_code` schema (ADR 0004):
/// no migration defines one, whatever the spelling.
#[test]
fn no_migration_defines_a_function_or_a_trigger() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let up = entry.unwrap().path().join("up.sql");
        let sql = std::fs::read_to_string(&up).unwrap();
        // The words of the file's code, comments left out, lowercased.
        let words: Vec<String> = sql
            .lines()
            .map(|line| line.split("--").next().unwrap_or(""))
            .flat_map(|code| code.split(|c: char| !c.is_ascii_alphanumeric() && c != '_'))
            .filter(|word| !word.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        for (i, word) in words.iter().enumerate() {
            if word != "create" {
                continue;
            }
            let what = words[i + 1..]
                .iter()
                .find(|w| !["or", "replace", "constraint", "event"].contains(&w.as_str()));
            if let Some(what) =
                what.filter(|w| ["function", "procedure", "trigger"].contains(&w.as_str()))
            {
                found.push(format!("{}: CREATE ... {what}", up.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "define functions and triggers in crates/adapters/src/postgres/functions/: {found:#?}"
    );
}

/// Every function and trigger of the migrated database is in `timetrack_code`: none in `public`
/// (extensions' own aside), and every trigger runs a function of the schema.
#[tokio::test]
async fn every_function_and_trigger_is_in_the_replaceable_schema() {
    let db = TestDatabase::new().await;
    let client = sql_client(db.url()).await;
    let stray = rows(
        &client,
        "SELECT p.oid::regprocedure::text FROM pg_proc p \
         WHERE p.pronamespace <> 'timetrack_code'::regnamespace \
           AND p.pronamespace <> 'pg_catalog'::regnamespace \
           AND p.pronamespace <> 'information_schema'::regnamespace \
           AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e') \
         UNION ALL \
         SELECT t.tgname::text || ' on ' || t.tgrelid::regclass::text FROM pg_trigger t \
         JOIN pg_proc p ON p.oid = t.tgfoid \
         WHERE NOT t.tgisinternal AND p.pronamespace <> 'timetrack_code'::regnamespace",
    )
    .await;
    assert!(stray.is_empty(), "{stray:?}");
    let triggers = rows(
        &client,
        "SELECT t.tgname::text FROM pg_trigger t WHERE NOT t.tgisinternal ORDER BY 1",
    )
    .await;
    assert_eq!(
        triggers.concat(),
        [
            "report_day_totals_on_delete",
            "report_day_totals_on_insert",
            "report_day_totals_on_settings",
            "report_day_totals_on_update"
        ]
    );
}

/// The schema as the catalog describes it: relations, columns, constraints, indexes, functions
/// and their definitions, in a stable order (extensions' own objects left out).
async fn schema_of(client: &tokio_postgres::Client) -> Vec<String> {
    let queries = [
        "SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' ' || c.relpersistence::text || ' ' \
                || coalesce(array_to_string(c.reloptions, ','), '') \
         FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace \
         AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')",
        "SELECT 'column ' || c.relname || '.' || a.attname || ' ' || a.attnum || ' ' \
                || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' ' \
                || a.attidentity::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '') \
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' \
         AND a.attnum > 0 AND NOT a.attisdropped",
        "SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' \
                || pg_get_constraintdef(oid) \
         FROM pg_constraint WHERE connamespace = 'public'::regnamespace",
        "SELECT 'index ' || pg_get_indexdef(indexrelid) FROM pg_index i \
         JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = 'public'::regnamespace",
        "SELECT 'function ' || p.oid::regprocedure || ' ' || md5(pg_get_functiondef(p.oid)) \
         FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace \
         AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')",
    ];
    let mut schema = Vec::new();
    for query in queries {
        for row in client.query(query, &[]).await.unwrap() {
            schema.push(row.get::<_, String>(0));
        }
    }
    schema.sort();
    schema
}

/// Reverting every migration leaves nothing of the schema but diesel's own table (and the
/// extensions, which the baseline creates only if missing); migrating again makes the same
/// schema, functions included.
#[tokio::test]
async fn reverting_the_migrations_undoes_them_and_migrating_again_makes_the_same_schema() {
    let db = TestDatabase::new().await;
    let client = sql_client(db.url()).await;
    let before = schema_of(&client).await;
    assert!(before.len() > 100, "{before:?}");
    let url = db.url().to_owned();
    tokio::task::spawn_blocking(move || {
        use diesel::Connection as _;
        use diesel_migrations::MigrationHarness as _;
        let mut conn = diesel_async::async_connection_wrapper::AsyncConnectionWrapper::<
            diesel_async::AsyncPgConnection,
        >::establish(&url)
        .unwrap();
        conn.revert_all_migrations(timetrack_adapters::postgres::MIGRATIONS)
            .unwrap();
    })
    .await
    .unwrap();
    let reverted = schema_of(&client).await;
    let left: Vec<&String> = reverted
        .iter()
        .filter(|line| !line.contains("__diesel_schema_migrations"))
        .collect();
    assert!(left.is_empty(), "left after the revert: {left:#?}");
    run_migrations(db.url()).await.unwrap();
    assert_eq!(schema_of(&client).await, before);
}

/// When the text of the day totals' rule changed, installing it sums every workspace's entries
/// again, in the workspace's zone and rounding: totals written by an older rule (here: none, as
/// if the entries had been written without the triggers) are replaced.
#[tokio::test]
async fn a_changed_day_totals_rule_sums_the_entries_again() {
    let db = TestDatabase::new().await;
    let client = sql_client(db.url()).await;
    // Three stopped entries in Berlin (two on one local day, one just after its midnight, which
    // is the day before in UTC), rounded up to 15 minutes, priced 60.00 an hour; one running.
    client
        .batch_execute(
            "INSERT INTO workspaces (id, name, created_at, timezone, rounding_minutes, rounding_mode) \
             VALUES ('00000000-0000-0000-0000-00000000000a', 'A', now(), 'Europe/Berlin', 15, 'up'); \
             INSERT INTO users (id, name, email, created_at) VALUES \
               ('00000000-0000-0000-0000-000000000001', 'One', 'one@example.com', now()); \
             INSERT INTO memberships (workspace_id, user_id, created_at, role) VALUES \
               ('00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-000000000001', now(), 'owner'); \
             INSERT INTO rates (id, workspace_id, kind, scope, currency, hourly_minor, \
                                effective_from, created_at) \
             VALUES ('00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000a', \
                     'billable', 'workspace', 'EUR', 6000, '2020-01-01', now()); \
             INSERT INTO time_entries (id, workspace_id, user_id, source, billable, start_at, end_at, \
                                       created_at, updated_at, price_currency, billable_rate_id, \
                                       billable_rate_scope, billable_rate_minor) \
             SELECT gen_random_uuid(), '00000000-0000-0000-0000-00000000000a', \
                    '00000000-0000-0000-0000-000000000001', 'timer', true, s::timestamptz, \
                    e::timestamptz, now(), now(), 'EUR', '00000000-0000-0000-0000-0000000000b1', \
                    'workspace', 6000 \
             FROM (VALUES ('2026-03-02 08:00:00+00', '2026-03-02 08:20:00+00'), \
                          ('2026-03-02 09:00:00+00', '2026-03-02 09:01:00+00'), \
                          ('2026-03-02 23:30:00+00', '2026-03-03 00:00:00+00'), \
                          ('2026-03-04 10:00:00+00', NULL)) AS v(s, e); \
             DELETE FROM report_day_totals; \
             UPDATE timetrack_functions SET sha256 = 'older' \
             WHERE signature = 'rule report_day_totals';",
        )
        .await
        .unwrap();
    assert_eq!(
        run_migrations(db.url()).await.unwrap(),
        Vec::<String>::new()
    );
    let totals: Vec<String> = client
        .query(
            "SELECT day::text || ' ' || entries || ' ' || seconds || ' ' || rounded_seconds \
                    || ' ' || bill_rounded || ' ' || bill \
             FROM report_day_totals ORDER BY day",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    // 20 min and 1 min: 1,260 s, rounded up to 30 and 15 min (2,700 s); 20.00 + 1.00 unrounded,
    // 30.00 + 15.00 rounded. The half hour from 00:30 Berlin time is the 3rd's.
    assert_eq!(
        totals,
        [
            "2026-03-02 2 1260 2700 4500 2100",
            "2026-03-03 1 1800 1800 3000 3000"
        ]
    );
}

/// The installation's key (ADR 0018) is made by the migrations once, kept by later runs, and
/// read alike by every pool; the table holds that one row.
#[tokio::test]
async fn the_installation_key_is_made_once_and_read_alike() {
    let db = TestDatabase::new().await;
    let first = timetrack_adapters::postgres::installation_masks(&db.pool())
        .await
        .unwrap();
    run_migrations(db.url()).await.unwrap();
    let again = timetrack_adapters::postgres::installation_masks(&db.pool())
        .await
        .unwrap();
    assert_eq!(again, first);
    let client = sql_client(db.url()).await;
    let row = client
        .query_one(
            "SELECT count(*), min(length(mask_key)), \
                    bool_or(mask_key = decode(repeat('00', 32), 'hex')) \
             FROM installation",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, i32>(1),
            row.get::<_, bool>(2)
        ),
        (1, 32, false)
    );
    let second = client
        .batch_execute(
            "INSERT INTO installation (one, mask_key) VALUES (false, decode(repeat('01', 32), 'hex'))",
        )
        .await;
    assert!(second.is_err(), "a second key is refused");
}

/// A client on `url`, its connection driven in the background.
async fn sql_client(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

/// The functions of schema `timetrack_code`, and those of `public` whose name starts with
/// `timetrack_` (an older layout's).
async fn installed_functions(client: &tokio_postgres::Client) -> Vec<String> {
    client
        .query(
            "SELECT n.nspname || '.' || p.proname FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = 'timetrack_code' \
                OR (n.nspname = 'public' AND p.proname LIKE 'timetrack\\_%') \
             ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

const FUNCTIONS: [&str; 26] = [
    "timetrack_code.amount_minor",
    "timetrack_code.apply_and_claim",
    "timetrack_code.apply_streaks",
    "timetrack_code.claim_after",
    "timetrack_code.claim_deliveries",
    "timetrack_code.entry_prices",
    "timetrack_code.lock_streaks",
    "timetrack_code.price_entries",
    "timetrack_code.price_written",
    "timetrack_code.prices_in_reach",
    "timetrack_code.pricing_lock",
    "timetrack_code.rate_for",
    "timetrack_code.rate_level",
    "timetrack_code.receives",
    "timetrack_code.record_and_claim",
    "timetrack_code.record_attempts",
    "timetrack_code.record_round",
    "timetrack_code.report_day_bucket",
    "timetrack_code.report_day_totals_add",
    "timetrack_code.report_day_totals_on_entries",
    "timetrack_code.report_day_totals_on_settings",
    "timetrack_code.report_day_totals_rebuild",
    "timetrack_code.repricing",
    "timetrack_code.rounded_seconds",
    "timetrack_code.sent_type",
    "timetrack_code.shows_to",
];

#[tokio::test]
async fn the_functions_schema_is_recreated_when_a_text_changed_and_an_older_layout_is_dropped() {
    let db = TestDatabase::new().await;
    let client = sql_client(db.url()).await;
    assert_eq!(installed_functions(&client).await, FUNCTIONS);
    // An older text of the claim (a body that claims nothing, returning what an older version
    // returned) recorded under another digest, a function of the schema since removed, and one
    // of the layout before the schema, recorded by its signature.
    client
        .batch_execute(
            "DROP FUNCTION timetrack_code.claim_deliveries(timestamptz, timestamptz, bigint, \
             bigint, bigint, uuid[], int[], uuid[]); \
             CREATE FUNCTION timetrack_code.claim_deliveries(timestamptz, timestamptz, \
             bigint, bigint, bigint, uuid[], int[]) RETURNS TABLE (event_id uuid) \
             LANGUAGE sql AS $$ SELECT NULL::uuid WHERE false $$; \
             CREATE FUNCTION timetrack_code.retired() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$; \
             CREATE FUNCTION timetrack_claim_deliveries(timestamptz) RETURNS int \
             LANGUAGE sql AS $$ SELECT 1 $$; \
             UPDATE timetrack_functions SET sha256 = 'old'; \
             INSERT INTO timetrack_functions VALUES \
             ('timetrack_claim_deliveries(timestamptz)', 'x', now());",
        )
        .await
        .unwrap();
    assert_eq!(
        run_migrations(db.url()).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(installed_functions(&client).await, FUNCTIONS);
    let language: String = client
        .query_one(
            "SELECT l.lanname::text FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang \
             WHERE p.proname = 'claim_deliveries' \
               AND p.pronamespace = 'timetrack_code'::regnamespace",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        language, "plpgsql",
        "the claim was re-created from its file"
    );
    let recorded: Vec<(String, String)> = client
        .query(
            "SELECT signature, sha256 FROM timetrack_functions ORDER BY signature",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(recorded[0].0, "rule report_day_totals");
    assert_eq!(recorded[0].1.len(), 64);
    assert_eq!(recorded[1].0, "schema timetrack_code");
    assert_eq!(
        recorded[1].1,
        timetrack_adapters::postgres::sql_functions_fingerprint()
    );
}

#[tokio::test]
async fn a_database_from_before_the_squash_is_refused_with_what_to_do() {
    let db = TestDatabase::new().await;
    let admin = sql_client(&TestDatabase::server_url()).await;
    let name = format!("timetrack_presquash_{}", uuid::Uuid::new_v4().simple());
    admin
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await
        .unwrap();
    let url = db
        .url()
        .replace(db.url().rsplit('/').next().unwrap(), &name);
    sql_client(&url)
        .await
        .batch_execute(
            "CREATE TABLE __diesel_schema_migrations (version varchar(50) PRIMARY KEY, \
             run_on timestamp NOT NULL DEFAULT now()); \
             INSERT INTO __diesel_schema_migrations (version) VALUES ('20261122000001'); \
             CREATE TABLE workspaces (id uuid PRIMARY KEY);",
        )
        .await
        .unwrap();
    let err = format!("{:#}", run_migrations(&url).await.unwrap_err());
    assert!(
        err.contains("squashed") && err.contains(".timetrack/") && err.contains("20261122000001"),
        "{err}"
    );
    admin
        .batch_execute(&format!("DROP DATABASE \"{name}\" WITH (FORCE)"))
        .await
        .unwrap();
}

/// The tables that no workspace owns, each with why (docs/scaling.md).
const NOT_WORKSPACE_OWNED: &[(&str, &str)] = &[
    ("workspaces", "the root: its id is the workspace id"),
    ("users", "a person may belong to several workspaces"),
    ("rate_limit_hits", "per-key request counters of one server"),
    ("timetrack_functions", "the installed SQL functions"),
    ("installation", "the installation's own key"),
    ("__diesel_schema_migrations", "the applied migrations"),
];

/// Unique indexes of workspace-owned tables that knowingly leave the workspace out.
const UNIQUE_ACROSS_WORKSPACES: &[(&str, &str)] = &[
    (
        "api_keys_key_hash_key",
        "a key is found by its hash before its workspace is known",
    ),
    (
        "time_entries_one_running_timer_idx",
        "a person runs one timer at a time across their workspaces",
    ),
];

/// Rows of `query` as lists of text columns.
async fn rows(client: &tokio_postgres::Client, query: &str) -> Vec<Vec<String>> {
    client
        .query(query, &[])
        .await
        .unwrap()
        .iter()
        .map(|row| (0..row.len()).map(|i| row.get::<_, String>(i)).collect())
        .collect()
}

#[tokio::test]
async fn the_migrated_schema_is_distributable_by_workspace() {
    let db = TestDatabase::new().await;
    let client = sql_client(db.url()).await;
    let global = |table: &str| NOT_WORKSPACE_OWNED.iter().any(|(t, _)| *t == table);
    let mut problems = Vec::new();

    // Every other table carries a workspace_id that is never null.
    let tables = rows(
        &client,
        "SELECT c.relname::text, \
                COALESCE((SELECT CASE WHEN a.attnotnull THEN 'not null' ELSE 'nullable' END \
                          FROM pg_attribute a WHERE a.attrelid = c.oid \
                          AND a.attname = 'workspace_id' AND NOT a.attisdropped), 'missing') \
         FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace \
         AND c.relkind IN ('r', 'p') ORDER BY 1",
    )
    .await;
    assert!(tables.len() >= 15, "{tables:?}");
    for row in &tables {
        let (table, workspace_id) = (&row[0], &row[1]);
        if !global(table) && workspace_id != "not null" {
            problems.push(format!("{table}: workspace_id is {workspace_id}"));
        }
    }

    // Every reference from a workspace-owned table into another pairs workspace_id with
    // workspace_id; one into a table no workspace owns is to the workspace itself or to a user.
    let references = rows(
        &client,
        "SELECT con.conname::text, src.relname::text, dst.relname::text, \
                (SELECT string_agg(a.attname, ',' ORDER BY k.i) FROM unnest(con.conkey) \
                 WITH ORDINALITY AS k(n, i) JOIN pg_attribute a \
                 ON a.attrelid = con.conrelid AND a.attnum = k.n), \
                (SELECT string_agg(a.attname, ',' ORDER BY k.i) FROM unnest(con.confkey) \
                 WITH ORDINALITY AS k(n, i) JOIN pg_attribute a \
                 ON a.attrelid = con.confrelid AND a.attnum = k.n) \
         FROM pg_constraint con JOIN pg_class src ON src.oid = con.conrelid \
         JOIN pg_class dst ON dst.oid = con.confrelid \
         WHERE con.contype = 'f' AND con.connamespace = 'public'::regnamespace ORDER BY 1",
    )
    .await;
    assert!(references.len() >= 15, "{references:?}");
    for row in &references {
        let (name, from, to) = (&row[0], &row[1], &row[2]);
        let pairs: Vec<(&str, &str)> = row[3].split(',').zip(row[4].split(',')).collect();
        let fine = match (global(from), to.as_str()) {
            (true, _) => global(to),
            (false, "workspaces") => pairs == [("workspace_id", "id")],
            (false, "users") => true,
            (false, to) => !global(to) && pairs.contains(&("workspace_id", "workspace_id")),
        };
        if !fine {
            problems.push(format!("{name}: {from} ({}) -> {to} ({})", row[3], row[4]));
        }
    }

    // Every unique key of a workspace-owned table includes workspace_id, but the known two.
    let uniques = rows(
        &client,
        "SELECT i.indexrelid::regclass::text, c.relname::text, \
                (EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid \
                 AND a.attname = 'workspace_id' AND a.attnum = ANY (i.indkey)))::text \
         FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid \
         WHERE i.indisunique AND c.relnamespace = 'public'::regnamespace ORDER BY 1",
    )
    .await;
    for row in &uniques {
        let (index, table, has_workspace) = (&row[0], &row[1], &row[2]);
        let known = UNIQUE_ACROSS_WORKSPACES.iter().any(|(i, _)| i == index);
        if !global(table) && has_workspace != "true" && !known {
            problems.push(format!("{index} on {table} leaves workspace_id out"));
        }
    }
    for (index, _) in UNIQUE_ACROSS_WORKSPACES {
        assert!(
            uniques.iter().any(|row| row[0] == *index),
            "{index} is listed as an exception but no longer exists"
        );
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The tables whose rows every delivery or attempt written references (by their primary key,
/// which includes the workspace).
const REFERENCED_PER_DELIVERY: &[&str] = &["events", "webhook_subscriptions", "deliveries"];

#[tokio::test]
async fn the_reference_checks_of_the_delivery_path_can_only_take_the_primary_key() {
    // A reference check looks its row up by every column of the key. An index that starts with
    // one of them (the workspace's events, for the feed) can serve it too, and was taken for
    // workspaces newer than the statistics, reading all of a workspace's events for one check.
    // On the tables every delivery references, any such index must be partial (on a condition
    // that no reference check states).
    let db = TestDatabase::new().await;
    let client = sql_client(db.url()).await;
    let tables = REFERENCED_PER_DELIVERY
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let indexes = rows(
        &client,
        &format!(
            "SELECT i.indexrelid::regclass::text, c.relname::text \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid \
             JOIN pg_index pk ON pk.indrelid = c.oid AND pk.indisprimary \
             WHERE c.relname = ANY (ARRAY[{tables}]) \
               AND c.relnamespace = 'public'::regnamespace \
               AND NOT i.indisprimary AND i.indpred IS NULL \
               AND i.indkey[0] = ANY (pk.indkey::int2[]) \
             ORDER BY 1"
        ),
    )
    .await;
    let tables = rows(
        &client,
        &format!(
            "SELECT c.relname::text FROM pg_class c JOIN pg_index pk ON pk.indrelid = c.oid \
             WHERE pk.indisprimary AND c.relnamespace = 'public'::regnamespace \
               AND c.relname = ANY (ARRAY[{tables}]) \
             ORDER BY 1"
        ),
    )
    .await;
    assert_eq!(tables.len(), REFERENCED_PER_DELIVERY.len(), "{tables:?}");
    assert!(
        indexes.is_empty(),
        "indexes a reference check could take instead of the primary key: {indexes:?}"
    );
}
