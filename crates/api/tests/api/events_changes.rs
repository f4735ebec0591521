//! Change and deletion events (`events.md` section 1): each written with its change, with
//! `changedFields` on updates, none for a PATCH that changes nothing, and the project routes
//! that give project events something to report.

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};

/// Sends `body` to `path` with `method` as the test's user (or with `auth`): status and body.
async fn send<S, B>(
    t: &TestApp,
    app: &S,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    send_as(app, &t.bearer().1, method, path, body).await
}

async fn send_as<S, B>(
    app: &S,
    auth: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let mut req = test::TestRequest::default()
        .method(method.parse().unwrap())
        .uri(path)
        .insert_header(("Authorization", auth.to_owned()));
    if let Some(body) = body {
        req = req.set_json(body);
    }
    let (status, _, answer) = call(app, req.to_request()).await;
    (status, answer)
}

fn keys(payload: &Value) -> Vec<&str> {
    payload
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[actix_web::test]
async fn client_changes_and_deletions_are_events_and_a_patch_that_changes_nothing_is_not() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (status, acme) = send(
        &t,
        &app,
        "POST",
        "/api/clients",
        Some(json!({"name": "Acme", "email": "a@acme.example"})),
    )
    .await;
    assert_eq!(status, 201, "{acme}");
    let path = format!("/api/clients/{}", acme["id"].as_str().unwrap());
    let created = t.events("CLIENT_CREATED").await.remove(0);

    // The same values again, and no field at all: no change, no event, no new updatedAt.
    for body in [
        json!({"name": "Acme", "email": "a@acme.example"}),
        json!({}),
    ] {
        let (status, same) = send(&t, &app, "PATCH", &path, Some(body)).await;
        assert_eq!(status, 200, "{same}");
        assert_eq!(same["updated_at"], acme["updated_at"]);
    }
    assert!(t.events("CLIENT_UPDATED").await.is_empty());

    let (status, renamed) = send(
        &t,
        &app,
        "PATCH",
        &path,
        Some(json!({"name": "Acme Corp", "phone": "+1 555", "email": "a@acme.example"})),
    )
    .await;
    assert_eq!(status, 200, "{renamed}");
    let updated = t.events("CLIENT_UPDATED").await;
    assert_eq!(updated.len(), 1);
    let updated = &updated[0];
    assert_eq!(updated["changedFields"], json!(["name", "phone"]));
    assert_eq!(updated["name"], "Acme Corp");
    assert_eq!(updated["phone"], "+1 555");
    assert_eq!(updated["createdAt"], created["createdAt"]);
    assert_ne!(updated["updatedAt"], created["updatedAt"]);
    // The CLIENT_CREATED shape, plus changedFields at the end.
    let mut shape = keys(&created);
    shape.push("changedFields");
    assert_eq!(keys(updated), shape);

    // A change the payload does not show (the note) is saved, without an event.
    let (status, noted) = send(&t, &app, "PATCH", &path, Some(json!({"note": "VIP"}))).await;
    assert_eq!((status, &noted["note"]), (200, &json!("VIP")));
    assert_eq!(t.events("CLIENT_UPDATED").await.len(), 1);

    // Another workspace's key sees no such client, and changes nothing.
    let (_, other) = t.other_workspace().await;
    let (status, body) = send_as(&app, &other, "DELETE", &path, None).await;
    assert_eq!(
        (status, error_of(&body)),
        (404, json!({"error": "Client not found"}))
    );
    assert!(t.events("CLIENT_DELETED").await.is_empty());

    let (status, body) = send(&t, &app, "DELETE", &path, None).await;
    assert_eq!((status, body), (200, json!({"success": true})));
    let deleted = t.events("CLIENT_DELETED").await;
    assert_eq!(deleted.len(), 1);
    assert_eq!(
        keys(&deleted[0]),
        keys(&created),
        "the CLIENT_CREATED shape"
    );
    assert_eq!(deleted[0]["name"], "Acme Corp", "as it was");
    let (status, _) = send(&t, &app, "DELETE", &path, None).await;
    assert_eq!(status, 404);
    assert_eq!(t.events("CLIENT_DELETED").await.len(), 1);
}

