//! Rates and the price of every entry (`docs/billing.md`): precedence, effective dates in the
//! workspace's time zone (across a DST change), the stored price and who sees it, the dry run,
//! deletion, hostile input, and a rate added while an entry changes.

use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::support::{TestApp, call, keyed as req};

/// A client (EUR) with a project and a task, made by the owner: their ids.
async fn catalog<S, B>(app: &S, t: &TestApp, currency: &str) -> (String, String, String)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let key = t.key();
    let (_, _, client) = call(
        app,
        req(
            "POST",
            "/api/clients",
            &key,
            Some(json!({"name": format!("Client {currency}"), "currency": currency})),
        ),
    )
    .await;
    let client = client["id"].as_str().unwrap().to_owned();
    let (_, _, project) = call(
        app,
        req(
            "POST",
            "/api/projects",
            &key,
            Some(json!({"name": format!("Project {currency}"), "client_id": client})),
        ),
    )
    .await;
    let project = project["id"].as_str().unwrap().to_owned();
    let (_, _, task) = call(
        app,
        req(
            "POST",
            &format!("/api/projects/{project}/tasks"),
            &key,
            Some(json!({"name": "Design"})),
        ),
    )
    .await;
    (client, project, task["id"].as_str().unwrap().to_owned())
}

#[actix_web::test]
async fn the_most_specific_rate_in_force_on_the_local_day_prices_each_entry_and_is_stored() {
    // The test workspace is in Europe/Berlin: summer time starts on 2026-03-29 at 02:00.
    let t = TestApp::new().await;
    let app = t.service().await;
    let (linus, linus_key) = t.colleague("Linus", Role::Member).await;
    let (_, project, task) = catalog(&app, &t, "EUR").await;
    let entry = async |start: &str, end: &str, task_id: Option<&str>| {
        let mut body = json!({"start": start, "end": end, "project_id": project, "billable": true});
        if let Some(task) = task_id {
            body["task_id"] = json!(task);
        }
        let (status, _, entry) = call(
            &app,
            req("POST", "/api/time-entries", &linus_key, Some(body)),
        )
        .await;
        assert_eq!(status, 201, "{entry}");
        entry["id"].as_str().unwrap().to_owned()
    };
    // Local days: 2026-03-28 (23:30 CET), 2026-03-29 (23:30 CEST), 2026-03-30 (00:30 CEST).
    let before_dst = entry("2026-03-28T22:30:00Z", "2026-03-28T23:30:00Z", None).await;
    let dst_day = entry("2026-03-29T21:30:00Z", "2026-03-29T22:30:00Z", None).await;
    let after_midnight = entry("2026-03-29T22:30:00Z", "2026-03-29T23:30:00Z", None).await;
    let on_task = entry("2026-04-02T08:00:00Z", "2026-04-02T09:30:00Z", Some(&task)).await;

    let rate = async |body: Value| {
        let (status, _, rate) = call(&app, req("POST", "/api/rates", &t.key(), Some(body))).await;
        assert_eq!(status, 201, "{rate}");
        rate
    };
    let workspace = rate(json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 10000, "effective_from": "2026-01-01"})).await;
    assert_eq!(
        workspace
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>(),
        [
            "id",
            "kind",
            "scope",
            "user_id",
            "client_id",
            "project_id",
            "task_id",
            "currency",
            "hourly_minor",
            "effective_from",
            "created_at"
        ]
    );
    assert_eq!(
        (workspace["scope"].clone(), workspace["user_id"].clone()),
        (json!("workspace"), Value::Null)
    );
    let member = rate(json!({"kind": "billable", "scope": "member", "user_id": linus.id.to_string(), "currency": "EUR", "hourly_minor": 12000, "effective_from": "2026-03-29"})).await;
    let project_rate = rate(json!({"kind": "billable", "scope": "project", "project_id": project, "currency": "EUR", "hourly_minor": 15000, "effective_from": "2026-03-30"})).await;
    let task_rate = rate(json!({"kind": "billable", "scope": "task", "task_id": task, "currency": "EUR", "hourly_minor": 17000, "effective_from": "2026-01-01"})).await;
    rate(json!({"kind": "cost", "scope": "workspace", "currency": "EUR", "hourly_minor": 4000, "effective_from": "2026-01-01"})).await;
    // A rate in another currency reaches no EUR entry.
    rate(json!({"kind": "billable", "scope": "project_member", "project_id": project, "user_id": linus.id.to_string(), "currency": "USD", "hourly_minor": 99900, "effective_from": "2026-01-01"})).await;

    let pricing = async |id: &str, key: &str| {
        let (status, _, entry) = call(
            &app,
            req("GET", &format!("/api/time-entries/{id}"), key, None),
        )
        .await;
        assert_eq!(status, 200);
        entry["pricing"].clone()
    };
    assert_eq!(
        pricing(&before_dst, &t.key()).await,
        json!({"currency": "EUR", "billable_rate_minor": 10000, "billable_amount_minor": 10000,
               "cost_rate_minor": 4000, "cost_amount_minor": 4000, "rate_scope": "workspace",
               "rate_id": workspace["id"], "rounded_seconds": 3600, "invoice_id": null, "locked": false})
    );
    assert_eq!(pricing(&dst_day, &t.key()).await["rate_id"], member["id"]);
    assert_eq!(
        pricing(&after_midnight, &t.key()).await["rate_id"],
        project_rate["id"]
    );
    let task_priced = pricing(&on_task, &t.key()).await;
    assert_eq!(
        (
            task_priced["rate_id"].clone(),
            task_priced["billable_amount_minor"].clone()
        ),
        (task_rate["id"].clone(), json!(25500)),
        "1.5 h at 170.00"
    );

    // A member who may not see rates gets no money keys at all; allowed, no cost keys.
    let hidden = pricing(&before_dst, &linus_key).await;
    assert_eq!(
        hidden,
        json!({"currency": "EUR", "rounded_seconds": 3600, "invoice_id": null, "locked": false})
    );
    let (status, _, body) = call(&app, req("GET", "/api/rates", &linus_key, None)).await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    call(&app, req("PATCH", "/api/workspace", &t.key(), Some(json!({"settings": {"members_see_rates": true, "rounding": {"minutes": 15, "mode": "up"}}})))).await;
    let seen = pricing(&on_task, &linus_key).await;
    assert_eq!(seen["billable_rate_minor"], 17000);
    assert!(
        seen.get("cost_rate_minor").is_none() && seen.get("cost_amount_minor").is_none(),
        "{seen}"
    );
    assert_eq!(seen["rounded_seconds"], 5400);
    let (status, _, rates) = call(&app, req("GET", "/api/rates", &linus_key, None)).await;
    assert_eq!(status, 200);
    assert!(
        rates["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["kind"] == "billable")
    );
    let (status, _, _) = call(&app, req("GET", "/api/rates?kind=cost", &linus_key, None)).await;
    assert_eq!(status, 403);
    let (_, _, all) = call(
        &app,
        req("GET", "/api/rates?scope=workspace", &t.key(), None),
    )
    .await;
    assert_eq!(
        all["data"].as_array().unwrap().len(),
        2,
        "the billable and the cost one"
    );

    // The list of entries carries the same prices.
    let (_, _, list) = call(&app, req("GET", "/api/time-entries", &t.key(), None)).await;
    assert!(
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["pricing"]["currency"] == "EUR")
    );
}

