//! Fixed SQL texts run as prepared statements that each connection keeps.
//!
//! diesel caches the statements its query builder makes, but never a `sql_query`: its text could
//! be anything, so it is parsed, planned and described again on every call, one extra round trip
//! included. Ours are fixed texts, and on the hot paths (the outbox statement of every create,
//! the delivery claim and the outcome batch) that planning cost as much as running them.
//! [`Prepared`] tells the connection's statement cache that the text is fixed: the statement is
//! prepared once per connection and found again by its text.

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};

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
}
