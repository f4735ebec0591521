//! Keyset pagination of newest-first lists.

/// `(<column>, id) < (cursor)`: the keyset condition of lists ordered by `<column>` then `id`,
/// both descending.
pub(crate) fn keyset_before(
    column: &'static str,
    cursor: timetrack_domain::model::Cursor,
) -> diesel::expression::SqlLiteral<
    diesel::sql_types::Bool,
    impl diesel::query_builder::QueryFragment<diesel::pg::Pg> + Send,
> {
    diesel::dsl::sql::<diesel::sql_types::Bool>(&format!("({column}, id) < ("))
        .bind::<diesel::sql_types::Timestamptz, _>(cursor.created_at)
        .sql(", ")
        .bind::<diesel::sql_types::Uuid, _>(cursor.id)
        .sql(")")
}
