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

/// `strpos(lower(<expression> COLLATE "und-x-icu"), q) > 0`: whether the text `expression`
/// contains `q` (already lowercased in Rust) ignoring case, for tables without a stored
/// lowercased key. The ICU root collation lowercases all of Unicode, as Rust does; the
/// database's own collation may be `C`, whose `lower` changes ASCII letters only (the private
/// cluster is initialized so).
pub(crate) fn name_contains(
    expression: &'static str,
    q: &str,
) -> diesel::expression::SqlLiteral<
    diesel::sql_types::Bool,
    impl diesel::query_builder::QueryFragment<diesel::pg::Pg> + Send,
> {
    diesel::dsl::sql::<diesel::sql_types::Bool>(&format!(
        "strpos(lower({expression} COLLATE \"und-x-icu\"), "
    ))
    .bind::<diesel::sql_types::Text, _>(q.to_owned())
    .sql(") > 0")
}
