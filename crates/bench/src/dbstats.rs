//! What the database did during a measurement: its write transactions (from the transaction ids
//! it handed out) and, where `pg_stat_statements` is loaded, the statements it ran, per event.
//!
//! Transaction ids are read as the next id of a snapshot, so reading them assigns none. Every
//! transaction a delivery takes writes (the API's write, a claim's leases, a round's records,
//! a `NOTIFY`), so the count is the transactions per event. Statements are counted at the top
//! level (a function's own statements are not counted again).

use anyhow::Result;

use crate::setup::connect;

/// The counters at one moment.
#[derive(Debug, Clone, Copy)]
pub struct DbCounters {
    next_xid: i64,
    statements: Option<i64>,
}

/// Per event over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DbPerEvent {
    /// Write transactions.
    pub transactions: f64,
    /// Top-level statements, where `pg_stat_statements` is loaded.
    pub statements: Option<f64>,
}

impl DbPerEvent {
    /// Each part's median over repetitions; `None` for none.
    pub fn median(repetitions: &[Self]) -> Option<Self> {
        use crate::stats::Repeated;
        if repetitions.is_empty() {
            return None;
        }
        let statements: Vec<f64> = repetitions.iter().filter_map(|r| r.statements).collect();
        Some(Self {
            transactions: Repeated(repetitions.iter().map(|r| r.transactions).collect()).median(),
            statements: (statements.len() == repetitions.len())
                .then(|| Repeated(statements).median()),
        })
    }
}

impl DbCounters {
    /// Reads the counters of the database at `url`.
    pub async fn read(url: &str) -> Result<Self> {
        let (client, driver) = connect(url).await?;
        let next_xid: i64 = client
            .query_one(
                "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint",
                &[],
            )
            .await?
            .get(0);
        let statements = match client
            .query_one(
                "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements \
                 WHERE toplevel AND dbid = (SELECT oid FROM pg_database \
                                            WHERE datname = current_database())",
                &[],
            )
            .await
        {
            Ok(row) => Some(row.get(0)),
            Err(_) => None,
        };
        drop(client);
        let _ = driver.await;
        Ok(Self {
            next_xid,
            statements,
        })
    }

    /// What happened between `self` and `later`, per one of `events`.
    pub fn per_event(&self, later: &Self, events: usize) -> Option<DbPerEvent> {
        if events == 0 {
            return None;
        }
        let n = events as f64;
        Some(DbPerEvent {
            transactions: (later.next_xid - self.next_xid) as f64 / n,
            // Less the one statement of the counters' own read.
            statements: self
                .statements
                .zip(later.statements)
                .map(|(a, b)| (b - a - 1).max(0) as f64 / n),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_divided_among_the_events() {
        let before = DbCounters {
            next_xid: 1_000,
            statements: Some(50),
        };
        let after = DbCounters {
            next_xid: 1_300,
            statements: Some(451),
        };
        let per = before.per_event(&after, 100).unwrap();
        assert!((per.transactions - 3.0).abs() < 1e-9);
        assert_eq!(per.statements, Some(4.0));
        assert_eq!(before.per_event(&after, 0), None);
        let unloaded = DbCounters {
            statements: None,
            ..after
        };
        assert_eq!(before.per_event(&unloaded, 100).unwrap().statements, None);
    }

    #[test]
    fn medians_drop_statements_unless_every_run_has_them() {
        let runs = [
            DbPerEvent {
                transactions: 3.0,
                statements: Some(4.0),
            },
            DbPerEvent {
                transactions: 5.0,
                statements: None,
            },
            DbPerEvent {
                transactions: 4.0,
                statements: Some(6.0),
            },
        ];
        let median = DbPerEvent::median(&runs).unwrap();
        assert!((median.transactions - 4.0).abs() < 1e-9);
        assert_eq!(median.statements, None);
        assert_eq!(DbPerEvent::median(&[]), None);
    }
}
