//! `POST /api/integrations/automation/triggers/clients/find`.

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call};

const PATH: &str = "/api/integrations/automation/triggers/clients/find";

async fn create(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>,
        Error = actix_web::Error,
    >,
    t: &TestApp,
    body: Value,
) -> Value {
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(t.bearer())
        .set_json(body)
        .to_request();
    let (status, _, body) = call(app, req).await;
    assert_eq!(status, 201, "{body}");
    body
}

fn find(t: &TestApp, body: Value) -> actix_http::Request {
    test::TestRequest::post()
        .uri(PATH)
        .insert_header(t.bearer())
        .set_json(body)
        .to_request()
}

fn names(body: &Value) -> Vec<&str> {
    body.as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

#[actix_web::test]
async fn matches_substrings_ignoring_case_newest_first_with_every_field() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let acme = create(
        &app,
        &t,
        json!({"name": "Acme Corporation", "email": "ops@acme.example", "note": "vip"}),
    )
    .await;
    create(&app, &t, json!({"name": "Other Ltd"})).await;
    let small = create(
        &app,
        &t,
        json!({"name": "Tiny ACME shop", "type": "individual", "status": "inactive"}),
    )
    .await;

    let (status, content_type, body) = call(
        &app,
        find(&t, json!({"workspace_id": t.workspace.id, "name": "acme"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "application/json");
    assert_eq!(body, json!([small, acme]));
    let first = body[0].as_object().unwrap();
    assert_eq!(
        first.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "id",
            "name",
            "type",
            "status",
            "email",
            "phone",
            "address",
            "note",
            "currency",
            "created_at",
            "updated_at"
        ]
    );
    assert_eq!(body[0]["email"], Value::Null);
    assert_eq!(body[0]["status"], "inactive");
    assert_eq!(body[0]["currency"], "EUR");
}

#[actix_web::test]
async fn unicode_lowercase_matches_accents_cyrillic_and_greek() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for name in ["École Supérieure", "ПРИВЕТ Мир", "ΑΘΗΝΑ Ltd"] {
        create(&app, &t, json!({"name": name})).await;
    }
    for (needle, expected) in [
        ("école", "École Supérieure"),
        ("ÉCOLE", "École Supérieure"),
        ("привет", "ПРИВЕТ Мир"),
        ("αθηνα", "ΑΘΗΝΑ Ltd"),
    ] {
        let (status, _, body) = call(
            &app,
            find(&t, json!({"workspace_id": t.workspace.id, "name": needle})),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(names(&body), [expected], "{needle}");
    }
}

#[actix_web::test]
async fn percent_underscore_and_backslash_are_literal() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for name in [
        "100% Pure",
        "1000 Pure",
        "a_b",
        "axb",
        "back\\slash",
        "backslash",
    ] {
        create(&app, &t, json!({"name": name})).await;
    }
    for (needle, expected) in [
        ("%", vec!["100% Pure"]),
        ("0% p", vec!["100% Pure"]),
        ("_", vec!["a_b"]),
        ("\\", vec!["back\\slash"]),
        ("a_b", vec!["a_b"]),
    ] {
        let (_, _, body) = call(
            &app,
            find(&t, json!({"workspace_id": t.workspace.id, "name": needle})),
        )
        .await;
        assert_eq!(names(&body), expected, "{needle}");
    }
}

#[actix_web::test]
async fn hostile_strings_are_just_text() {
    let t = TestApp::new().await;
    let app = t.service().await;
    create(&app, &t, json!({"name": "O'Brien & Sons"})).await;
    for needle in [
        "'",
        "o'b",
        "' OR '1'='1",
        "\"; DROP TABLE clients; --",
        &"é".repeat(255),
        "\u{0}",
    ] {
        let (status, _, body) = call(
            &app,
            find(&t, json!({"workspace_id": t.workspace.id, "name": needle})),
        )
        .await;
        assert_eq!(status, 200, "{needle:?}");
        let expected: Vec<&str> = if needle.to_lowercase().contains("o'b") || needle == "'" {
            vec!["O'Brien & Sons"]
        } else {
            vec![]
        };
        assert_eq!(names(&body), expected, "{needle:?}");
    }
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 1);
}

