//! Projects, tasks and tags.

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};

fn post(t: &TestApp, uri: &str, body: Value) -> actix_http::Request {
    test::TestRequest::post()
        .uri(uri)
        .insert_header(t.bearer())
        .set_json(body)
        .to_request()
}

#[actix_web::test]
async fn projects_tasks_and_tags_are_created_and_listed_in_the_workspace() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, _, client) = call(&app, post(&t, "/api/clients", json!({"name": "Acme"}))).await;
    let (status, _, project) = call(
        &app,
        post(
            &t,
            "/api/projects",
            json!({"name": "Site", "client_id": client["id"]}),
        ),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(project["client_id"], client["id"]);
    assert_eq!(
        project
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["id", "name", "client_id", "created_at", "updated_at"]
    );
    let pid = project["id"].as_str().unwrap();
    let (status, _, task) = call(
        &app,
        post(
            &t,
            &format!("/api/projects/{pid}/tasks"),
            json!({"name": "Design"}),
        ),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(task["project_id"], project["id"]);
    let (status, _, tag) = call(&app, post(&t, "/api/tags", json!({"name": "Urgent"}))).await;
    assert_eq!(status, 201);
    let (status, _, body) = call(&app, post(&t, "/api/tags", json!({"name": "URGENT"}))).await;
    assert_eq!(
        (status, body),
        (
            409,
            json!({"error": "Tag already exists", "existing_id": tag["id"]})
        )
    );

    let get = |uri: &str| {
        test::TestRequest::get()
            .uri(uri)
            .insert_header(t.bearer())
            .to_request()
    };
    let (_, _, projects) = call(&app, get("/api/projects")).await;
    assert_eq!(projects, json!({"data": [project], "next_cursor": null}));
    let (_, _, tasks) = call(&app, get(&format!("/api/projects/{pid}/tasks"))).await;
    assert_eq!(tasks, json!({"data": [task], "next_cursor": null}));
    let (_, _, tags) = call(&app, get("/api/tags")).await;
    assert_eq!(tags["data"][0]["name"], "Urgent");
}

#[actix_web::test]
async fn references_into_another_workspace_are_refused() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, other_key) = t.other_workspace().await;
    let as_other = |uri: &str, body: Value| {
        test::TestRequest::post()
            .uri(uri)
            .insert_header(("Authorization", other_key.as_str()))
            .set_json(body)
            .to_request()
    };
    let (_, _, their_client) =
        call(&app, as_other("/api/clients", json!({"name": "Theirs"}))).await;
    let (_, _, their_project) =
        call(&app, as_other("/api/projects", json!({"name": "Theirs"}))).await;

    let (status, _, body) = call(
        &app,
        post(
            &t,
            "/api/projects",
            json!({"name": "Mine", "client_id": their_client["id"]}),
        ),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": "client_id does not name a client of this workspace"})
        )
    );
    let uri = format!(
        "/api/projects/{}/tasks",
        their_project["id"].as_str().unwrap()
    );
    let (status, _, body) = call(&app, post(&t, &uri, json!({"name": "Sneaky"}))).await;
    assert_eq!((status, body), (404, json!({"error": "Project not found"})));
    let (status, _, body) = call(
        &app,
        test::TestRequest::get()
            .uri(&uri)
            .insert_header(t.bearer())
            .to_request(),
    )
    .await;
    assert_eq!((status, body), (404, json!({"error": "Project not found"})));
    assert_eq!(t.scalar("SELECT count(*) AS n FROM tasks").await, 0);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM projects").await, 1);
}

#[actix_web::test]
async fn names_are_validated() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for (uri, body, message) in [
        ("/api/projects", json!({}), "name must not be empty"),
        (
            "/api/projects",
            json!({"name": "x".repeat(256)}),
            "name must be at most 255 characters",
        ),
        (
            "/api/projects",
            json!({"name": "P", "client_id": "nope"}),
            "Invalid JSON body",
        ),
        ("/api/tags", json!({"name": " "}), "name must not be empty"),
    ] {
        let (status, _, json) = call(&app, post(&t, uri, body.clone())).await;
        assert_eq!(
            (status, error_of(&json)),
            (400, json!({"error": message})),
            "{uri} {body}"
        );
    }
}
