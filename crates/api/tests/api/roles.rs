//! Roles (`docs/billing.md`): who may change what, the members list, the workspace's settings.
//! Every refusal is 403 `{"error":"Forbidden"}` and changes nothing.

use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::support::{TestApp, call, keyed as req};

#[actix_web::test]
async fn me_and_the_members_list_show_every_role_to_every_role() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (admin, admin_key) = t.colleague("Grace", Role::Admin).await;
    let (member, member_key) = t.colleague("Linus", Role::Member).await;

    let (status, _, me) = call(&app, req("GET", "/api/me", &member_key, None)).await;
    assert_eq!(status, 200);
    assert_eq!(me["user"]["role"], "member");
    let (_, _, me) = call(&app, req("GET", "/api/me", &t.key(), None)).await;
    assert_eq!(
        me["user"]["role"], "owner",
        "the first member owns the workspace"
    );

    for key in [&t.key(), &admin_key, &member_key] {
        let (status, _, list) = call(&app, req("GET", "/api/members", key, None)).await;
        assert_eq!(status, 200);
        assert_eq!(
            list,
            json!({"data": [
                {"id": t.user.id.to_string(), "name": "Ada Lovelace", "email": "ada@example.com", "role": "owner"},
                {"id": admin.id.to_string(), "name": "Grace", "email": "grace@example.com", "role": "admin"},
                {"id": member.id.to_string(), "name": "Linus", "email": "linus@example.com", "role": "member"},
            ], "next_cursor": null})
        );
    }
    let (status, _, page) = call(&app, req("GET", "/api/members?limit=1", &member_key, None)).await;
    assert_eq!(status, 200);
    assert_eq!(page["data"][0]["role"], "owner");
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (_, _, next) = call(
        &app,
        req(
            "GET",
            &format!("/api/members?limit=1&cursor={cursor}"),
            &member_key,
            None,
        ),
    )
    .await;
    assert_eq!(next["data"][0]["name"], "Grace");
}

#[actix_web::test]
async fn roles_change_by_owners_and_admins_but_only_an_owner_touches_an_owner() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (admin, admin_key) = t.colleague("Grace", Role::Admin).await;
    let (member, member_key) = t.colleague("Linus", Role::Member).await;
    let patch = |who: &str, key: &str, role: &str| {
        req(
            "PATCH",
            &format!("/api/members/{who}"),
            key,
            Some(json!({"role": role})),
        )
    };
    let roles = async |t: &TestApp| {
        t.texts("SELECT role AS t FROM memberships ORDER BY created_at, user_id")
            .await
    };
    let before = roles(&t).await;
    assert_eq!(before, ["owner", "admin", "member"]);

    // A member changes no role, not even their own.
    for (who, role) in [
        (member.id, "admin"),
        (admin.id, "member"),
        (t.user.id, "member"),
    ] {
        let (status, _, body) = call(&app, patch(&who.to_string(), &member_key, role)).await;
        assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    }
    // An admin makes no owner and unmakes none.
    let (status, _, body) = call(&app, patch(&member.id.to_string(), &admin_key, "owner")).await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    let (status, _, body) = call(&app, patch(&t.user.id.to_string(), &admin_key, "admin")).await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    assert_eq!(roles(&t).await, before, "the refusals changed nothing");

    // An admin promotes a member; the answer is the member.
    let (status, _, body) = call(&app, patch(&member.id.to_string(), &admin_key, "admin")).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"id": member.id.to_string(), "name": "Linus", "email": "linus@example.com", "role": "admin"})
    );
    // The promotion takes effect on the next write of that key.
    let (status, _, _) = call(&app, patch(&member.id.to_string(), &member_key, "member")).await;
    assert_eq!(status, 200, "now an admin, Linus may change roles");

    // The last owner stays one.
    let (status, _, body) = call(&app, patch(&t.user.id.to_string(), &t.key(), "member")).await;
    assert_eq!(
        (status, body),
        (
            409,
            json!({"error": "A workspace keeps at least one owner"})
        )
    );
    // With a second owner, the first may step down.
    let (status, _, _) = call(&app, patch(&admin.id.to_string(), &t.key(), "owner")).await;
    assert_eq!(status, 200);
    let (status, _, body) = call(&app, patch(&t.user.id.to_string(), &t.key(), "admin")).await;
    assert_eq!((status, body["role"].clone()), (200, json!("admin")));

    // Bad input: unknown or malformed member, unknown or missing role.
    let (status, _, body) = call(
        &app,
        patch(&uuid::Uuid::nil().to_string(), &admin_key, "member"),
    )
    .await;
    assert_eq!((status, body), (404, json!({"error": "Member not found"})));
    let (status, _, body) = call(&app, patch("nope", &admin_key, "member")).await;
    assert_eq!((status, body), (404, json!({"error": "Member not found"})));
    let (status, _, body) = call(&app, patch(&member.id.to_string(), &admin_key, "boss")).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": "role must be one of owner, admin, member, got: boss"})
        )
    );
    let (status, _, body) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/members/{}", member.id),
            &admin_key,
            Some(json!({})),
        ),
    )
    .await;
    assert_eq!((status, body), (400, json!({"error": "role is required"})));
    // Another workspace's member is not a member here.
    let (other_ws, _) = t.other_workspace().await;
    let bob = t
        .texts(&format!(
            "SELECT user_id::text AS t FROM memberships WHERE workspace_id = '{}'",
            other_ws.id
        ))
        .await;
    let (status, _, _) = call(&app, patch(&bob[0], &admin_key, "member")).await;
    assert_eq!(status, 404);
}