#[actix_web::test]
async fn no_match_is_an_empty_array() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (status, _, body) = call(
        &app,
        find(
            &t,
            json!({"workspace_id": t.workspace.id, "name": "nothing"}),
        ),
    )
    .await;
    assert_eq!((status, body), (200, json!([])));
}

#[actix_web::test]
async fn at_most_100_results_the_newest_and_ties_broken_by_id() {
    let t = TestApp::new().await;
    let app = t.service().await;
    // 105 clients, the last 5 sharing one created_at.
    t.execute(&format!(
        "INSERT INTO clients (id, workspace_id, name, name_lower, type, status, currency, created_at, updated_at) \
         SELECT gen_random_uuid(), '{}', 'Client ' || g, 'client ' || g, 'company', 'active', 'EUR', \
         timestamptz '2026-01-01' + make_interval(secs => least(g, 100)), now() FROM generate_series(1, 105) g",
        t.workspace.id
    ))
    .await;
    // Three characters or more go through the trigram index; one or two walk the newest-first
    // index: the same rules either way.
    for needle in ["client", "nt", "c"] {
        let (status, _, body) = call(
            &app,
            find(&t, json!({"workspace_id": t.workspace.id, "name": needle})),
        )
        .await;
        assert_eq!(status, 200, "{needle}");
        let found = body.as_array().unwrap();
        assert_eq!(found.len(), 100, "{needle}");
        // The five with the newest (shared) time come first, ordered by id descending.
        let ties: Vec<&str> = found[..6]
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        let mut sorted = ties[..6].to_vec();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(ties, sorted, "{needle}");
        assert!(found.iter().all(|c| c["name"] != "Client 1"
            && c["name"] != "Client 2"
            && c["name"] != "Client 3"
            && c["name"] != "Client 4"
            && c["name"] != "Client 5"));

        // 3.0 is the integer 3 to JSON Schema, so to the OpenAPI description as well.
        for limit in [json!(3), json!(3.0)] {
            let (_, _, body) = call(
                &app,
                find(
                    &t,
                    json!({"workspace_id": t.workspace.id, "name": needle, "limit": limit}),
                ),
            )
            .await;
            assert_eq!(body.as_array().unwrap().len(), 3, "{needle} {limit}");
        }
    }
}

#[actix_web::test]
async fn another_workspaces_clients_are_never_returned() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (other, other_key) = t.other_workspace().await;
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(("Authorization", other_key.as_str()))
        .set_json(json!({"name": "Acme Secret"}))
        .to_request();
    assert_eq!(call(&app, req).await.0, 201);
    create(&app, &t, json!({"name": "Acme Mine"})).await;

    for needle in ["acme", "ac", "a"] {
        let (_, _, body) = call(
            &app,
            find(&t, json!({"workspace_id": t.workspace.id, "name": needle})),
        )
        .await;
        assert_eq!(names(&body), ["Acme Mine"], "{needle}");
    }

    let (status, _, body) = call(
        &app,
        find(&t, json!({"workspace_id": other.id, "name": "acme"})),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
}

