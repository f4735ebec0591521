//! `/api/keys` and the keys' scopes (`integrations.md` section 4): a member makes keys for
//! themselves with scopes and an expiry; a request outside its key's scopes is 403 and changes
//! nothing; an expired key is refused as a revoked one is.

use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::support::{TestApp, call, keyed};

/// `POST /api/keys` with `body` as `auth`: status and answer.
async fn make<S, B>(app: &S, auth: &str, body: Value) -> (u16, Value)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let (status, _, answer) = call(app, keyed("POST", "/api/keys", auth, Some(body))).await;
    (status, answer)
}

fn bearer(answer: &Value) -> String {
    format!(
        "Bearer {}",
        answer["key"].as_str().expect("the key is shown")
    )
}

fn in_days(days: i64) -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::days(days))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

#[actix_web::test]
async fn a_scoped_key_does_what_its_scopes_allow_and_nothing_else() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let owner = t.key();
    let expires_at = in_days(30);
    let (status, made) = make(
        &app,
        &owner,
        json!({"name": "Assistant", "scopes": ["time:write", "read", "read"], "expires_at": expires_at}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["name"], "Assistant");
    assert_eq!(made["scopes"], json!(["read", "time:write"]));
    assert!(made["key"].as_str().unwrap().starts_with("tt_"));
    assert_eq!(
        made["prefix"].as_str(),
        made["key"].as_str().map(|k| &k[..10])
    );
    assert!(made["expires_at"].is_string());
    assert_eq!(made["revoked_at"], Value::Null);
    let assistant = bearer(&made);

    // What its scopes allow.
    let (status, _, body) = call(&app, keyed("GET", "/api/clients", &assistant, None)).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = call(
        &app,
        keyed(
            "POST",
            "/api/time-entries/start",
            &assistant,
            Some(json!({})),
        ),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    // And nothing else: 403 naming the scope, nothing changed.
    for (method, path, body, scope) in [
        (
            "POST",
            "/api/clients",
            Some(json!({"name": "Acme"})),
            "catalog:write",
        ),
        (
            "POST",
            "/api/tags",
            Some(json!({"name": "x"})),
            "catalog:write",
        ),
        (
            "POST",
            "/api/integrations/automation/webhooks/subscribe",
            Some(json!({"url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED"]})),
            "webhooks",
        ),
        (
            "GET",
            "/api/integrations/automation/webhooks",
            None,
            "webhooks",
        ),
        ("GET", "/api/keys", None, "admin"),
        ("POST", "/api/keys", Some(json!({"name": "more"})), "admin"),
        (
            "PATCH",
            "/api/workspace",
            Some(json!({"name": "Renamed"})),
            "admin",
        ),
        (
            "POST",
            "/api/rates",
            Some(
                json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 100, "effective_from": "2026-01-01"}),
            ),
            "billing:write",
        ),
    ] {
        let (status, _, answer) = call(&app, keyed(method, path, &assistant, body)).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert_eq!(
            answer,
            json!({"error": "Forbidden", "detail": format!("this key lacks the scope {scope}")}),
            "{method} {path}"
        );
    }
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 0);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM tags").await, 0);
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        0
    );
    assert_eq!(t.scalar("SELECT count(*) AS n FROM rates").await, 0);

    // The owner lists it (never the key) and revokes it: refused at once.
    let (status, _, listed) = call(&app, keyed("GET", "/api/keys", &owner, None)).await;
    assert_eq!(status, 200, "{listed}");
    let keys = listed["data"].as_array().unwrap();
    assert_eq!(keys.len(), 2, "{listed}");
    assert_eq!(keys[0]["id"], made["id"], "newest first");
    assert!(keys.iter().all(|k| k.get("key").is_none()), "{listed}");
    assert_eq!(
        keys[1]["scopes"].as_array().unwrap().len(),
        6,
        "the CLI's key has all"
    );
    let id = made["id"].as_str().unwrap();
    let (status, _, revoked) = call(
        &app,
        keyed("DELETE", &format!("/api/keys/{id}"), &owner, None),
    )
    .await;
    assert_eq!(status, 200, "{revoked}");
    assert!(revoked["revoked_at"].is_string());
    // A write checks the key in storage: refused at once (a read within the key cache's 30 s).
    let (status, _, _) = call(
        &app,
        keyed(
            "POST",
            "/api/time-entries/stop",
            &assistant,
            Some(json!({})),
        ),
    )
    .await;
    assert_eq!(status, 401);
}