#[actix_web::test]
async fn a_member_changes_only_their_own_entries_and_reads_everyones() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, member_key) = t.colleague("Linus", Role::Member).await;
    let (_, admin_key) = t.colleague("Grace", Role::Admin).await;
    let manual = json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z", "description": "Ada's"});
    let (status, _, ada_entry) = call(
        &app,
        req("POST", "/api/time-entries", &t.key(), Some(manual)),
    )
    .await;
    assert_eq!(status, 201);
    let uri = format!("/api/time-entries/{}", ada_entry["id"].as_str().unwrap());
    let events_before = t.scalar("SELECT count(*) AS n FROM events").await;

    let (status, _, read) = call(&app, req("GET", &uri, &member_key, None)).await;
    assert_eq!((status, read["description"].clone()), (200, json!("Ada's")));
    let (status, _, body) = call(
        &app,
        req(
            "PATCH",
            &uri,
            &member_key,
            Some(json!({"description": "mine now"})),
        ),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    let (status, _, body) = call(&app, req("DELETE", &uri, &member_key, None)).await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    let (_, _, after) = call(&app, req("GET", &uri, &t.key(), None)).await;
    assert_eq!(after, ada_entry, "the entry is as it was");
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM events").await,
        events_before,
        "no event"
    );

    // Their own entry: theirs to change.
    let mine = json!({"start": "2026-01-05T11:00:00Z", "end": "2026-01-05T12:00:00Z"});
    let (_, _, own) = call(
        &app,
        req("POST", "/api/time-entries", &member_key, Some(mine)),
    )
    .await;
    let own_uri = format!("/api/time-entries/{}", own["id"].as_str().unwrap());
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            &own_uri,
            &member_key,
            Some(json!({"description": "fixed"})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    // An admin changes anyone's.
    let (status, _, changed) = call(
        &app,
        req(
            "PATCH",
            &own_uri,
            &admin_key,
            Some(json!({"billable": true})),
        ),
    )
    .await;
    assert_eq!((status, changed["billable"].clone()), (200, json!(true)));
    let (status, _, _) = call(&app, req("DELETE", &own_uri, &admin_key, None)).await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn the_catalog_is_kept_to_admins_when_the_workspace_says_so() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, member_key) = t.colleague("Linus", Role::Member).await;
    // By default members manage the catalog.
    let (status, _, project) = call(
        &app,
        req(
            "POST",
            "/api/projects",
            &member_key,
            Some(json!({"name": "Members' project"})),
        ),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            "/api/workspace",
            &t.key(),
            Some(json!({"settings": {"members_manage_catalog": false}})),
        ),
    )
    .await;
    assert_eq!(status, 200);

    let project_uri = format!("/api/projects/{}", project["id"].as_str().unwrap());
    let counts = async |t: &TestApp| {
        (
            t.scalar("SELECT count(*) AS n FROM clients").await,
            t.scalar("SELECT count(*) AS n FROM projects").await,
            t.scalar("SELECT count(*) AS n FROM tasks").await,
            t.scalar("SELECT count(*) AS n FROM tags").await,
            t.texts("SELECT name AS t FROM projects").await,
        )
    };
    let before = counts(&t).await;
    for (method, uri, body) in [
        (
            "POST",
            "/api/clients".to_owned(),
            Some(json!({"name": "Acme"})),
        ),
        // A body the validation would refuse is refused for the role first.
        ("POST", "/api/clients".to_owned(), Some(json!({"name": ""}))),
        (
            "POST",
            "/api/projects".to_owned(),
            Some(json!({"name": "P"})),
        ),
        (
            "PATCH",
            project_uri.clone(),
            Some(json!({"name": "Renamed"})),
        ),
        ("DELETE", project_uri.clone(), None),
        (
            "POST",
            format!("{project_uri}/tasks"),
            Some(json!({"name": "T"})),
        ),
        (
            "POST",
            "/api/tags".to_owned(),
            Some(json!({"name": "urgent"})),
        ),
    ] {
        let (status, _, answer) = call(&app, req(method, &uri, &member_key, body)).await;
        assert_eq!(
            (status, answer),
            (403, json!({"error": "Forbidden"})),
            "{method} {uri}"
        );
    }
    assert_eq!(counts(&t).await, before, "nothing changed");
    // Reading stays open, and so does the published interface.
    let (status, _, _) = call(&app, req("GET", "/api/projects", &member_key, None)).await;
    assert_eq!(status, 200);
    let (status, _, _) = call(
        &app,
        req(
            "POST",
            "/api/integrations/automation/triggers/clients/find",
            &member_key,
            Some(json!({"workspace_id": t.workspace.id.to_string(), "name": "a"})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    // Admins still manage it.
    let (status, _, _) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &t.key(),
            Some(json!({"name": "Acme"})),
        ),
    )
    .await;
    assert_eq!(status, 201);
}

