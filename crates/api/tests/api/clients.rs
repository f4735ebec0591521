//! The core API's clients, and the `CLIENT_CREATED` outbox rows their creation writes.

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};

fn post(t: &TestApp, body: Value) -> actix_http::Request {
    test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(t.bearer())
        .set_json(body)
        .to_request()
}

#[actix_web::test]
async fn create_returns_201_with_defaults_and_every_field() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (status, _, body) = call(
        &app,
        post(&t, json!({"name": "  Globex  ", "phone": "+1 555 0100"})),
    )
    .await;
    assert_eq!(status, 201);
    let id = body["id"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok());
    assert_eq!(body["created_at"], body["updated_at"]);
    assert!(body["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        body,
        json!({
            "id": id, "name": "Globex", "type": "company", "status": "active", "email": null,
            "phone": "+1 555 0100", "address": null, "note": null, "currency": "EUR",
            "created_at": body["created_at"], "updated_at": body["updated_at"]
        })
    );
    let (status, _, fetched) = call(
        &app,
        test::TestRequest::get()
            .uri(&format!("/api/clients/{id}"))
            .insert_header(t.bearer())
            .to_request(),
    )
    .await;
    assert_eq!((status, &fetched), (200, &body));
}

#[actix_web::test]
async fn creation_records_one_event_and_a_delivery_per_matching_active_subscription() {
    let t = TestApp::new().await;
    let (other, _) = t.other_workspace().await;
    t.insert_subscription(
        "wh_match00000000000a",
        &t.workspace,
        &["CLIENT_CREATED", "TIMER_STARTED"],
        "ACTIVE",
    )
    .await;
    t.insert_subscription(
        "wh_match00000000000b",
        &t.workspace,
        &["CLIENT_CREATED"],
        "ACTIVE",
    )
    .await;
    t.insert_subscription(
        "wh_othertype0000000c",
        &t.workspace,
        &["TIMER_STARTED"],
        "ACTIVE",
    )
    .await;
    t.insert_subscription(
        "wh_disabled00000000d",
        &t.workspace,
        &["CLIENT_CREATED"],
        "DISABLED",
    )
    .await;
    t.insert_subscription(
        "wh_deleted000000000e",
        &t.workspace,
        &["CLIENT_CREATED"],
        "DELETED",
    )
    .await;
    t.insert_subscription(
        "wh_otherws000000000f",
        &other,
        &["CLIENT_CREATED"],
        "ACTIVE",
    )
    .await;
    let app = t.service().await;

    let (status, _, client) = call(
        &app,
        post(
            &t,
            json!({"name": "Initech", "email": "it@initech.example"}),
        ),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM events").await, 1);
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM events WHERE event_type = 'CLIENT_CREATED'")
            .await,
        1
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM deliveries WHERE status = 'PENDING' AND subscription_id IN ('wh_match00000000000a', 'wh_match00000000000b')").await,
        2
    );
    assert_eq!(t.scalar("SELECT count(*) AS n FROM deliveries").await, 2);

    // The stored body is the published CLIENT_CREATED payload of this client.
    let body: Value = {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            body: String,
        }
        let mut conn = t.pool.get().await.unwrap();
        let rows: Vec<Row> = diesel::sql_query("SELECT body FROM events")
            .load(&mut conn)
            .await
            .unwrap();
        serde_json::from_str(&rows[0].body).unwrap()
    };
    assert_eq!(
        body,
        json!({
            "id": client["id"], "name": "Initech", "email": "it@initech.example", "phone": null,
            "address": null, "status": "active", "type": "company",
            "workspace": {"id": t.workspace.id.to_string(), "name": "Acme"},
            "createdAt": client["created_at"], "updatedAt": client["updated_at"]
        })
    );
}

#[actix_web::test]
async fn a_duplicate_name_is_409_with_the_existing_id_and_rolls_back_its_event() {
    let t = TestApp::new().await;
    t.insert_subscription(
        "wh_match00000000000a",
        &t.workspace,
        &["CLIENT_CREATED"],
        "ACTIVE",
    )
    .await;
    let app = t.service().await;
    let (_, _, first) = call(&app, post(&t, json!({"name": "Straße GmbH"}))).await;
    let (status, _, body) = call(&app, post(&t, json!({"name": "STRASSE GMBH"}))).await;
    // Unicode lowercase of STRASSE is strasse, not straße: a different name.
    assert_eq!(status, 201, "{body}");
    let (status, _, body) = call(&app, post(&t, json!({"name": "straße gmbh"}))).await;
    assert_eq!(status, 409);
    assert_eq!(
        body,
        json!({"error": "Client already exists", "existing_id": first["id"]})
    );
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 2);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM events").await, 2);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM deliveries").await, 2);
}

