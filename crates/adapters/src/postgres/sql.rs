//! Hand-written statements: each is a `.sql` file in `statements/`, with named parameters
//! (`:workspace_id`), run through [`named_query!`], which lists each name beside the value bound
//! to it. The rule for where SQL lives is in `docs/architecture.md` ("Where SQL lives").
//!
//! PostgreSQL numbers parameters (`$1`); a statement that names them can be read, composed and
//! changed without counting. The names are numbered once per statement, in the order the macro
//! binds them, and the numbered text is kept for the process (so the server's prepared-statement
//! cache sees one text per statement).

/// `sql` with every `:name` replaced by `$n`, `n` being the position of `name` in `order`
/// (from 1). `::type` casts, string literals and `--` comments are left alone. Panics when the text names a parameter `order` does
/// not list or `order` lists one the text does not use: a statement and its binds that disagree
/// are a bug, found by the first test that runs it.
pub(crate) fn numbered(sql: &str, order: &[&str]) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut used = vec![false; order.len()];
    let mut chars = sql.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '\'' || (c == '-' && matches!(chars.peek(), Some(&(_, '-')))) {
            // A string literal or a comment, copied as it is: `'a:b'`, `-- note: ...`.
            let end = if c == '\'' { '\'' } else { '\n' };
            out.push(c);
            for (_, n) in chars.by_ref() {
                out.push(n);
                if n == end {
                    break;
                }
            }
            continue;
        }
        if c != ':' {
            out.push(c);
            continue;
        }
        if let Some(&(_, ':')) = chars.peek() {
            // A cast: `::uuid`.
            out.push_str("::");
            chars.next();
            continue;
        }
        let start = at + 1;
        let mut end = start;
        while let Some(&(i, n)) = chars.peek() {
            if n.is_ascii_alphanumeric() || n == '_' {
                end = i + n.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        let name = &sql[start..end];
        if name.is_empty() {
            out.push(':');
            continue;
        }
        let position = order
            .iter()
            .position(|listed| *listed == name)
            .unwrap_or_else(|| panic!("the statement names :{name}, which is not bound"));
        used[position] = true;
        out.push('$');
        out.push_str(&(position + 1).to_string());
    }
    if let Some(unused) = used.iter().position(|u| !u) {
        panic!(
            "`{}` is bound but the statement never names it",
            order[unused]
        );
    }
    out
}

/// `diesel::sql_query` of a statement with named parameters, each bound with its SQL type:
///
/// ```text
/// named_query!(include_str!("statements/queue_stats.sql"); now: Timestamptz = now)
/// ```
///
/// The statement text is numbered once (see [`numbered`]) and kept for the process.
macro_rules! named_query {
    ($sql:expr; $($name:ident: $ty:ty = $value:expr),+ $(,)?) => {{
        static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            $crate::postgres::sql::numbered(&$sql, &[$(stringify!($name)),+])
        });
        diesel::sql_query(TEXT.as_str())$(.bind::<$ty, _>($value))+
    }};
}
pub(crate) use named_query;

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn names_become_positions_in_bind_order_and_casts_stay() {
        assert_eq!(
            numbered(
                "SELECT :b::text, x FROM t WHERE a = :a AND b = :b AND c = ':'",
                &["a", "b"]
            ),
            "SELECT $2::text, x FROM t WHERE a = $1 AND b = $2 AND c = ':'"
        );
        assert_eq!(numbered("SELECT now()::date", &[]), "SELECT now()::date");
        assert_eq!(
            numbered("-- note: :x is not here\nSELECT ':y', :z -- :w\n", &["z"]),
            "-- note: :x is not here\nSELECT ':y', $1 -- :w\n"
        );
        assert_eq!(
            numbered("f(:event_ids, :event_ids_2)", &["event_ids_2", "event_ids"]),
            "f($2, $1)"
        );
    }

    #[test]
    #[should_panic(expected = "names :c, which is not bound")]
    fn a_name_that_is_not_bound_is_refused() {
        numbered("SELECT :c", &["a"]);
    }

    #[test]
    #[should_panic(expected = "`a` is bound but the statement never names it")]
    fn a_bind_the_statement_never_names_is_refused() {
        numbered("SELECT 1", &["a"]);
    }
}
