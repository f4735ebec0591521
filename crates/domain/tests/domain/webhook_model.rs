use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use timetrack_domain::model::webhook::*;
use timetrack_testkit::fakes::SeededRandom;

#[test]
fn generated_ids_parse_and_other_shapes_do_not() {
    let id = WebhookId::generate(&SeededRandom::new(3));
    assert_eq!(id.as_str().len(), 27);
    assert_eq!(WebhookId::parse(id.as_str()), Some(id));
    for bad in [
        "",
        "wh_",
        "wh_short",
        "xx_aaaaaaaaaaaaaaaaaaaaaaaa",
        "wh_aaaaaaaaaaaaaaa-",
        &format!("wh_{}", "a".repeat(65)),
        "wh_ééééééééééééééééé",
    ] {
        assert_eq!(WebhookId::parse(bad), None, "{bad}");
    }
}

#[test]
fn secrets_are_whsec_and_32_bytes_of_base64() {
    let secret = generate_secret(&SeededRandom::new(5));
    let encoded = secret.strip_prefix("whsec_").unwrap();
    assert_eq!(STANDARD.decode(encoded).unwrap().len(), 32);
    assert_ne!(secret, generate_secret(&SeededRandom::new(6)));
}
