//! Installation-wide counters shown to tenants only through a keyed permutation.
//!
//! Deliveries are numbered by one sequence for the whole installation, and the catch-up feed's
//! positions are transaction ids and an insert sequence of the whole installation. Shown as they
//! are, two of a tenant's own numbers a minute apart would tell it how much every other tenant did
//! in that minute. [`Masks`] shows each such number through a pseudorandom permutation keyed by a
//! secret of the installation: a shown number is a non-negative integer like the one it stands
//! for (delivery ids keep their decimal form), one stored number has one shown form in
//! every process, and nothing about the order or the distance of two stored numbers can be read
//! from their shown forms without the key.
//!
//! The permutation is a balanced Feistel network ([`ROUNDS`] rounds of SipHash-2-4, each round
//! keyed apart; 54 bits for delivery ids, which stay within [`MAX_SHOWN_DELIVERY_ID`], 64 for the
//! feed's numbers), narrowed to the wanted range by cycle walking:
//! a value outside the range is permuted again until it falls inside, which is a permutation of
//! the range because the whole network is a permutation of its values (about two passes on
//! average). Each use (delivery ids, the feed's transaction ids, its sequences) has its own
//! round keys, derived from the installation's key with its own label, so the shown forms of two
//! uses tell nothing about each other. The design is in ADR 0018.

use std::hash::Hasher;

use siphasher::sip::SipHasher24;

/// Feistel rounds: four make a strong pseudorandom permutation of a pseudorandom function; two
/// more are a margin.
pub const ROUNDS: usize = 6;

/// The largest delivery id shown or read: 2^53 - 1, the largest integer a JSON number keeps
/// exactly in JavaScript (`Number.MAX_SAFE_INTEGER`), so that a client that turns an id into a
/// number (an automation platform's JavaScript, say) never changes it. An installation reaches it
/// after 9 × 10^15 deliveries.
pub const MAX_SHOWN_DELIVERY_ID: i64 = (1 << 53) - 1;

/// One keyed permutation of the values of `2 * half_bits` bits.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Feistel {
    keys: [(u64, u64); ROUNDS],
    /// The bits of each half (at most 32).
    half_bits: u32,
}

impl Feistel {
    /// The round keys of `label` under the installation's `key`, for values of `2 * half_bits`
    /// bits.
    fn derive(key: &[u8; 32], label: &str, half_bits: u32) -> Self {
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
        Self { keys, half_bits }
    }

    /// The bits of one half, set.
    fn half_mask(&self) -> u64 {
        u64::MAX >> (64 - self.half_bits)
    }

    fn round(&self, round: usize, half: u64) -> u64 {
        let (k0, k1) = self.keys[round];
        let mut h = SipHasher24::new_with_keys(k0, k1);
        h.write_u64(half);
        // The low bits of a 64-bit pseudorandom value.
        h.finish() & self.half_mask()
    }

    fn split(&self, value: u64) -> (u64, u64) {
        (
            (value >> self.half_bits) & self.half_mask(),
            value & self.half_mask(),
        )
    }

    fn join(&self, left: u64, right: u64) -> u64 {
        (left << self.half_bits) | right
    }

    fn forward(&self, value: u64) -> u64 {
        let (mut left, mut right) = self.split(value);
        for round in 0..ROUNDS {
            (left, right) = (right, left ^ self.round(round, right));
        }
        self.join(left, right)
    }

    fn backward(&self, value: u64) -> u64 {
        let (mut left, mut right) = self.split(value);
        for round in (0..ROUNDS).rev() {
            (left, right) = (right ^ self.round(round, left), left);
        }
        self.join(left, right)
    }

    /// `value` permuted within `range` (cycle walking); `None` outside it.
    fn mask(&self, value: i64, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        Self::walk(value, &range, |v| self.forward(v))
    }

    /// The inverse of [`mask`](Self::mask).
    fn unmask(&self, shown: i64, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        Self::walk(shown, &range, |v| self.backward(v))
    }

    /// `step` applied until the value falls in `range`, which must lie within the network's
    /// values.
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
            // 54 bits: the ids up to 2^53 - 1 are half of them, so about two passes a number.
            delivery: Feistel::derive(key, "timetrack delivery id", 27),
            transaction: Feistel::derive(key, "timetrack feed transaction", 32),
            sequence: Feistel::derive(key, "timetrack feed sequence", 32),
        }
    }

    /// How a delivery id (1 to [`MAX_SHOWN_DELIVERY_ID`]) is shown: another number of that
    /// range, so its decimal form has 1 to 16 digits and no leading zero. `None` outside it.
    pub fn show_delivery(&self, id: i64) -> Option<i64> {
        self.delivery.mask(id, 1..=MAX_SHOWN_DELIVERY_ID)
    }

    /// The delivery id shown as `shown`; `None` for a number outside 1 to
    /// [`MAX_SHOWN_DELIVERY_ID`].
    pub fn read_delivery(&self, shown: i64) -> Option<i64> {
        self.delivery.unmask(shown, 1..=MAX_SHOWN_DELIVERY_ID)
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
        for id in (1..2_000).chain([MAX_SHOWN_DELIVERY_ID, MAX_SHOWN_DELIVERY_ID - 1, 1 << 52]) {
            let shown = m.show_delivery(id).unwrap();
            assert!(
                (1..=MAX_SHOWN_DELIVERY_ID).contains(&shown),
                "{id} -> {shown}"
            );
            assert_eq!(m.read_delivery(shown), Some(id), "{id} -> {shown}");
        }
        for outside in [0, -5, MAX_SHOWN_DELIVERY_ID + 1, i64::MAX] {
            assert_eq!(m.show_delivery(outside), None, "{outside}");
            assert_eq!(m.read_delivery(outside), None, "{outside}");
        }
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
        // Spread over the whole range: about half are above 2^52.
        let high = shown.iter().filter(|s| **s > 1 << 52).count();
        assert!((400..=600).contains(&high), "{high} of 1000 above 2^52");
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
