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