#[actix_web::test]
async fn invalid_parameters_are_400_with_the_published_message() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let ws = t.workspace.id.to_string();
    let bodies: Vec<Vec<u8>> = vec![
        json!({"name": "acme"}).to_string().into(),
        json!({"workspace_id": ws}).to_string().into(),
        json!({"workspace_id": "not-a-uuid", "name": "acme"})
            .to_string()
            .into(),
        json!({"workspace_id": "", "name": "acme"})
            .to_string()
            .into(),
        json!({"workspace_id": 12, "name": "acme"})
            .to_string()
            .into(),
        json!({"workspace_id": ws, "name": 5}).to_string().into(),
        json!({"workspace_id": ws, "name": null}).to_string().into(),
        json!({"workspace_id": ws, "name": ""}).to_string().into(),
        json!({"workspace_id": ws, "name": "a".repeat(256)})
            .to_string()
            .into(),
        json!({"workspace_id": ws, "name": "a", "limit": 0})
            .to_string()
            .into(),
        json!({"workspace_id": ws, "name": "a", "limit": 101})
            .to_string()
            .into(),
        json!({"workspace_id": ws, "name": "a", "limit": "ten"})
            .to_string()
            .into(),
        json!({"workspace_id": ws, "name": "a", "limit": 2.5})
            .to_string()
            .into(),
        json!({"workspace_id": ws, "name": "a", "limit": -3})
            .to_string()
            .into(),
        json!([ws, "acme"]).to_string().into(),
        b"{not json".to_vec(),
        b"".to_vec(),
        vec![0xff, 0xfe, 0x00],
    ];
    for body in bodies {
        let req = test::TestRequest::post()
            .uri(PATH)
            .insert_header(t.bearer())
            .insert_header(("content-type", "application/json"))
            .set_payload(body.clone())
            .to_request();
        let (status, content_type, json) = call(&app, req).await;
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
        assert_eq!(content_type, "application/json");
        assert_eq!(
            json["error"],
            "Invalid request parameters",
            "{}",
            String::from_utf8_lossy(&body)
        );
        assert!(
            json["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{json}"
        );
    }
}

#[actix_web::test]
async fn the_detail_says_which_field_is_wrong_and_why() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let ws = t.workspace.id.to_string();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            json!({"name": "acme"}).to_string().into(),
            "missing field `workspace_id`",
        ),
        (
            json!({"workspace_id": ws, "name": "acme", "limit": "ten"})
                .to_string()
                .into(),
            "limit: invalid type: string \"ten\"",
        ),
        (
            json!({"workspace_id": 5, "name": "acme"})
                .to_string()
                .into(),
            "workspace_id: invalid type: integer `5`",
        ),
        (
            b"{not json".to_vec(),
            "the body is not valid JSON: key must be a string",
        ),
        (b"".to_vec(), "the body is empty"),
        (
            json!([ws, "acme"]).to_string().into(),
            "the body must be a JSON object",
        ),
    ];
    for (body, detail) in cases {
        let req = test::TestRequest::post()
            .uri(PATH)
            .insert_header(t.bearer())
            .set_payload(body.clone())
            .to_request();
        let (status, _, json) = call(&app, req).await;
        assert_eq!(status, 400);
        assert_eq!(json["error"], "Invalid request parameters");
        assert!(
            json["detail"].as_str().unwrap().starts_with(detail),
            "{}: {json}",
            String::from_utf8_lossy(&body)
        );
    }
}

#[actix_web::test]
async fn a_missing_key_is_401_before_the_body_is_looked_at() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let req = test::TestRequest::post()
        .uri(PATH)
        .set_payload("{bad")
        .to_request();
    let (status, _, body) = call(&app, req).await;
    assert_eq!((status, body), (401, json!({"error": "Unauthorized"})));
}

#[actix_web::test]
async fn an_oversized_body_is_413() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let body = json!({"workspace_id": t.workspace.id, "name": "a".repeat(70_000)});
    let (status, _, json) = call(&app, find(&t, body)).await;
    assert_eq!((status, json), (413, json!({"error": "Payload too large"})));
}

#[actix_web::test]
async fn only_post_is_served() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let req = test::TestRequest::get()
        .uri(PATH)
        .insert_header(t.bearer())
        .to_request();
    let (status, _, body) = call(&app, req).await;
    assert_eq!(
        (status, body),
        (405, json!({"error": "Method not allowed"}))
    );
}