#[actix_web::test]
async fn projects_are_read_changed_and_deleted_with_their_events() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, acme) = send(
        &t,
        &app,
        "POST",
        "/api/clients",
        Some(json!({"name": "Acme"})),
    )
    .await;
    let acme_id = acme["id"].as_str().unwrap().to_owned();
    let (status, site) = send(
        &t,
        &app,
        "POST",
        "/api/projects",
        Some(json!({"name": "Site"})),
    )
    .await;
    assert_eq!(status, 201, "{site}");
    let path = format!("/api/projects/{}", site["id"].as_str().unwrap());

    let created = t.events("PROJECT_CREATED").await;
    assert_eq!(created.len(), 1);
    let created = &created[0];
    assert_eq!(
        keys(created),
        [
            "id",
            "name",
            "client",
            "workspace",
            "createdAt",
            "updatedAt"
        ]
    );
    assert_eq!(created["id"], site["id"]);
    assert_eq!(created["client"], Value::Null);
    assert_eq!(created["workspace"]["id"], t.workspace.id.to_string());
    assert_eq!(created["workspace"]["name"], t.workspace.name);

    let (status, got) = send(&t, &app, "GET", &path, None).await;
    assert_eq!((status, &got), (200, &site));

    // Nothing changes: no event.
    let (status, same) = send(&t, &app, "PATCH", &path, Some(json!({"name": "Site"}))).await;
    assert_eq!((status, &same), (200, &site));
    assert!(t.events("PROJECT_UPDATED").await.is_empty());

    let (status, moved) = send(
        &t,
        &app,
        "PATCH",
        &path,
        Some(json!({"name": "Site 2", "client_id": acme_id})),
    )
    .await;
    assert_eq!(status, 200, "{moved}");
    assert_eq!(moved["client_id"], acme_id.as_str());
    let updated = t.events("PROJECT_UPDATED").await;
    assert_eq!(updated.len(), 1);
    assert_eq!(updated[0]["changedFields"], json!(["client", "name"]));
    assert_eq!(updated[0]["client"], json!({"id": acme_id, "name": "Acme"}));

    // Refusals change nothing.
    let (_, other) = t.other_workspace().await;
    let (_, theirs) = send_as(
        &app,
        &other,
        "POST",
        "/api/clients",
        Some(json!({"name": "X"})),
    )
    .await;
    for (body, message) in [
        (json!({"name": ""}), "name must not be empty"),
        (
            json!({"client_id": theirs["id"]}),
            "client_id does not name a client of this workspace",
        ),
    ] {
        let (status, answer) = send(&t, &app, "PATCH", &path, Some(body)).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(error_of(&answer)["error"], message);
    }
    for (method, body) in [
        ("GET", None),
        ("PATCH", Some(json!({"name": "Mine"}))),
        ("DELETE", None),
    ] {
        let (status, answer) = send_as(&app, &other, method, &path, body).await;
        assert_eq!(
            (status, error_of(&answer)),
            (404, json!({"error": "Project not found"})),
            "{method}"
        );
    }
    for bad in [
        "/api/projects/not-a-uuid",
        "/api/projects/00000000-0000-4000-8000-000000000000",
    ] {
        let (status, _) = send(&t, &app, "GET", bad, None).await;
        assert_eq!(status, 404, "{bad}");
    }
    assert_eq!(t.events("PROJECT_UPDATED").await.len(), 1);

    // Clearing the client.
    let (status, cleared) = send(&t, &app, "PATCH", &path, Some(json!({"client_id": null}))).await;
    assert_eq!((status, &cleared["client_id"]), (200, &Value::Null));
    assert_eq!(
        t.events("PROJECT_UPDATED").await[1]["changedFields"],
        json!(["client"])
    );

    // In use by a time entry: 409, kept.
    let (status, entry) = send(
        &t,
        &app,
        "POST",
        "/api/time-entries",
        Some(
            json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z",
                    "project_id": site["id"]}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{entry}");
    let (status, answer) = send(&t, &app, "DELETE", &path, None).await;
    assert_eq!(
        (status, error_of(&answer)),
        (409, json!({"error": "Project is used by time entries"}))
    );
    assert!(t.events("PROJECT_DELETED").await.is_empty());
    let entry_path = format!("/api/time-entries/{}", entry["id"].as_str().unwrap());
    assert_eq!(send(&t, &app, "DELETE", &entry_path, None).await.0, 200);

    let (status, answer) = send(&t, &app, "DELETE", &path, None).await;
    assert_eq!((status, answer), (200, json!({"success": true})));
    let deleted = t.events("PROJECT_DELETED").await;
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0]["name"], "Site 2", "as it was");
    assert_eq!(keys(&deleted[0]), keys(created));
    assert_eq!(send(&t, &app, "GET", &path, None).await.0, 404);
}