#[actix_web::test]
async fn a_dry_run_answers_what_would_change_and_writes_nothing() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, project, _) = catalog(&app, &t, "EUR").await;
    for (start, end) in [
        ("2026-05-04T08:00:00Z", "2026-05-04T09:00:00Z"),
        ("2026-05-05T08:00:00Z", "2026-05-05T08:20:00Z"),
    ] {
        let body = json!({"start": start, "end": end, "project_id": project, "billable": true});
        assert_eq!(
            call(&app, req("POST", "/api/time-entries", &t.key(), Some(body)))
                .await
                .0,
            201
        );
    }
    let unbilled = json!({"start": "2026-05-06T08:00:00Z", "end": "2026-05-06T09:00:00Z", "project_id": project});
    call(
        &app,
        req("POST", "/api/time-entries", &t.key(), Some(unbilled)),
    )
    .await;
    let rate = json!({"kind": "billable", "scope": "project", "project_id": project, "currency": "EUR", "hourly_minor": 9000, "effective_from": "2026-05-01", "dry_run": true});
    let prices = async || {
        t.texts("SELECT coalesce(billable_rate_minor::text, '-') AS t FROM time_entries ORDER BY start_at").await
    };
    let before = prices().await;
    let (status, _, answer) = call(
        &app,
        req("POST", "/api/rates", &t.key(), Some(rate.clone())),
    )
    .await;
    assert_eq!(
        (status, answer),
        (
            200,
            json!({"affected_entries": 2, "delta": [{"currency": "EUR", "billable_minor": 12000}]})
        ),
        "90.00 for an hour, 30.00 for 20 minutes; the non-billable entry gets no billable rate"
    );
    assert_eq!(prices().await, before, "nothing was written");
    assert_eq!(t.scalar("SELECT count(*) AS n FROM rates").await, 0);

    // For real, then a lower rate later on the same project: the dry run says the difference.
    let mut real = rate.clone();
    real["dry_run"] = json!(false);
    assert_eq!(
        call(&app, req("POST", "/api/rates", &t.key(), Some(real)))
            .await
            .0,
        201
    );
    let mut lower = rate.clone();
    lower["hourly_minor"] = json!(6000);
    lower["effective_from"] = json!("2026-05-05");
    let (_, _, answer) = call(&app, req("POST", "/api/rates", &t.key(), Some(lower))).await;
    assert_eq!(
        answer,
        json!({"affected_entries": 1, "delta": [{"currency": "EUR", "billable_minor": -1000}]})
    );
    assert_eq!(prices().await, ["9000", "9000", "-"]);
}

