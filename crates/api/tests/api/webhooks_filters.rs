//! Subscription filters (`events.md` section 3): what subscribe and PATCH accept, and that a
//! filtered-out event makes no delivery row at all.

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};
use crate::webhooks_operate::request;

/// Sends `body` to `path` (core API) as the test's user: the answer's body.
async fn post<S, B>(t: &TestApp, app: &S, path: &str, body: Value) -> Value
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let req = test::TestRequest::post()
        .uri(path)
        .insert_header(t.bearer())
        .set_json(body)
        .to_request();
    let (status, _, answer) = call(app, req).await;
    assert!(status < 300, "{path}: {status} {answer}");
    answer
}

/// Deliveries queued for webhook `id`.
async fn queued(t: &TestApp, id: &str) -> i64 {
    t.scalar(&format!(
        "SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}'"
    ))
    .await
}

#[actix_web::test]
async fn a_filtered_out_event_makes_no_delivery_and_a_matching_one_does() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let acme = post(&t, &app, "/api/clients", json!({"name": "Acme"})).await;
    let acme_id = acme["id"].as_str().unwrap().to_owned();
    let site = post(
        &t,
        &app,
        "/api/projects",
        json!({"name": "Site", "client_id": acme_id}),
    )
    .await;
    let site_id = site["id"].as_str().unwrap().to_owned();
    let other = post(&t, &app, "/api/projects", json!({"name": "Other"})).await;
    let other_id = other["id"].as_str().unwrap().to_owned();

    let subscribe = |filters: Value| {
        request(
            "POST",
            &auth,
            "/subscribe",
            Some(json!({"url": "https://hooks.example.com/f",
                        "events": ["TIME_ENTRY_CREATED", "TIMER_STARTED"],
                        "filters": filters})),
        )
    };
    let (status, _, by_project) = call(&app, subscribe(json!({"project_ids": [site_id]}))).await;
    assert_eq!(status, 201, "{by_project}");
    let by_project = by_project["webhook"]["id"].as_str().unwrap().to_owned();
    let (_, _, by_client) = call(&app, subscribe(json!({"client_ids": [acme_id]}))).await;
    let by_client = by_client["webhook"]["id"].as_str().unwrap().to_owned();
    let (_, _, billable) = call(
        &app,
        subscribe(json!({"billable": true, "user_ids": [t.user.id.to_string()]})),
    )
    .await;
    let billable = billable["webhook"]["id"].as_str().unwrap().to_owned();
    let (_, _, all) = call(&app, subscribe(json!({}))).await;
    let all = all["webhook"]["id"].as_str().unwrap().to_owned();

    // W shows them.
    let (_, _, shown) = call(&app, request("GET", &auth, &format!("/{by_project}"), None)).await;
    assert_eq!(
        shown["webhook"]["filters"],
        json!({"project_ids": [site_id]})
    );
    let (_, _, shown) = call(&app, request("GET", &auth, &format!("/{all}"), None)).await;
    assert_eq!(shown["webhook"]["filters"], json!({}));

    let entry = |project: Option<&str>, billable: bool| {
        json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z",
               "project_id": project, "billable": billable})
    };
    post(&t, &app, "/api/time-entries", entry(Some(&site_id), false)).await;
    post(&t, &app, "/api/time-entries", entry(Some(&other_id), true)).await;
    post(&t, &app, "/api/time-entries", entry(None, false)).await;
    assert_eq!(queued(&t, &by_project).await, 1, "its project only");
    assert_eq!(
        queued(&t, &by_client).await,
        1,
        "the project of its client only"
    );
    assert_eq!(queued(&t, &billable).await, 1, "the billable one only");
    assert_eq!(queued(&t, &all).await, 3);

    // A replay follows the filters as they are now.
    let since = timetrack_domain::timefmt::rfc3339(
        time::OffsetDateTime::now_utc() - time::Duration::hours(1),
    );
    let (status, _, body) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{by_project}/replay"),
            Some(json!({"since": since, "only_failed": false})),
        ),
    )
    .await;
    assert_eq!((status, body["queued"].clone()), (202, json!(1)), "{body}");

    // PATCH replaces them; null (or {}) clears them.
    let (status, _, patched) = call(
        &app,
        request(
            "PATCH",
            &auth,
            &format!("/{by_project}"),
            Some(json!({"filters": {"project_ids": [other_id], "billable": true}})),
        ),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(
        patched["webhook"]["filters"],
        json!({"project_ids": [other_id], "billable": true})
    );
    post(&t, &app, "/api/time-entries", entry(Some(&other_id), true)).await;
    assert_eq!(queued(&t, &by_project).await, 3);
    let (_, _, cleared) = call(
        &app,
        request(
            "PATCH",
            &auth,
            &format!("/{by_project}"),
            Some(json!({"filters": null})),
        ),
    )
    .await;
    assert_eq!(cleared["webhook"]["filters"], json!({}));
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.updated' \
             AND target_id = '{by_project}' AND reason = 'changed filters'"
        ))
        .await,
        2
    );
}

