//! The SQL forms of the domain's rounding and amount, which sums taken in the database use, give
//! the Rust answers for every input tried.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use timetrack_domain::model::rate::amount_minor;
use timetrack_domain::model::{MAX_HOURLY_MINOR, Rounding, RoundingMode};

#[tokio::test]
async fn rounding_and_amounts_in_sql_are_the_domains() {
    let db = TestDatabase::new().await;
    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut rng = StdRng::seed_from_u64(7);
    let modes = [RoundingMode::Up, RoundingMode::Down, RoundingMode::Nearest];
    let mut cases: Vec<(i64, u8, RoundingMode, i64)> = Vec::new();
    for _ in 0..2000 {
        // Up to entries of nearly 10,000 years, on both sides of where the SQL amount leaves
        // bigint for numeric (9 × 10^9 seconds).
        let seconds = match rng.random_range(0..6) {
            0 => rng.random_range(0..200),
            1 => rng.random_range(0..100_000),
            2 => rng.random_range(0..400_000_000),
            3 => 9_000_000_000 + rng.random_range(-5_000..5_000),
            4 => rng.random_range(0..315_537_000_000),
            _ => i64::from(rng.random_range(0..300u32)) * 450,
        };
        let minutes = [0, 1, 5, 6, 15, 30, 60][rng.random_range(0..7)];
        let rate = match rng.random_range(0..3) {
            0 => rng.random_range(0..100),
            1 => rng.random_range(0..100_000),
            _ => MAX_HOURLY_MINOR - rng.random_range(0..10),
        };
        cases.push((seconds, minutes, modes[rng.random_range(0..3)], rate));
    }
    for (seconds, minutes, mode, rate) in cases {
        let rounding = Rounding::new(minutes, mode).unwrap();
        let row = client
            .query_one(
                "SELECT r, timetrack_code.amount_minor($4, r) \
                 FROM timetrack_code.rounded_seconds($1, $2, $3) AS r",
                &[&seconds, &i32::from(minutes), &mode.as_str(), &rate],
            )
            .await
            .unwrap();
        let (sql_rounded, sql_amount): (i64, i64) = (row.get(0), row.get(1));
        let rounded = rounding.apply(seconds);
        assert_eq!(sql_rounded, rounded, "{seconds} s, {minutes} min {mode:?}");
        assert_eq!(
            sql_amount,
            amount_minor(rate, rounded),
            "{rate} × {rounded} s"
        );
    }
}