#[actix_web::test]
async fn deleting_a_rate_prices_its_entries_again_unless_one_is_locked() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let body =
        json!({"start": "2026-06-01T08:00:00Z", "end": "2026-06-01T10:00:00Z", "billable": true});
    let (_, _, entry) = call(&app, req("POST", "/api/time-entries", &t.key(), Some(body))).await;
    let uri = format!("/api/time-entries/{}", entry["id"].as_str().unwrap());
    let add = async |minor: i64, from: &str| {
        let body = json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": minor, "effective_from": from});
        call(&app, req("POST", "/api/rates", &t.key(), Some(body)))
            .await
            .2
    };
    add(5000, "2026-01-01").await;
    let newer = add(7000, "2026-05-01").await;
    let (_, _, priced) = call(&app, req("GET", &uri, &t.key(), None)).await;
    assert_eq!(priced["pricing"]["billable_amount_minor"], 14000);

    let (status, _, dup) = call(&app, req("POST", "/api/rates", &t.key(), Some(json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 1, "effective_from": "2026-05-01"})))).await;
    assert_eq!(
        (status, dup),
        (
            409,
            json!({"error": "Rate already exists", "existing_id": newer["id"]})
        )
    );

    let delete_uri = format!("/api/rates/{}", newer["id"].as_str().unwrap());
    // While the entry is locked, the rate that priced it stays.
    call(
        &app,
        req(
            "PATCH",
            "/api/workspace",
            &t.key(),
            Some(json!({"settings": {"lock_before": "2026-06-02"}})),
        ),
    )
    .await;
    let (status, _, body) = call(&app, req("DELETE", &delete_uri, &t.key(), None)).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["error"],
        "Rate priced locked entries (1 before the lock date 2026-06-02)"
    );
    let (_, _, locked) = call(&app, req("GET", &uri, &t.key(), None)).await;
    assert_eq!(locked["pricing"]["locked"], true);
    // Unlocked, it goes, and the entry falls back to the older row.
    call(
        &app,
        req(
            "PATCH",
            "/api/workspace",
            &t.key(),
            Some(json!({"settings": {"lock_before": null}})),
        ),
    )
    .await;
    let (status, _, _) = call(&app, req("DELETE", &delete_uri, &t.key(), None)).await;
    assert_eq!(status, 200);
    let (_, _, again) = call(&app, req("GET", &uri, &t.key(), None)).await;
    assert_eq!(again["pricing"]["billable_amount_minor"], 10000);
    let (status, _, body) = call(&app, req("DELETE", &delete_uri, &t.key(), None)).await;
    assert_eq!((status, body), (404, json!({"error": "Rate not found"})));
    let (status, _, _) = call(&app, req("DELETE", "/api/rates/not-a-uuid", &t.key(), None)).await;
    assert_eq!(status, 404);
}

