use sha2::{Digest, Sha256};
use timetrack_domain::model::api_key::*;
use timetrack_testkit::fakes::SeededRandom;

#[test]
fn generated_keys_have_the_documented_shape() {
    let random = SeededRandom::new(7);
    let key = ApiKeySecret::generate(&random);
    assert_eq!(key.expose().len(), 46);
    assert!(key.expose().starts_with("tt_"));
    assert_eq!(ApiKeySecret::parse(key.expose()), Some(key.clone()));
    assert_ne!(ApiKeySecret::generate(&random), key);
}

#[test]
fn parse_rejects_every_other_shape() {
    let body = "a".repeat(43);
    assert!(ApiKeySecret::parse(&format!("tt_{body}")).is_some());
    assert!(ApiKeySecret::parse(&format!("tk_{body}")).is_none());
    assert!(ApiKeySecret::parse(&format!("tt_{}", "a".repeat(42))).is_none());
    assert!(ApiKeySecret::parse(&format!("tt_{}", "a".repeat(44))).is_none());
    assert!(ApiKeySecret::parse(&format!("tt_{}-", "a".repeat(42))).is_none());
    assert!(ApiKeySecret::parse(&format!("tt_{}é", "a".repeat(41))).is_none());
    assert!(ApiKeySecret::parse("").is_none());
}

#[test]
fn hash_is_sha256_of_the_key_text() {
    let key = ApiKeySecret::parse(&format!("tt_{}", "a".repeat(43))).unwrap();
    let expected: [u8; 32] = Sha256::digest(key.expose().as_bytes()).into();
    assert_eq!(key.hash(), KeyHash(expected));
}

#[test]
fn debug_output_does_not_reveal_the_key() {
    let key = ApiKeySecret::generate(&SeededRandom::new(1));
    let shown = format!("{key:?}");
    assert!(!shown.contains(&key.expose()[10..]));
    assert!(shown.contains(&key.shown_prefix()));
}
