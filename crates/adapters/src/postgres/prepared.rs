//! Fixed SQL texts run as prepared statements that each connection keeps.
//!
//! diesel caches the statements its query builder makes, but never a `sql_query`: its text could
//! be anything, so it is parsed, planned and described again on every call, one extra round trip
//! included. Ours are fixed texts, and on the hot paths (the outbox statement of every create,
//! the delivery claim and the outcome batch) that planning cost as much as running them.
//! [`Prepared`] tells the connection's statement cache that the text is fixed: the statement is
//! prepared once per connection and found again by its text. Public for adapters written on the
//! same pool, and for the tests that check both wrappers on a real connection.

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
pub struct Prepared<Q>(pub Q);

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
/// Reading by name looks every column up in the row's field names, for every row, work that
/// grows with the rows of the answer and that a position makes unnecessary (ADR 0014 in
/// docs/adr/; figures in docs/benchmarks.md). The statement's output columns must be `ST`, in
/// order; a mismatch is an error when the rows are read.
pub struct Typed<Q, ST>(Q, PhantomData<fn() -> ST>);

impl<Q: std::fmt::Debug, ST> std::fmt::Debug for Typed<Q, ST> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Typed").field(&self.0).finish()
    }
}

impl<Q, ST> Typed<Q, ST> {
    /// `query`, its rows read by position as `ST`.
    pub fn new(query: Q) -> Self {
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