/// A locked entry keeps the client rate that priced it even after its project moved to another
/// client: that rate cannot be deleted while the entry is locked, though the entry is no longer
/// among its client's.
#[actix_web::test]
async fn a_client_rate_that_priced_a_locked_entry_stays_after_the_project_moves() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, project, _) = catalog(&app, &t, "EUR").await;
    let (_, _, other) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &t.key(),
            Some(json!({"name": "Other client", "currency": "EUR"})),
        ),
    )
    .await;
    let (_, _, first) = call(
        &app,
        req("GET", &format!("/api/projects/{project}"), &t.key(), None),
    )
    .await;
    let body = json!({"kind": "billable", "scope": "client", "client_id": first["client_id"],
        "currency": "EUR", "hourly_minor": 9000, "effective_from": "2026-01-01"});
    let (status, _, rate) = call(&app, req("POST", "/api/rates", &t.key(), Some(body))).await;
    assert_eq!(status, 201, "{rate}");
    let body = json!({"start": "2026-06-01T08:00:00Z", "end": "2026-06-01T09:00:00Z",
        "project_id": project, "billable": true});
    let (_, _, entry) = call(&app, req("POST", "/api/time-entries", &t.key(), Some(body))).await;
    let uri = format!("/api/time-entries/{}", entry["id"].as_str().unwrap());
    let settings = json!({"settings": {"lock_before": "2026-06-02"}});
    let (status, _, _) = call(
        &app,
        req("PATCH", "/api/workspace", &t.key(), Some(settings)),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _, moved) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/projects/{project}"),
            &t.key(),
            Some(json!({"client_id": other["id"]})),
        ),
    )
    .await;
    assert_eq!(status, 200, "{moved}");
    let rate_uri = format!("/api/rates/{}", rate["id"].as_str().unwrap());
    let (status, _, body) = call(&app, req("DELETE", &rate_uri, &t.key(), None)).await;
    assert_eq!(
        (status, body),
        (
            409,
            json!({"error": "Rate priced locked entries (1 before the lock date 2026-06-02)"})
        )
    );
    let (_, _, kept) = call(&app, req("GET", &uri, &t.key(), None)).await;
    assert_eq!(kept["pricing"]["rate_id"], rate["id"]);
    assert_eq!(kept["pricing"]["billable_amount_minor"], 9000);
}