#[actix_web::test]
async fn time_entry_changes_and_deletions_are_events_with_the_entry_shape() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, site) = send(
        &t,
        &app,
        "POST",
        "/api/projects",
        Some(json!({"name": "Site"})),
    )
    .await;
    let (status, entry) = send(
        &t,
        &app,
        "POST",
        "/api/time-entries",
        Some(
            json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z",
                    "description": "Draft"}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{entry}");
    let path = format!("/api/time-entries/{}", entry["id"].as_str().unwrap());
    let created = t.events("TIME_ENTRY_CREATED").await.remove(0);

    let (status, _) = send(
        &t,
        &app,
        "PATCH",
        &path,
        Some(json!({"description": "Draft"})),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        t.events("TIME_ENTRY_UPDATED").await.is_empty(),
        "no change, no event"
    );

    let (status, changed) = send(
        &t,
        &app,
        "PATCH",
        &path,
        Some(json!({"end": "2026-01-05T11:00:00Z", "project_id": site["id"], "billable": false})),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    let updated = t.events("TIME_ENTRY_UPDATED").await;
    assert_eq!(updated.len(), 1);
    let updated = &updated[0];
    assert_eq!(updated["action"], "update");
    assert_eq!(
        updated["changedFields"],
        json!(["duration", "endTime", "project"])
    );
    assert_eq!(updated["duration"], 7200);
    let mut shape = keys(&created);
    shape.push("changedFields");
    assert_eq!(keys(updated), shape);

    // A running timer's update has the timer-started shape.
    let (status, running) = send(
        &t,
        &app,
        "POST",
        "/api/time-entries/start",
        Some(json!({"description": "Live"})),
    )
    .await;
    assert_eq!(status, 201, "{running}");
    let running_path = format!("/api/time-entries/{}", running["id"].as_str().unwrap());
    let (status, _) = send(
        &t,
        &app,
        "PATCH",
        &running_path,
        Some(json!({"description": "Live call", "billable": true})),
    )
    .await;
    assert_eq!(status, 200);
    let live = t.events("TIME_ENTRY_UPDATED").await.remove(1);
    assert_eq!(live["changedFields"], json!(["billable", "description"]));
    assert!(live.get("endTime").is_none() && live.get("duration").is_none());

    // Deletions: the entry as it was, `action: "delete"`.
    assert_eq!(send(&t, &app, "DELETE", &path, None).await.0, 200);
    assert_eq!(send(&t, &app, "DELETE", &running_path, None).await.0, 200);
    let deleted = t.events("TIME_ENTRY_DELETED").await;
    assert_eq!(deleted.len(), 2);
    assert_eq!(deleted[0]["action"], "delete");
    assert_eq!(deleted[0]["endTime"], "2026-01-05T11:00:00Z");
    assert_eq!(deleted[0]["project"]["name"], "Site");
    assert_eq!(keys(&deleted[0]), keys(&created));
    assert!(
        deleted[1].get("endTime").is_none(),
        "a running timer has no end"
    );
    assert_eq!(send(&t, &app, "DELETE", &path, None).await.0, 404);
    assert_eq!(t.events("TIME_ENTRY_DELETED").await.len(), 2);
}

#[actix_web::test]
async fn the_new_types_are_subscribable_and_delivered_through_their_filters() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, acme) = send(
        &t,
        &app,
        "POST",
        "/api/clients",
        Some(json!({"name": "Acme"})),
    )
    .await;
    let acme_id = acme["id"].as_str().unwrap().to_owned();
    let every: Vec<&str> = vec![
        "TIME_ENTRY_UPDATED",
        "TIME_ENTRY_DELETED",
        "CLIENT_UPDATED",
        "CLIENT_DELETED",
        "PROJECT_CREATED",
        "PROJECT_UPDATED",
        "PROJECT_DELETED",
    ];
    let subscribe = |events: Value, filters: Value| {
        send(
            &t,
            &app,
            "POST",
            "/api/integrations/automation/webhooks/subscribe",
            Some(
                json!({"url": "https://hooks.example.com/n", "events": events, "filters": filters}),
            ),
        )
    };
    let (status, all) = subscribe(json!(every), json!({})).await;
    assert_eq!(status, 201, "{all}");
    assert_eq!(all["webhook"]["events"], json!(every));
    let all = all["webhook"]["id"].as_str().unwrap().to_owned();
    let (status, of_acme) = subscribe(
        json!(["PROJECT_CREATED", "CLIENT_UPDATED"]),
        json!({"client_ids": [acme_id]}),
    )
    .await;
    assert_eq!(status, 201, "{of_acme}");
    let of_acme = of_acme["webhook"]["id"].as_str().unwrap().to_owned();

    // Filters that cannot match a listed type are refused, naming both.
    for (events, filters, message) in [
        (
            json!(["CLIENT_UPDATED"]),
            json!({"project_ids": [acme_id]}),
            "Invalid filter: project_ids does not apply to CLIENT_UPDATED",
        ),
        (
            json!(["PROJECT_DELETED"]),
            json!({"user_ids": [t.user.id.to_string()]}),
            "Invalid filter: user_ids does not apply to PROJECT_DELETED",
        ),
        (
            json!(["CLIENT_DELETED"]),
            json!({"billable": true}),
            "Invalid filter: billable does not apply to CLIENT_DELETED",
        ),
    ] {
        let (status, answer) = subscribe(events, filters).await;
        assert_eq!(
            (status, error_of(&answer)),
            (400, json!({"error": message}))
        );
    }

    send(
        &t,
        &app,
        "POST",
        "/api/projects",
        Some(json!({"name": "Mine", "client_id": acme_id})),
    )
    .await;
    send(
        &t,
        &app,
        "POST",
        "/api/projects",
        Some(json!({"name": "Loose"})),
    )
    .await;
    send(
        &t,
        &app,
        "PATCH",
        &format!("/api/clients/{acme_id}"),
        Some(json!({"name": "Acme 2"})),
    )
    .await;
    let delivered =
        |id: &str| format!("SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}'");
    assert_eq!(
        t.scalar(&delivered(&all)).await,
        3,
        "two projects and a client change"
    );
    assert_eq!(
        t.scalar(&delivered(&of_acme)).await,
        2,
        "Acme's project and Acme's change, not the loose project"
    );
}
