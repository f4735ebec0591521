//! Fixed SQL texts run as prepared statements that each connection keeps.
//!
//! diesel caches the statements its query builder makes, but never a `sql_query`: its text could
//! be anything, so it is parsed, planned and described again on every call, one extra round trip
//! included. Ours are fixed texts, and on the hot paths (the outbox statement of every create,
//! the delivery claim and the outcome batch) that planning cost as much as running them.
//! [`Prepared`] tells the connection's statement cache that the text is fixed: the statement is
//! prepared once per connection and found again by its text.

use std::marker::PhantomData;

use diesel::QueryResult;
use diesel::expression::TypedExpressionType;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::SqlType;

/// A query whose SQL text is one of a fixed few, so its prepared statement may be kept.
///
/// Only for texts that do not vary with the values: a text built from values would fill the
/// cache with statements used once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prepared<Q>(pub Q);

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Prepared<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

/// No type-level id: the cache then keys the statement by its SQL text and bind types.
impl<Q> QueryId for Prepared<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Prepared<Q> {
    type SqlType = Q::SqlType;
}

/// A query written in SQL whose rows are read by position as the SQL types `ST`, like a query
/// built with diesel's DSL, rather than by column name as `sql_query` reads them.
///
/// Reading by name looks every column up in the row's field names, for every row: for a search
/// answering 100 clients that was about a sixth of the server's time (`NamedRow::get` in
/// `perf`). The statement's output columns must be `ST`, in order; a mismatch is an error when
/// the rows are read.
pub(crate) struct Typed<Q, ST>(Q, PhantomData<fn() -> ST>);

impl<Q, ST> Typed<Q, ST> {
    pub(crate) fn new(query: Q) -> Self {
        Self(query, PhantomData)
    }
}

impl<Q: QueryFragment<Pg>, ST> QueryFragment<Pg> for Typed<Q, ST> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, backend: &Pg) -> QueryResult<bool> {
        self.0.is_safe_to_cache_prepared(backend)
    }
}

impl<Q, ST> QueryId for Typed<Q, ST> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q, ST: SqlType + TypedExpressionType> Query for Typed<Q, ST> {
    type SqlType = ST;
}

#[cfg(test)]
mod tests {
    use diesel::QueryableByName;
    use diesel::sql_types::{BigInt, Text};
    use diesel_async::RunQueryDsl;

    use super::*;

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }

    #[tokio::test]
    async fn a_prepared_text_is_kept_by_its_connection_and_a_plain_one_is_not() {
        let db = crate::testing::TestDatabase::new().await;
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
        let db = crate::testing::TestDatabase::new().await;
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
        let wrong: QueryResult<Vec<(i64, String)>> = Typed::<_, (BigInt, Text)>::new(
            diesel::sql_query("SELECT 'x'::text AS a, 1::bigint AS b"),
        )
        .load(&mut conn)
        .await;
        assert!(wrong.is_err());
    }
}