/// A deleted rate is looked for among the entries of its own target (the rate ids are in no
/// index): each entry it priced falls back to the next level in force, a colleague's entry and
/// an entry of another project keep theirs, and so do entries priced by other rows.
#[actix_web::test]
async fn deleting_a_scoped_rate_re_prices_the_entries_it_priced_and_no_other() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (linus, linus_key) = t.colleague("Linus", Role::Member).await;
    let (_, project, task) = catalog(&app, &t, "EUR").await;
    let entry = async |key: &str, project_id: Option<&str>, task_id: Option<&str>, hours: u32| {
        let mut body = json!({"start": "2026-06-01T08:00:00Z",
            "end": format!("2026-06-01T{:02}:00:00Z", 8 + hours), "billable": true});
        if let Some(project) = project_id {
            body["project_id"] = json!(project);
        }
        if let Some(task) = task_id {
            body["task_id"] = json!(task);
        }
        let (status, _, entry) =
            call(&app, req("POST", "/api/time-entries", key, Some(body))).await;
        assert_eq!(status, 201, "{entry}");
        format!("/api/time-entries/{}", entry["id"].as_str().unwrap())
    };
    let in_project = entry(&linus_key, Some(&project), None, 2).await;
    let on_task = entry(&linus_key, Some(&project), Some(&task), 1).await;
    let elsewhere = entry(&linus_key, None, None, 2).await;
    let owners = entry(&t.key(), Some(&project), None, 1).await;
    let rate = async |body: Value| {
        let (status, _, rate) = call(&app, req("POST", "/api/rates", &t.key(), Some(body))).await;
        assert_eq!(status, 201, "{rate}");
        format!("/api/rates/{}", rate["id"].as_str().unwrap())
    };
    let rate_body = |scope: &str, minor: i64| {
        json!({"kind": "billable", "scope": scope, "currency": "EUR", "hourly_minor": minor,
            "effective_from": "2026-01-01"})
    };
    rate(rate_body("workspace", 5000)).await;
    let mut member = rate_body("member", 6000);
    member["user_id"] = json!(linus.id.to_string());
    let member = rate(member).await;
    let mut of_project = rate_body("project", 8000);
    of_project["project_id"] = json!(project);
    let of_project = rate(of_project).await;
    let amounts = async || {
        let mut out = Vec::new();
        for uri in [&in_project, &on_task, &elsewhere, &owners] {
            let (_, _, entry) = call(&app, req("GET", uri, &t.key(), None)).await;
            out.push((
                entry["pricing"]["rate_scope"]
                    .as_str()
                    .unwrap_or("-")
                    .to_owned(),
                entry["pricing"]["billable_amount_minor"].as_i64().unwrap(),
            ));
        }
        out
    };
    let priced = |pairs: [(&str, i64); 4]| {
        pairs
            .map(|(scope, minor)| (scope.to_owned(), minor))
            .to_vec()
    };
    assert_eq!(
        amounts().await,
        priced([
            ("project", 16000),
            ("project", 8000),
            ("member", 12000),
            ("project", 8000)
        ])
    );
    let (status, _, _) = call(&app, req("DELETE", &of_project, &t.key(), None)).await;
    assert_eq!(status, 200);
    assert_eq!(
        amounts().await,
        priced([
            ("member", 12000),
            ("member", 6000),
            ("member", 12000),
            ("workspace", 5000)
        ])
    );
    let (status, _, _) = call(&app, req("DELETE", &member, &t.key(), None)).await;
    assert_eq!(status, 200);
    assert_eq!(
        amounts().await,
        priced([
            ("workspace", 10000),
            ("workspace", 5000),
            ("workspace", 10000),
            ("workspace", 5000)
        ])
    );
}

