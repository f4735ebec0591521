//! Random tokens for keys, webhook ids and secrets.

use crate::system::RandomSource;

const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `len` characters drawn uniformly from `[0-9A-Za-z]` (about 5.95 bits each).
pub(crate) fn base62(random: &dyn RandomSource, len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        random.fill(&mut buf);
        // 248 = 4 * 62: rejecting larger bytes keeps every symbol equally likely.
        for byte in buf.iter().filter(|b| **b < 248) {
            if out.len() == len {
                break;
            }
            out.push(ALPHABET[usize::from(*byte) % 62] as char);
        }
    }
    out
}
