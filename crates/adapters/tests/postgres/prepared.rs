//! The statement wrappers of `postgres::prepared` on a real connection.

use diesel::QueryResult;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use timetrack_adapters::postgres::prepared::{Prepared, Typed};
use timetrack_testkit::TestDatabase;

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[tokio::test]
async fn a_prepared_text_is_kept_by_its_connection_and_a_plain_one_is_not() {
    let db = TestDatabase::new().await;
    let pool = db.pool();
    let mut conn = pool.get().await.unwrap();
    for _ in 0..3 {
        Prepared(diesel::sql_query("SELECT $1::text AS kept").bind::<Text, _>("x"))
            .execute(&mut conn)
            .await
            .unwrap();
        diesel::sql_query("SELECT $1::text AS planned")
            .bind::<Text, _>("x")
            .execute(&mut conn)
            .await
            .unwrap();
    }
    // The pattern is a parameter, so this query's own text matches neither.
    let mut statements = Vec::new();
    for pattern in ["%AS kept", "%AS planned"] {
        let found: Count = diesel::sql_query(
            "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE $1",
        )
        .bind::<Text, _>(pattern)
        .get_result(&mut conn)
        .await
        .unwrap();
        statements.push(found.n);
    }
    assert_eq!(statements, [1, 0]);
}

#[tokio::test]
async fn a_typed_query_reads_its_columns_by_position() {
    let db = TestDatabase::new().await;
    let mut conn = db.pool().get().await.unwrap();
    // Column names that match no field: only the positions are read.
    let rows: Vec<(i64, String)> = Prepared(Typed::<_, (BigInt, Text)>::new(
        diesel::sql_query("SELECT n * 2 AS a, 'row ' || n AS b FROM generate_series(1, $1) n")
            .bind::<BigInt, _>(3_i64),
    ))
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        rows,
        [
            (2, "row 1".into()),
            (4, "row 2".into()),
            (6, "row 3".into())
        ]
    );
    // Columns that do not match the types are an error, not a misread.
    let wrong: QueryResult<Vec<(i64, String)>> =
        Typed::<_, (BigInt, Text)>::new(diesel::sql_query("SELECT 'x'::text AS a, 1::bigint AS b"))
            .load(&mut conn)
            .await;
    assert!(wrong.is_err());
}

/// Behind a transaction pooler (`Pooler::Transaction`) no statement outlives its round trip:
/// the same texts run, kept and plain alike, typed rows and affected-row counts are read as on
/// a direct connection, and the server holds no named statement afterwards (another session
/// behind the pooler would not have it, or would have another process's under the same name).
#[tokio::test]
async fn behind_a_transaction_pooler_no_statement_is_kept() {
    use timetrack_adapters::{PoolSettings, Pooler, build_pool};
    let db = TestDatabase::new().await;
    let pool = build_pool(
        db.url(),
        PoolSettings {
            max_size: 1,
            pooler: Pooler::Transaction,
            ..PoolSettings::default()
        },
    )
    .unwrap();
    let mut conn = pool.get().await.unwrap();
    for _ in 0..3 {
        Prepared(diesel::sql_query("SELECT $1::text AS kept").bind::<Text, _>("x"))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let rows: Vec<(i64, String)> = Prepared(Typed::<_, (BigInt, Text)>::new(
        diesel::sql_query("SELECT n * 2 AS a, 'row ' || n AS b FROM generate_series(1, $1) n")
            .bind::<BigInt, _>(2_i64),
    ))
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows, [(2, "row 1".into()), (4, "row 2".into())]);
    diesel::sql_query("CREATE TEMP TABLE t (n int)")
        .execute(&mut conn)
        .await
        .unwrap();
    let inserted = diesel::sql_query("INSERT INTO t SELECT generate_series(1, $1)")
        .bind::<diesel::sql_types::Integer, _>(4)
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(inserted, 4);
    // A statement the server refuses is the server's error, as on a direct connection.
    let refused = diesel::sql_query("SELECT 1 / $1")
        .bind::<diesel::sql_types::Integer, _>(0)
        .execute(&mut conn)
        .await;
    assert!(
        refused.is_err_and(|e| e.to_string().contains("division by zero")),
        "a refused statement"
    );
    let kept: Count = diesel::sql_query("SELECT count(*) AS n FROM pg_prepared_statements")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(kept.n, 0);
}
