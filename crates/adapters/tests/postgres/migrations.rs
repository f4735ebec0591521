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

/// A client on `url`, its connection driven in the background.
async fn sql_client(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

/// The functions of the schema whose name starts with `timetrack_`.
async fn installed_functions(client: &tokio_postgres::Client) -> Vec<String> {
    client
        .query(
            "SELECT proname::text FROM pg_proc WHERE proname LIKE 'timetrack\\_%' ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test]
async fn a_function_whose_text_changed_is_recreated_and_one_no_longer_defined_is_dropped() {
    let db = TestDatabase::new().await;
    let client = sql_client(db.url()).await;
    assert_eq!(
        installed_functions(&client).await,
        [
            "timetrack_claim_deliveries",
            "timetrack_record_and_claim",
            "timetrack_record_attempts"
        ]
    );
    // An older text of the claim (a body that claims nothing, returning what an older version
    // returned), and a function since removed.
    client
        .batch_execute(
            "DROP FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint); \
             CREATE FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, \
             bigint, bigint) RETURNS TABLE (event_id uuid, subscription_id text, \
             workspace_id uuid, event_type text, body text, url text, secret text, \
             attempts integer, failing_since timestamptz) LANGUAGE sql AS \
             $$ SELECT NULL::uuid, NULL, NULL::uuid, NULL, NULL, NULL, NULL, 0, NULL::timestamptz \
             WHERE false $$; \
             UPDATE timetrack_functions SET sha256 = 'old' \
             WHERE signature LIKE 'timetrack_claim_deliveries(%'; \
             CREATE FUNCTION timetrack_retired() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$; \
             INSERT INTO timetrack_functions VALUES ('timetrack_retired()', 'x', now());",
        )
        .await
        .unwrap();
    assert_eq!(
        run_migrations(db.url()).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        installed_functions(&client).await,
        [
            "timetrack_claim_deliveries",
            "timetrack_record_and_claim",
            "timetrack_record_attempts"
        ]
    );
    let language: String = client
        .query_one(
            "SELECT l.lanname::text FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang \
             WHERE p.proname = 'timetrack_claim_deliveries'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        language, "plpgsql",
        "the claim was re-created from its file"
    );
    let recorded: Vec<String> = client
        .query(
            "SELECT sha256 FROM timetrack_functions ORDER BY signature",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(recorded.len(), 3);
    assert!(recorded.iter().all(|sha| sha.len() == 64), "{recorded:?}");
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
