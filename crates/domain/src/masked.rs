//! Installation-wide counters shown to tenants only through a keyed permutation.
//!
//! Deliveries are numbered by one sequence for the whole installation, and the catch-up feed's
//! positions are transaction ids and an insert sequence of the whole installation. Shown as they
//! are, two of a tenant's own numbers a minute apart would tell it how much every other tenant did
//! in that minute. [`Masks`] shows each such number through a pseudorandom permutation keyed by a
//! secret of the installation: a shown number is a non-negative 64-bit integer like the one it
//! stands for (delivery ids keep their decimal form), one stored number has one shown form in
//! every process, and nothing about the order or the distance of two stored numbers can be read
//! from their shown forms without the key.
//!
//! The permutation is a balanced Feistel network on 64 bits (two 32-bit halves, [`ROUNDS`] rounds
//! of SipHash-2-4, each round keyed apart), narrowed to the wanted range by cycle walking:
//! a value outside the range is permuted again until it falls inside, which is a permutation of
//! the range because the whole network is one of the 64-bit values (about two passes on
//! average). Each use (delivery ids, the feed's transaction ids, its sequences) has its own
//! round keys, derived from the installation's key with its own label, so the shown forms of two
//! uses tell nothing about each other. The design is in ADR 0018.

use std::hash::Hasher;

use siphasher::sip::SipHasher24;

/// Feistel rounds: four make a strong pseudorandom permutation of a pseudorandom function; two
/// more are a margin.
pub const ROUNDS: usize = 6;

/// One keyed permutation of the 64-bit values.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Feistel {
    keys: [(u64, u64); ROUNDS],
}

impl Feistel {
    /// The round keys of `label` under the installation's `key`.
    fn derive(key: &[u8; 32], label: &str) -> Self {
        let (k0, k1) = (
            u64::from_le_bytes(key[0..8].try_into().expect("8 bytes")),
            u64::from_le_bytes(key[8..16].try_into().expect("8 bytes")),
        );
        let (k2, k3) = (
            u64::from_le_bytes(key[16..24].try_into().expect("8 bytes")),
            u64::from_le_bytes(key[24..32].try_into().expect("8 bytes")),
        );
        let keys = std::array::from_fn(|round| {
            let derived = |k: (u64, u64), half: u8| {
                let mut h = SipHasher24::new_with_keys(k.0, k.1);
                h.write(label.as_bytes());
                h.write_u8(0xff);
                h.write_u8(u8::try_from(round).expect("few rounds"));
                h.write_u8(half);
                h.finish()
            };
            (derived((k0, k1), 0), derived((k2, k3), 1))
        });
        Self { keys }
    }

    fn round(&self, round: usize, half: u32) -> u32 {
        let (k0, k1) = self.keys[round];
        let mut h = SipHasher24::new_with_keys(k0, k1);
        h.write_u32(half);
        // The low 32 bits of a 64-bit pseudorandom value.
        h.finish() as u32
    }

    fn forward(&self, value: u64) -> u64 {
        let (mut left, mut right) = ((value >> 32) as u32, value as u32);
        for round in 0..ROUNDS {
            (left, right) = (right, left ^ self.round(round, right));
        }
        (u64::from(left) << 32) | u64::from(right)
    }

    fn backward(&self, value: u64) -> u64 {
        let (mut left, mut right) = ((value >> 32) as u32, value as u32);
        for round in (0..ROUNDS).rev() {
            (left, right) = (right ^ self.round(round, left), left);
        }
        (u64::from(left) << 32) | u64::from(right)
    }

    /// `value` permuted within `range` (cycle walking); `None` outside it.
    fn mask(&self, value: i64, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        Self::walk(value, &range, |v| self.forward(v))
    }

    /// The inverse of [`mask`](Self::mask).
    fn unmask(&self, shown: i64, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        Self::walk(shown, &range, |v| self.backward(v))
    }

    fn walk(
        value: i64,
        range: &std::ops::RangeInclusive<i64>,
        step: impl Fn(u64) -> u64,
    ) -> Option<i64> {
        if !range.contains(&value) {
            return None;
        }
        let mut next = step(value as u64);
        // Ends: the cycle through `value` comes back to `value`, which is in the range.
        loop {
            match i64::try_from(next) {
                Ok(inside) if range.contains(&inside) => return Some(inside),
                _ => next = step(next),
            }
        }
    }
}