#[actix_web::test]
async fn a_key_never_makes_a_stronger_one_and_bad_requests_are_400() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let owner = t.key();
    let (status, made) = make(
        &app,
        &owner,
        json!({"name": "Keys only", "scopes": ["admin"]}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let admin_only = bearer(&made);
    for (body, scope) in [
        (
            json!({"name": "x", "scopes": ["billing:write"]}),
            "billing:write",
        ),
        (json!({"name": "x"}), "read"),
    ] {
        let (status, answer) = make(&app, &admin_only, body).await;
        assert_eq!(
            (status, answer.clone()),
            (
                403,
                json!({"error": "Forbidden", "detail": format!("this key lacks the scope {scope}")})
            )
        );
    }
    let (status, _) = make(&app, &admin_only, json!({"name": "x", "scopes": ["admin"]})).await;
    assert_eq!(status, 201);

    for body in [
        json!({"name": "x", "scopes": ["everything"]}),
        json!({"name": "x", "scopes": []}),
        json!({"name": "x", "scopes": "read"}),
        json!({"name": "x", "expires_at": "2020-01-01T00:00:00Z"}),
        json!({"name": "x", "expires_at": "next week"}),
        json!({"name": ""}),
        json!({"scopes": ["read"]}),
        json!({"name": "x", "role": "owner"}),
        json!(["name"]),
    ] {
        let (status, answer) = make(&app, &owner, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer["error"].is_string(), "{answer}");
    }
    assert_eq!(t.scalar("SELECT count(*) AS n FROM api_keys").await, 3);
}

#[actix_web::test]
async fn a_member_sees_and_revokes_only_their_own_keys() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let owner = t.key();
    let (_, member) = t.colleague("Mia", Role::Member).await;
    let (status, mine) = make(
        &app,
        &member,
        json!({"name": "Mia's Zap", "scopes": ["read"]}),
    )
    .await;
    assert_eq!(status, 201, "{mine}");
    let (_, _, listed) = call(&app, keyed("GET", "/api/keys", &member, None)).await;
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(ids.len(), 2, "her CLI key and the new one: {listed}");
    assert!(ids.contains(&"Mia's Zap"));
    // The owner's key is not hers to revoke (and not shown to exist).
    let (_, _, owners) = call(&app, keyed("GET", "/api/keys", &owner, None)).await;
    assert_eq!(owners["data"].as_array().unwrap().len(), 3, "{owners}");
    let owner_key = owners["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] != "Mia's Zap" && k["id"] != listed["data"][1]["id"])
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _, answer) = call(
        &app,
        keyed("DELETE", &format!("/api/keys/{owner_key}"), &member, None),
    )
    .await;
    assert_eq!(status, 404, "{answer}");
    let (status, _, _) = call(&app, keyed("GET", "/api/me", &owner, None)).await;
    assert_eq!(status, 200, "the owner's key still works");
    // The owner may revoke hers.
    let id = mine["id"].as_str().unwrap();
    let (status, _, _) = call(
        &app,
        keyed("DELETE", &format!("/api/keys/{id}"), &owner, None),
    )
    .await;
    assert_eq!(status, 200);
    for bad in ["not-a-uuid", "00000000-0000-0000-0000-000000000000"] {
        let (status, _, _) = call(
            &app,
            keyed("DELETE", &format!("/api/keys/{bad}"), &owner, None),
        )
        .await;
        assert_eq!(status, 404, "{bad}");
    }
}

#[actix_web::test]
async fn an_expired_key_is_refused_as_a_revoked_one() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let soon = (time::OffsetDateTime::now_utc() + time::Duration::seconds(2))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let (status, made) = make(&app, &t.key(), json!({"name": "Brief", "expires_at": soon})).await;
    assert_eq!(status, 201, "{made}");
    let brief = bearer(&made);
    let (status, _, _) = call(&app, keyed("GET", "/api/me", &brief, None)).await;
    assert_eq!(status, 200);
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    for (method, path) in [("GET", "/api/me"), ("POST", "/api/time-entries/start")] {
        let body = (method == "POST").then(|| json!({}));
        let (status, _, answer) = call(&app, keyed(method, path, &brief, body)).await;
        assert_eq!(status, 401, "{method} {path}: {answer}");
        assert_eq!(answer, json!({"error": "Unauthorized"}));
    }
}