#[actix_web::test]
async fn hostile_rates_are_refused_with_a_clear_400_and_change_nothing() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, member_key) = t.colleague("Linus", Role::Member).await;
    let (other_ws, other_key) = t.other_workspace().await;
    let (_, _, foreign) = call(
        &app,
        req(
            "POST",
            "/api/projects",
            &other_key,
            Some(json!({"name": "Theirs"})),
        ),
    )
    .await;
    let base = json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 10000, "effective_from": "2026-01-01"});
    let with = |changes: Value| {
        let mut body = base.clone();
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                body.as_object_mut().unwrap().remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        body
    };
    let (status, _, body) = call(
        &app,
        req("POST", "/api/rates", &member_key, Some(base.clone())),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": "Forbidden"})));
    for (body, error) in [
        (
            with(json!({"hourly_minor": 1_000_000_001_i64})),
            "hourly_minor must be an integer from 0 to 1000000000 (minor units an hour; larger amounts could overflow over ten years of entries), got: 1000000001",
        ),
        (
            with(json!({"hourly_minor": -1})),
            "hourly_minor must be an integer from 0 to 1000000000 (minor units an hour; larger amounts could overflow over ten years of entries), got: -1",
        ),
        (
            with(json!({"hourly_minor": null})),
            "hourly_minor is required",
        ),
        (
            with(json!({"kind": "profit"})),
            "kind must be billable or cost, got: profit",
        ),
        (
            with(json!({"scope": "project"})),
            "project_id is required for scope project",
        ),
        (
            with(json!({"user_id": t.user.id.to_string()})),
            "user_id must be null for scope workspace",
        ),
        (
            with(json!({"scope": "project", "project_id": foreign["id"]})),
            "project_id does not name a project of this workspace",
        ),
        (
            with(json!({"scope": "member", "user_id": uuid::Uuid::nil().to_string()})),
            "user_id does not name a member of this workspace",
        ),
        (
            with(json!({"currency": "EURO"})),
            "currency must be an ISO 4217 code, got: EURO",
        ),
        (
            with(json!({"effective_from": "2026-02-30"})),
            "Invalid request parameters",
        ),
    ] {
        let (status, _, answer) = call(
            &app,
            req("POST", "/api/rates", &t.key(), Some(body.clone())),
        )
        .await;
        assert_eq!(
            (status, answer["error"].as_str().unwrap_or_default()),
            (400, error),
            "{body}"
        );
    }
    let (status, _, _) = call(
        &app,
        req(
            "POST",
            "/api/rates",
            &t.key(),
            Some(with(json!({"hourly_minor": 1.5}))),
        ),
    )
    .await;
    assert_eq!(status, 400, "a fraction of a minor unit");
    assert_eq!(t.scalar("SELECT count(*) AS n FROM rates").await, 0);
    let _ = other_ws;
}

/// A rate added while an entry is changed: whatever the order the database takes them in, the
/// entry ends up priced as the serial answer says (its new project's rate), never with the old
/// project's rate or without the new rate.
#[actix_web::test]
async fn an_entry_changed_while_a_rate_is_added_ends_with_a_consistent_price() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, first, _) = catalog(&app, &t, "EUR").await;
    let (_, _, second) = call(
        &app,
        req(
            "POST",
            "/api/projects",
            &t.key(),
            Some(json!({"name": "Second"})),
        ),
    )
    .await;
    let second = second["id"].as_str().unwrap().to_owned();
    let base = json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 1000, "effective_from": "2026-01-01"});
    call(&app, req("POST", "/api/rates", &t.key(), Some(base))).await;
    for round in 0..12 {
        let body = json!({"start": "2026-07-01T08:00:00Z", "end": "2026-07-01T09:00:00Z", "project_id": first, "billable": true});
        let (_, _, entry) =
            call(&app, req("POST", "/api/time-entries", &t.key(), Some(body))).await;
        let uri = format!("/api/time-entries/{}", entry["id"].as_str().unwrap());
        let rate = json!({"kind": "billable", "scope": "project", "project_id": second, "currency": "EUR",
                          "hourly_minor": 2000 + round, "effective_from": format!("2026-06-{:02}", round + 1)});
        let move_it = req("PATCH", &uri, &t.key(), Some(json!({"project_id": second})));
        let add_rate = req("POST", "/api/rates", &t.key(), Some(rate));
        let (moved, added) = futures_util::join!(call(&app, move_it), call(&app, add_rate));
        assert_eq!((moved.0, added.0), (200, 201));
        let (_, _, after) = call(&app, req("GET", &uri, &t.key(), None)).await;
        assert_eq!(
            after["pricing"]["rate_id"], added.2["id"],
            "round {round}: {after}"
        );
        assert_eq!(after["pricing"]["billable_rate_minor"], 2000 + round);
    }
}