/// The permutations that show installation-wide numbers to tenants, keyed by the installation's
/// secret (stored in its database, so every process shows a number the same way).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Masks {
    delivery: Feistel,
    transaction: Feistel,
    sequence: Feistel,
}

impl std::fmt::Debug for Masks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Masks(..)")
    }
}

impl Masks {
    /// The masks of the installation's 32-byte `key`.
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            delivery: Feistel::derive(key, "timetrack delivery id"),
            transaction: Feistel::derive(key, "timetrack feed transaction"),
            sequence: Feistel::derive(key, "timetrack feed sequence"),
        }
    }

    /// How a delivery id (1 and up) is shown: another positive `i64`, so its decimal form has 1
    /// to 19 digits and no leading zero. `None` for an id below 1, which no delivery has.
    pub fn show_delivery(&self, id: i64) -> Option<i64> {
        self.delivery.mask(id, 1..=i64::MAX)
    }

    /// The delivery id shown as `shown`; `None` for a number below 1.
    pub fn read_delivery(&self, shown: i64) -> Option<i64> {
        self.delivery.unmask(shown, 1..=i64::MAX)
    }

    /// How a feed position's transaction id and sequence (each 0 and up) are shown; `None` for a
    /// negative one, which no position has.
    pub fn show_position(&self, transaction: i64, sequence: i64) -> Option<(i64, i64)> {
        Some((
            self.transaction.mask(transaction, 0..=i64::MAX)?,
            self.sequence.mask(sequence, 0..=i64::MAX)?,
        ))
    }

    /// The position shown as (`transaction`, `sequence`); `None` for a negative number.
    pub fn read_position(&self, transaction: i64, sequence: i64) -> Option<(i64, i64)> {
        Some((
            self.transaction.unmask(transaction, 0..=i64::MAX)?,
            self.sequence.unmask(sequence, 0..=i64::MAX)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks(seed: u8) -> Masks {
        Masks::new(&[seed; 32])
    }

    #[test]
    fn every_shown_delivery_id_reads_back_and_stays_positive() {
        let m = masks(7);
        for id in (1..2_000).chain([i64::MAX, i64::MAX - 1, 1 << 62, 9_007_199_254_740_993]) {
            let shown = m.show_delivery(id).unwrap();
            assert!(shown >= 1, "{id} -> {shown}");
            assert_eq!(m.read_delivery(shown), Some(id), "{id} -> {shown}");
        }
        assert_eq!(m.show_delivery(0), None);
        assert_eq!(m.show_delivery(-5), None);
        assert_eq!(m.read_delivery(0), None);
    }

    #[test]
    fn positions_read_back_zero_included() {
        let m = masks(9);
        for (t, s) in [(0, 0), (3, 1), (7_000_123, 42), (i64::MAX, i64::MAX)] {
            let (st, ss) = m.show_position(t, s).unwrap();
            assert!(st >= 0 && ss >= 0);
            assert_eq!(m.read_position(st, ss), Some((t, s)));
        }
        assert_eq!(m.show_position(-1, 0), None);
        assert_eq!(m.read_position(0, -1), None);
    }

    #[test]
    fn consecutive_ids_look_unrelated_and_keys_differ() {
        let (a, b) = (masks(1), masks(2));
        let shown: Vec<i64> = (1..=1_000).map(|id| a.show_delivery(id).unwrap()).collect();
        // No order survives: about half of the neighbours go down.
        let downs = shown.windows(2).filter(|w| w[1] < w[0]).count();
        assert!((400..=600).contains(&downs), "{downs} of 999 went down");
        // Spread over the whole range: about half are above 2^62.
        let high = shown.iter().filter(|s| **s > 1 << 62).count();
        assert!((400..=600).contains(&high), "{high} of 1000 above 2^62");
        // Distinct, and another key shows other numbers.
        let mut sorted = shown;
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 1_000);
        let other = (1..=1_000)
            .filter(|id| b.show_delivery(*id) == a.show_delivery(*id))
            .count();
        assert_eq!(other, 0);
        // The three uses have keys of their own.
        assert_ne!(
            a.show_delivery(5).unwrap(),
            a.show_position(5, 5).unwrap().0
        );
        assert_ne!(
            a.show_position(5, 5).unwrap().0,
            a.show_position(5, 5).unwrap().1
        );
    }
}