#[actix_web::test]
async fn filters_that_cannot_match_or_name_another_workspaces_ids_are_refused() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let (outsider_ws, outsider) = t.other_workspace().await;
    let theirs = {
        let req = test::TestRequest::post()
            .uri("/api/projects")
            .insert_header(("Authorization", outsider.as_str()))
            .set_json(json!({"name": "Theirs"}))
            .to_request();
        call(&app, req).await.2["id"].as_str().unwrap().to_owned()
    };
    let ours = post(&t, &app, "/api/projects", json!({"name": "Ours"})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let subscribe = |events: Value, filters: Value| {
        request(
            "POST",
            &auth,
            "/subscribe",
            Some(
                json!({"url": "https://hooks.example.com/f", "events": events,
                        "filters": filters}),
            ),
        )
    };
    let unknown = "00000000-0000-0000-0000-00000000beef";
    let many: Vec<String> = (0..101)
        .map(|n| format!("00000000-0000-0000-0000-{n:012}"))
        .collect();
    for (events, filters, message) in [
        (
            json!(["WEBHOOK_TEST"]),
            json!({}),
            "Invalid event type: WEBHOOK_TEST".to_owned(),
        ),
        (
            json!(["CLIENT_CREATED"]),
            json!({"billable": true}),
            "Invalid filter: billable does not apply to CLIENT_CREATED".to_owned(),
        ),
        (
            json!(["TIMER_STARTED", "WEBHOOK_FAILING"]),
            json!({"project_ids": [ours]}),
            "Invalid filter: project_ids does not apply to WEBHOOK_FAILING".to_owned(),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!({"project_ids": [theirs]}),
            format!("Invalid filter: project_ids ({theirs} is not in this workspace)"),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!({"client_ids": [unknown]}),
            format!("Invalid filter: client_ids ({unknown} is not in this workspace)"),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!({"user_ids": [outsider_ws.id.to_string()]}),
            format!(
                "Invalid filter: user_ids ({} is not in this workspace)",
                outsider_ws.id
            ),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!({"project_ids": []}),
            "Invalid filter: project_ids (must be an array of 1 to 100 ids)".to_owned(),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!({"project_ids": many}),
            "Invalid filter: project_ids (must be an array of 1 to 100 ids)".to_owned(),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!({"project_ids": ["nope"]}),
            "Invalid filter: project_ids (\"nope\" is not an id)".to_owned(),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!({"billable": "yes"}),
            "Invalid filter: billable (must be true or false)".to_owned(),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!({"tags": ["x"]}),
            "Invalid filter: tags (unknown; the filters are project_ids, client_ids, user_ids \
             and billable)"
                .to_owned(),
        ),
        (
            json!(["TIMER_STARTED"]),
            json!([]),
            "Invalid filter: filters (must be an object)".to_owned(),
        ),
    ] {
        let (status, _, body) = call(&app, subscribe(events.clone(), filters.clone())).await;
        assert_eq!(
            (status, error_of(&body)),
            (400, json!({"error": message})),
            "{events} {filters}"
        );
    }
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        0,
        "nothing stored"
    );

    // PATCH checks the filters against the events as they will be.
    let (_, _, made) = call(
        &app,
        subscribe(json!(["TIMER_STARTED"]), json!({"billable": false})),
    )
    .await;
    let id = made["webhook"]["id"].as_str().unwrap().to_owned();
    let (status, _, body) = call(
        &app,
        request(
            "PATCH",
            &auth,
            &format!("/{id}"),
            Some(json!({"events": ["TIMER_STARTED", "CLIENT_CREATED"]})),
        ),
    )
    .await;
    assert_eq!(
        (status, error_of(&body)),
        (
            400,
            json!({"error": "Invalid filter: billable does not apply to CLIENT_CREATED"})
        )
    );
    let (status, _, body) = call(
        &app,
        request(
            "PATCH",
            &auth,
            &format!("/{id}"),
            Some(json!({"events": ["TIMER_STARTED", "CLIENT_CREATED"], "filters": {}})),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["webhook"]["filters"], json!({}));
}