#[actix_web::test]
async fn invalid_clients_are_400_and_nothing_is_stored() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let cases = [
        (json!({}), "name must not be empty"),
        (json!({"name": "  "}), "name must not be empty"),
        (
            json!({"name": "a".repeat(256)}),
            "name must be at most 255 characters",
        ),
        (
            json!({"name": "A", "type": "robot"}),
            "type must be company or individual, got: robot",
        ),
        (
            json!({"name": "A", "status": "archived"}),
            "status must be active or inactive, got: archived",
        ),
        (
            json!({"name": "A", "email": "not-an-email"}),
            "invalid e-mail address: not-an-email",
        ),
        (
            json!({"name": "A", "currency": "EURO"}),
            "currency must be an ISO 4217 code, got: EURO",
        ),
        (
            json!({"name": "A", "phone": "1".repeat(51)}),
            "phone must be at most 50 characters",
        ),
        (
            json!({"name": "A\u{0}B"}),
            "name must not contain NUL characters",
        ),
        (
            json!({"name": "A", "note": "x\u{0}"}),
            "note must not contain NUL characters",
        ),
        (json!({"name": 5}), "Invalid JSON body"),
        (json!(["A"]), "Invalid JSON body"),
    ];
    for (body, message) in cases {
        let (status, _, json) = call(&app, post(&t, body.clone())).await;
        assert_eq!(
            (status, error_of(&json)),
            (400, json!({"error": message})),
            "{body}"
        );
    }
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 0);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM events").await, 0);
}

#[actix_web::test]
async fn the_list_is_paginated_newest_first_by_cursor() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for n in 1..=5 {
        call(&app, post(&t, json!({"name": format!("Client {n}")}))).await;
    }
    let get = |uri: String| {
        test::TestRequest::get()
            .uri(&uri)
            .insert_header(t.bearer())
            .to_request()
    };
    let (status, _, page1) = call(&app, get("/api/clients?limit=2".into())).await;
    assert_eq!(status, 200);
    let names = |page: &Value| {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&page1), ["Client 5", "Client 4"]);
    let cursor = page1["next_cursor"].as_str().unwrap();
    let (_, _, page2) = call(&app, get(format!("/api/clients?limit=2&cursor={cursor}"))).await;
    assert_eq!(names(&page2), ["Client 3", "Client 2"]);
    let (_, _, page3) = call(
        &app,
        get(format!(
            "/api/clients?limit=2&cursor={}",
            page2["next_cursor"].as_str().unwrap()
        )),
    )
    .await;
    assert_eq!(names(&page3), ["Client 1"]);
    assert_eq!(page3["next_cursor"], Value::Null);
    let (_, _, all) = call(&app, get("/api/clients".into())).await;
    assert_eq!(all["data"].as_array().unwrap().len(), 5);

    // A stale cursor (its row deleted since) still continues after the same position.
    let last_of_page1 = page1["data"][1]["id"].as_str().unwrap();
    let req = test::TestRequest::delete()
        .uri(&format!("/api/clients/{last_of_page1}"))
        .insert_header(t.bearer())
        .to_request();
    assert_eq!(call(&app, req).await.0, 200);
    let (status, _, stale) = call(&app, get(format!("/api/clients?limit=2&cursor={cursor}"))).await;
    assert_eq!(status, 200);
    assert_eq!(names(&stale), ["Client 3", "Client 2"]);

    for (uri, message) in [
        ("/api/clients?cursor=forged!!", "invalid cursor"),
        ("/api/clients?cursor=MTI6bm9wZQ", "invalid cursor"),
        ("/api/clients?limit=0", "limit must be between 1 and 200"),
        ("/api/clients?limit=201", "limit must be between 1 and 200"),
        ("/api/clients?limit=many", "Invalid query parameters"),
    ] {
        let (status, _, body) = call(&app, get(uri.into())).await;
        assert_eq!(
            (status, error_of(&body)),
            (400, json!({"error": message})),
            "{uri}"
        );
    }
}