#[actix_web::test]
async fn the_workspace_and_its_settings_are_read_by_all_and_changed_by_admins() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, member_key) = t.colleague("Linus", Role::Member).await;
    let (_, admin_key) = t.colleague("Grace", Role::Admin).await;
    let defaults = json!({
        "id": t.workspace.id.to_string(),
        "name": "Acme",
        "timezone": "Europe/Berlin",
        "currency": "EUR",
        "settings": {
            "members_manage_catalog": true,
            "members_see_rates": false,
            "rounding": {"minutes": 0, "mode": "nearest"},
            "invoice_number_pattern": "{YYYY}-{SEQ:4}",
            "payment_terms_days": 30,
            "lock_before": null
        }
    });
    let (status, _, body) = call(&app, req("GET", "/api/workspace", &member_key, None)).await;
    assert_eq!((status, body), (200, defaults.clone()));

    let change = json!({"name": "Acme GmbH", "settings": {
        "members_see_rates": true,
        "rounding": {"minutes": 15, "mode": "up"},
        "invoice_number_pattern": "AC-{YY}{MM}-{SEQ:3}",
        "payment_terms_days": 14,
        "lock_before": "2026-01-01"
    }});
    let (status, _, body) = call(
        &app,
        req("PATCH", "/api/workspace", &member_key, Some(change.clone())),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    let (_, _, unchanged) = call(&app, req("GET", "/api/workspace", &t.key(), None)).await;
    assert_eq!(unchanged, defaults);

    let (status, _, changed) = call(
        &app,
        req("PATCH", "/api/workspace", &admin_key, Some(change)),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(changed["name"], "Acme GmbH");
    assert_eq!(
        changed["settings"],
        json!({
            "members_manage_catalog": true,
            "members_see_rates": true,
            "rounding": {"minutes": 15, "mode": "up"},
            "invoice_number_pattern": "AC-{YY}{MM}-{SEQ:3}",
            "payment_terms_days": 14,
            "lock_before": "2026-01-01"
        })
    );
    // Only the mode: the minutes stay. Null clears the lock date.
    let (_, _, again) = call(
        &app,
        req(
            "PATCH",
            "/api/workspace",
            &t.key(),
            Some(json!({"settings": {"rounding": {"mode": "down"}, "lock_before": null}})),
        ),
    )
    .await;
    assert_eq!(
        again["settings"]["rounding"],
        json!({"minutes": 15, "mode": "down"})
    );
    assert_eq!(again["settings"]["lock_before"], Value::Null);

    for (body, error) in [
        (
            json!({"settings": {"rounding": {"minutes": 61}}}),
            "rounding.minutes must be between 0 and 60, got: 61",
        ),
        (
            json!({"settings": {"rounding": {"mode": "sideways"}}}),
            "rounding.mode must be one of up, down, nearest, got: sideways",
        ),
        (
            json!({"settings": {"invoice_number_pattern": "INV-{YYYY}"}}),
            "invoice_number_pattern must hold {SEQ:n} exactly once",
        ),
        (
            json!({"settings": {"payment_terms_days": 366}}),
            "payment_terms_days must be between 0 and 365, got: 366",
        ),
        (
            json!({"settings": {"lock_before": "2026-13-01"}}),
            "Invalid request parameters",
        ),
        (
            json!({"timezone": "Mars/Olympus_Mons"}),
            "unknown time zone: Mars/Olympus_Mons",
        ),
        (
            json!({"currency": "XYZ"}),
            "currency must be an ISO 4217 code, got: XYZ",
        ),
        (json!({"name": ""}), "name must not be empty"),
    ] {
        let (status, _, answer) = call(
            &app,
            req("PATCH", "/api/workspace", &t.key(), Some(body.clone())),
        )
        .await;
        assert_eq!(
            (status, answer["error"].as_str().unwrap_or_default()),
            (400, error),
            "{body}"
        );
    }
    let (_, _, last) = call(&app, req("GET", "/api/workspace", &t.key(), None)).await;
    assert_eq!(last, again, "no refused change was written");
}

/// A member's request to a route only owners and admins may use (or, where the workspace keeps
/// the catalog to them, the catalog's) is refused by its role before any field of its body or
/// its path's id is checked (ADR 0026): a body that breaks every rule is 403 like a valid one,
/// and nothing changes.
#[actix_web::test]
async fn a_members_request_is_refused_by_its_role_before_its_fields_are_checked() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, member_key) = t.colleague("Linus", Role::Member).await;
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            "/api/workspace",
            &t.key(),
            Some(json!({"settings": {"members_manage_catalog": false}})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let counts = "SELECT (SELECT count(*) FROM clients) + (SELECT count(*) FROM projects) \
                  + (SELECT count(*) FROM rates) + (SELECT count(*) FROM invoices) \
                  + (SELECT count(*) FROM tags) AS n";
    let before = t.scalar(counts).await;
    // Bodies of the right shape whose fields the handlers refuse (400 for an owner).
    let empty = json!({});
    let unnamed = json!({"name": ""});
    for (method, uri, invalid) in [
        ("PATCH", "/api/workspace", &unnamed),
        ("POST", "/api/rates", &empty),
        ("POST", "/api/invoices", &empty),
        ("POST", "/api/invoices/preview", &empty),
        ("POST", "/api/clients", &unnamed),
        ("POST", "/api/projects", &unnamed),
        ("POST", "/api/tags", &unnamed),
        (
            "PATCH",
            "/api/members/not-a-uuid",
            &json!({"role": "emperor"}),
        ),
        ("DELETE", "/api/rates/not-a-uuid", &empty),
        ("POST", "/api/invoices/not-a-uuid/issue", &empty),
    ] {
        let (status, _, body) =
            call(&app, req(method, uri, &member_key, Some(invalid.clone()))).await;
        assert_eq!(
            (status, body),
            (403, json!({"error": "Forbidden"})),
            "{method} {uri}"
        );
    }
    let (status, _, body) = call(
        &app,
        req("GET", "/api/invoices/not-a-uuid", &member_key, None),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    // An owner's invalid body is the body's 400, and a malformed id the resource's 404.
    for (method, uri, invalid) in [
        ("POST", "/api/rates", &empty),
        ("POST", "/api/clients", &unnamed),
    ] {
        let (status, _, body) = call(&app, req(method, uri, &t.key(), Some(invalid.clone()))).await;
        assert_eq!(status, 400, "{method} {uri}: {body}");
    }
    let (status, _, body) =
        call(&app, req("GET", "/api/invoices/not-a-uuid", &t.key(), None)).await;
    assert_eq!((status, body), (404, json!({"error": "Invoice not found"})));
    let (status, _, body) =
        call(&app, req("DELETE", "/api/rates/not-a-uuid", &t.key(), None)).await;
    assert_eq!((status, body), (404, json!({"error": "Rate not found"})));
    assert_eq!(t.scalar(counts).await, before);
}
