//! What the platforms need from the API (docs/integration-guide.md, section 2a): `q` and `updated_since` on the
//! lists drop-downs are filled from, the project find and the running-timer look-up in the shape
//! of the published client search, and webhooks found by their URL.

use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::support::{TestApp, call, error_of, keyed as req};

fn names(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data in {list}"))
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_owned())
        .collect()
}

fn find_names(found: &Value) -> Vec<String> {
    found
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {found}"))
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn the_catalogs_lists_match_q_ignoring_case_in_every_script_and_keep_their_order() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    for name in ["Ärztekammer", "Acme", "Mega Acme Ltd", "Öffentliche Hand"] {
        let (status, _, body) = call(
            &app,
            req("POST", "/api/clients", &key, Some(json!({"name": name}))),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let (status, _, body) = call(
            &app,
            req("POST", "/api/projects", &key, Some(json!({"name": name}))),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let (status, _, body) = call(
            &app,
            req("POST", "/api/tags", &key, Some(json!({"name": name}))),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let (_, _, project) = call(&app, req("GET", "/api/projects?q=mega", &key, None)).await;
    let project_id = project["data"][0]["id"].as_str().unwrap().to_owned();
    for task in ["Design Review", "DESIGN", "Build"] {
        let (status, _, body) = call(
            &app,
            req(
                "POST",
                &format!("/api/projects/{project_id}/tasks"),
                &key,
                Some(json!({"name": task})),
            ),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }

    for list in ["/api/clients", "/api/projects", "/api/tags"] {
        let (status, _, all) = call(&app, req("GET", list, &key, None)).await;
        assert_eq!(status, 200, "{all}");
        assert_eq!(
            names(&all),
            ["Öffentliche Hand", "Mega Acme Ltd", "Acme", "Ärztekammer"],
            "{list}"
        );
        for (q, expected) in [
            ("ACME", vec!["Mega Acme Ltd", "Acme"]),
            // Non-ASCII letters fold too, whatever the database's collation ("äRZTE").
            ("%C3%A4RZTE", vec!["Ärztekammer"]),
            ("%C3%96FFENTLICHE", vec!["Öffentliche Hand"]),
            ("%25", vec![]),
            ("zzz", vec![]),
            // Blank narrows nothing.
            (
                "%20",
                vec!["Öffentliche Hand", "Mega Acme Ltd", "Acme", "Ärztekammer"],
            ),
        ] {
            let (status, _, page) =
                call(&app, req("GET", &format!("{list}?q={q}"), &key, None)).await;
            assert_eq!(status, 200, "{list}?q={q}: {page}");
            assert_eq!(names(&page), expected, "{list}?q={q}");
        }
        // The cursor pages through the narrowed list.
        let (_, _, first) = call(
            &app,
            req("GET", &format!("{list}?q=acme&limit=1"), &key, None),
        )
        .await;
        assert_eq!(names(&first), ["Mega Acme Ltd"]);
        let cursor = first["next_cursor"].as_str().unwrap().to_owned();
        let (_, _, second) = call(
            &app,
            req(
                "GET",
                &format!("{list}?q=acme&limit=1&cursor={cursor}"),
                &key,
                None,
            ),
        )
        .await;
        assert_eq!(names(&second), ["Acme"]);
        assert_eq!(second["next_cursor"], Value::Null);
    }
    let (status, _, tasks) = call(
        &app,
        req(
            "GET",
            &format!("/api/projects/{project_id}/tasks?q=design"),
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(status, 200, "{tasks}");
    assert_eq!(names(&tasks), ["DESIGN", "Design Review"]);
}

#[actix_web::test]
async fn updated_since_keeps_what_changed_at_or_after_the_instant() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (_, _, old) = call(
        &app,
        req("POST", "/api/clients", &key, Some(json!({"name": "Old"}))),
    )
    .await;
    let (_, _, untouched) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &key,
            Some(json!({"name": "Untouched"})),
        ),
    )
    .await;
    let (_, _, old_project) = call(
        &app,
        req(
            "POST",
            "/api/projects",
            &key,
            Some(json!({"name": "Old project"})),
        ),
    )
    .await;
    let (colleague, _) = t.colleague("Grace", Role::Member).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let since = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/clients/{}", old["id"].as_str().unwrap()),
            &key,
            Some(json!({"name": "Old, renamed"})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    call(
        &app,
        req("POST", "/api/clients", &key, Some(json!({"name": "New"}))),
    )
    .await;
    call(
        &app,
        req(
            "POST",
            "/api/projects",
            &key,
            Some(json!({"name": "New project"})),
        ),
    )
    .await;
    call(
        &app,
        req("POST", "/api/tags", &key, Some(json!({"name": "New tag"}))),
    )
    .await;
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/members/{}", colleague.id),
            &key,
            Some(json!({"role": "admin"})),
        ),
    )
    .await;
    assert_eq!(status, 200);

    let since_q = since.replace('+', "%2B");
    for (list, expected) in [
        ("/api/clients", vec!["New", "Old, renamed"]),
        ("/api/projects", vec!["New project"]),
        ("/api/tags", vec!["New tag"]),
        ("/api/members", vec!["Grace"]),
    ] {
        let (status, _, page) = call(
            &app,
            req(
                "GET",
                &format!("{list}?updated_since={since_q}"),
                &key,
                None,
            ),
        )
        .await;
        assert_eq!(status, 200, "{list}: {page}");
        assert_eq!(names(&page), expected, "{list}?updated_since={since}");
    }
    assert!(untouched["id"].is_string() && old_project["id"].is_string());
    // Both filters at once; members match the e-mail too.
    let (_, _, both) = call(
        &app,
        req(
            "GET",
            &format!("/api/clients?q=new&updated_since={since_q}"),
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(names(&both), ["New"]);
    let (_, _, by_mail) = call(
        &app,
        req("GET", "/api/members?q=GRACE%40EXAMPLE", &key, None),
    )
    .await;
    assert_eq!(names(&by_mail), ["Grace"]);
}

#[actix_web::test]
async fn bad_list_filters_are_400_with_a_detail() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let long = "x".repeat(256);
    for (list, query, detail) in [
        (
            "/api/clients",
            "updated_since=yesterday",
            "updated_since must be an RFC 3339 timestamp",
        ),
        (
            "/api/projects",
            "updated_since=2026-13-01T00:00:00Z",
            "updated_since must be an RFC 3339 timestamp",
        ),
        (
            "/api/tags",
            &*format!("q={long}"),
            "q must be at most 255 characters",
        ),
        ("/api/members", "q=a%00b", "q must not contain NUL"),
        ("/api/clients", "q=a&q=b", "duplicate field"),
    ] {
        let (status, _, body) =
            call(&app, req("GET", &format!("{list}?{query}"), &key, None)).await;
        assert_eq!(status, 400, "{list}?{query}: {body}");
        let text = body.to_string();
        assert!(text.contains(detail), "{list}?{query}: {body}");
        assert!(body["error"].is_string(), "{body}");
    }
}

const FIND_PROJECTS: &str = "/api/integrations/automation/triggers/projects/find";

#[actix_web::test]
async fn the_project_find_puts_an_exact_name_first_in_the_project_payloads_shape() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (_, _, client) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &key,
            Some(json!({"name": "Initech"})),
        ),
    )
    .await;
    for (name, with_client) in [
        ("Website", true),
        ("Website relaunch", false),
        ("Old website", false),
    ] {
        let body = if with_client {
            json!({"name": name, "client_id": client["id"]})
        } else {
            json!({"name": name})
        };
        let (status, _, created) = call(&app, req("POST", "/api/projects", &key, Some(body))).await;
        assert_eq!(status, 201, "{created}");
    }
    let (status, _, found) = call(
        &app,
        req(
            "POST",
            FIND_PROJECTS,
            &key,
            Some(json!({"name": "WEBSITE"})),
        ),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        find_names(&found),
        ["Website", "Old website", "Website relaunch"]
    );
    let first = &found[0];
    assert_eq!(first["client"]["name"], "Initech");
    assert_eq!(first["client"]["id"], client["id"]);
    assert_eq!(found[1]["client"], Value::Null);
    // Exactly the keys of PROJECT_CREATED's payload.
    let (_, _, catalog) = call(
        &app,
        req(
            "GET",
            "/api/integrations/automation/event-types",
            &key,
            None,
        ),
    )
    .await;
    let sample = catalog
        .as_array()
        .and_then(|types| types.iter().find(|e| e["type"] == "PROJECT_CREATED"))
        .map(|e| e["sample"].clone())
        .unwrap_or_else(|| panic!("no PROJECT_CREATED in {catalog}"));
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(first), keys(&sample), "{first} vs {sample}");

    let (status, _, limited) = call(
        &app,
        req(
            "POST",
            FIND_PROJECTS,
            &key,
            Some(json!({"name": "site", "limit": 1})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(find_names(&limited), ["Old website"]);
    let (status, _, none) = call(
        &app,
        req(
            "POST",
            FIND_PROJECTS,
            &key,
            Some(json!({"name": "nothing like it"})),
        ),
    )
    .await;
    assert_eq!((status, none), (200, json!([])));

    // Another workspace's projects are never found, and naming it is 403.
    let (other, other_key) = t.other_workspace().await;
    let (status, _, theirs) = call(
        &app,
        req(
            "POST",
            FIND_PROJECTS,
            &other_key,
            Some(json!({"name": "website"})),
        ),
    )
    .await;
    assert_eq!((status, theirs), (200, json!([])));
    let (status, _, refused) = call(
        &app,
        req(
            "POST",
            FIND_PROJECTS,
            &key,
            Some(json!({"name": "website", "workspace_id": other.id.to_string()})),
        ),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    for bad in [
        json!({}),
        json!({"name": ""}),
        json!({"name": 7}),
        json!({"name": "a", "limit": 0}),
        json!({"name": "a", "workspace_id": "nope"}),
    ] {
        let (status, _, body) =
            call(&app, req("POST", FIND_PROJECTS, &key, Some(bad.clone()))).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(
            error_of(&body),
            json!({"error": "Invalid request parameters"}),
            "{bad}: {body}"
        );
    }
}

const RUNNING: &str = "/api/integrations/automation/triggers/time-entries/running";

#[actix_web::test]
async fn the_running_timer_look_up_answers_the_callers_timer_or_nothing() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (_, colleague_key) = t.colleague("Grace", Role::Member).await;
    let (status, _, none) = call(&app, req("GET", RUNNING, &key, None)).await;
    assert_eq!((status, none), (200, json!([])));

    let (status, _, started) = call(
        &app,
        req(
            "POST",
            "/api/time-entries/start",
            &key,
            Some(json!({"description": "Writing"})),
        ),
    )
    .await;
    assert!(status == 200 || status == 201, "{started}");
    let (status, _, running) = call(&app, req("GET", RUNNING, &key, None)).await;
    assert_eq!(status, 200);
    let running = running.as_array().unwrap();
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(running[0]["id"], started["id"]);
    assert_eq!(running[0]["action"], "start_timer");
    assert_eq!(running[0]["description"], "Writing");
    assert!(running[0].get("endTime").is_none() && running[0].get("duration").is_none());
    assert_eq!(running[0]["teamMember"]["name"], "Ada Lovelace");
    // A colleague's look-up names only their own timer.
    let (_, _, theirs) = call(&app, req("GET", RUNNING, &colleague_key, None)).await;
    assert_eq!(theirs, json!([]));

    call(
        &app,
        req("POST", "/api/time-entries/stop", &key, Some(json!({}))),
    )
    .await;
    let (_, _, after) = call(&app, req("GET", RUNNING, &key, None)).await;
    assert_eq!(after, json!([]));
}

const WEBHOOKS: &str = "/api/integrations/automation/webhooks";

#[actix_web::test]
async fn webhooks_are_found_by_their_exact_url_and_only_the_callers() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (_, colleague_key) = t.colleague("Grace", Role::Admin).await;
    let url = "https://hooks.example.com/catch/1?zap=7";
    let mut mine = Vec::new();
    for (who, hook) in [
        (&key, url),
        (&key, url),
        (&key, "https://hooks.example.com/catch/1"),
        (&colleague_key, url),
    ] {
        let (status, _, body) = call(
            &app,
            req(
                "POST",
                &format!("{WEBHOOKS}/subscribe"),
                who,
                Some(json!({"url": hook, "events": ["TIMER_STARTED"]})),
            ),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        if who == &key && hook == url {
            mine.push(body["webhook"]["id"].as_str().unwrap().to_owned());
        }
    }
    let encoded = "https%3A%2F%2Fhooks.example.com%2Fcatch%2F1%3Fzap%3D7";
    let (status, _, found) = call(
        &app,
        req("GET", &format!("{WEBHOOKS}?url={encoded}"), &key, None),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["success"], true);
    let mut ids: Vec<String> = found["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    mine.sort();
    assert_eq!(ids, mine);
    let (_, _, none) = call(
        &app,
        req(
            "GET",
            &format!("{WEBHOOKS}?url=https%3A%2F%2Fhooks.example.com%2Fcatch"),
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(none["webhooks"], json!([]));
    let (_, _, all) = call(&app, req("GET", WEBHOOKS, &key, None)).await;
    assert_eq!(all["webhooks"].as_array().unwrap().len(), 3);
}