#[actix_web::test]
async fn update_changes_clears_and_keeps_names_unique() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, _, a) = call(
        &app,
        post(
            &t,
            json!({"name": "A", "email": "a@example.com", "note": "n"}),
        ),
    )
    .await;
    let (_, _, b) = call(&app, post(&t, json!({"name": "B"}))).await;
    let patch = |id: &Value, body: Value| {
        test::TestRequest::patch()
            .uri(&format!("/api/clients/{}", id.as_str().unwrap()))
            .insert_header(t.bearer())
            .set_json(body)
            .to_request()
    };
    let (status, _, updated) = call(
        &app,
        patch(
            &a["id"],
            json!({"email": null, "status": "inactive", "address": "1 Road"}),
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(updated["email"], Value::Null);
    assert_eq!(updated["note"], "n");
    assert_eq!(updated["status"], "inactive");
    assert_eq!(updated["address"], "1 Road");
    assert_ne!(updated["updated_at"], a["updated_at"]);

    let (status, _, body) = call(&app, patch(&a["id"], json!({"name": "b"}))).await;
    assert_eq!(
        (status, body),
        (
            409,
            json!({"error": "Client already exists", "existing_id": b["id"]})
        )
    );
    let (status, _, body) = call(&app, patch(&a["id"], json!({"currency": "nope"}))).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": "currency must be an ISO 4217 code, got: nope"})
        )
    );
}

#[actix_web::test]
async fn another_workspaces_client_and_malformed_ids_are_404() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, other_key) = t.other_workspace().await;
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(("Authorization", other_key.as_str()))
        .set_json(json!({"name": "Theirs"}))
        .to_request();
    let (_, _, theirs) = call(&app, req).await;
    let id = theirs["id"].as_str().unwrap();
    for (method, uri) in [
        ("GET", format!("/api/clients/{id}")),
        ("PATCH", format!("/api/clients/{id}")),
        ("DELETE", format!("/api/clients/{id}")),
        ("GET", "/api/clients/not-a-uuid".to_owned()),
        (
            "DELETE",
            "/api/clients/00000000-0000-0000-0000-000000000000".to_owned(),
        ),
    ] {
        let req = test::TestRequest::default()
            .method(method.parse().unwrap())
            .uri(&uri)
            .insert_header(t.bearer())
            .set_json(json!({"name": "Mine now"}))
            .to_request();
        let (status, _, body) = call(&app, req).await;
        assert_eq!(
            (status, body),
            (404, json!({"error": "Client not found"})),
            "{method} {uri}"
        );
    }
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM clients WHERE id = '{id}' AND name = 'Theirs'"
        ))
        .await,
        1
    );
}

#[actix_web::test]
async fn delete_removes_the_client_but_not_while_a_project_uses_it() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, _, used) = call(&app, post(&t, json!({"name": "Used"}))).await;
    let (_, _, free) = call(&app, post(&t, json!({"name": "Free"}))).await;
    t.execute(&format!(
        "INSERT INTO projects (id, workspace_id, client_id, name, created_at, updated_at) VALUES (gen_random_uuid(), '{}', '{}', 'P', now(), now())",
        t.workspace.id,
        used["id"].as_str().unwrap()
    ))
    .await;
    let delete = |id: &Value| {
        test::TestRequest::delete()
            .uri(&format!("/api/clients/{}", id.as_str().unwrap()))
            .insert_header(t.bearer())
            .to_request()
    };
    let (status, _, body) = call(&app, delete(&used["id"])).await;
    assert_eq!(
        (status, body),
        (409, json!({"error": "Client is used by projects"}))
    );
    let (status, _, body) = call(&app, delete(&free["id"])).await;
    assert_eq!((status, body), (200, json!({"success": true})));
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 1);
}

#[actix_web::test]
async fn a_patch_reports_type_and_status_first_then_an_unknown_client_then_the_other_fields() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let unknown = "00000000-0000-4000-8000-00000000abcd";
    let patch = |id: &str, body: Value| {
        test::TestRequest::patch()
            .uri(&format!("/api/clients/{id}"))
            .insert_header(t.bearer())
            .set_json(body)
            .to_request()
    };
    let (status, _, body) = call(&app, patch(unknown, json!({"type": "robot"}))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        error_of(&body),
        json!({"error": "type must be company or individual, got: robot"})
    );
    let (status, _, body) = call(&app, patch(unknown, json!({"email": "nope"}))).await;
    assert_eq!(
        (status, error_of(&body)),
        (404, json!({"error": "Client not found"}))
    );
    let (_, _, made) = call(&app, post(&t, json!({"name": "Acme"}))).await;
    let id = made["id"].as_str().unwrap();
    let (status, _, body) = call(&app, patch(id, json!({"email": "nope"}))).await;
    assert_eq!(
        (status, error_of(&body)),
        (400, json!({"error": "invalid e-mail address: nope"}))
    );
}
