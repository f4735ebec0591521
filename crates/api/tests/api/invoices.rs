//! Invoices (`docs/billing.md`, sections 5 and 6): preview and create from uninvoiced time, the
//! lines and totals, the life cycle, payments, locking, concurrent creates and issues, and
//! hostile input.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::support::{TestApp, call, date_from_today, error_of, keyed as req};

/// Client `name` in `currency` with projects "Web" (with task "Design") and "App", and a
/// billable workspace rate of 100.00 from 2026-01-01 and a project rate of 150.00 on "App" from
/// 2026-03-16: (client, web, design task, app).
async fn setup<S, B>(app: &S, t: &TestApp, name: &str) -> (String, String, String, String)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let key = t.key();
    let post = async |path: &str, body: Value| {
        let (status, _, v) = call(app, req("POST", path, &key, Some(body))).await;
        assert!(status == 201 || status == 200, "{path}: {status} {v}");
        v["id"].as_str().unwrap_or_default().to_owned()
    };
    let client = post(
        "/api/clients",
        json!({"name": name, "currency": "EUR", "address": "Hauptstraße 1\n10115 Berlin"}),
    )
    .await;
    let web = post("/api/projects", json!({"name": "Web", "client_id": client})).await;
    let design = post(
        &format!("/api/projects/{web}/tasks"),
        json!({"name": "Design"}),
    )
    .await;
    let app_project = post("/api/projects", json!({"name": "App", "client_id": client})).await;
    let _ = post("/api/rates", json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 10000, "effective_from": "2026-01-01"})).await;
    let _ = post("/api/rates", json!({"kind": "billable", "scope": "project", "project_id": app_project, "currency": "EUR", "hourly_minor": 15000, "effective_from": "2026-03-16"})).await;
    (client, web, design, app_project)
}

/// A stopped entry; its id.
async fn entry<S, B>(app: &S, key: &str, body: Value) -> String
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let (status, _, e) = call(app, req("POST", "/api/time-entries", key, Some(body))).await;
    assert_eq!(status, 201, "{e}");
    e["id"].as_str().unwrap().to_owned()
}

#[actix_web::test]
async fn an_invoice_bills_uninvoiced_time_in_lines_that_never_mix_prices_and_locks_its_entries() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (linus, linus_key) = t.colleague("Linus", Role::Member).await;
    let (client, web, design, app_project) = setup(&app, &t, "Acme GmbH").await;
    // Web/Design: 1.5 h + 0.5 h at 100.00; App: 1 h at 100.00 (before the project rate) and
    // 2 h at 150.00 — two lines for one group; a non-billable and a running entry stay out.
    let e1 = entry(&app, &linus_key, json!({"start": "2026-03-02T08:00:00Z", "end": "2026-03-02T09:30:00Z", "project_id": web, "task_id": design, "billable": true})).await;
    let e2 = entry(&app, &key, json!({"start": "2026-03-03T08:00:00Z", "end": "2026-03-03T08:30:00Z", "project_id": web, "task_id": design, "billable": true})).await;
    let e3 = entry(&app, &key, json!({"start": "2026-03-10T08:00:00Z", "end": "2026-03-10T09:00:00Z", "project_id": app_project, "billable": true})).await;
    let e4 = entry(&app, &linus_key, json!({"start": "2026-03-20T08:00:00Z", "end": "2026-03-20T10:00:00Z", "project_id": app_project, "billable": true})).await;
    let _not_billable = entry(&app, &key, json!({"start": "2026-03-21T08:00:00Z", "end": "2026-03-21T10:00:00Z", "project_id": web, "billable": false})).await;
    // April is outside the period.
    let april = entry(&app, &key, json!({"start": "2026-04-01T08:00:00Z", "end": "2026-04-01T09:00:00Z", "project_id": web, "billable": true})).await;

    let body = json!({"client_id": client, "from": "2026-03-01", "to": "2026-03-31",
        "group_by": ["project", "task"], "discount_percent": 10, "tax_percent": "19",
        "notes": "Thank you", "extra_lines": [{"description": "Hosting", "quantity": "1.5", "unit_price_minor": 2000}]});

    // A member may neither preview nor create.
    for path in ["/api/invoices/preview", "/api/invoices"] {
        let (status, _, err) = call(&app, req("POST", path, &linus_key, Some(body.clone()))).await;
        assert_eq!((status, err), (403, json!({"error": "Forbidden"})));
    }
    let (status, _, preview) = call(
        &app,
        req("POST", "/api/invoices/preview", &key, Some(body.clone())),
    )
    .await;
    assert_eq!(status, 200, "{preview}");
    assert!(
        preview.get("id").is_none(),
        "a preview has no id: {preview}"
    );
    assert_eq!(t.scalar("SELECT count(*) AS n FROM invoices").await, 0);
    let lines: Vec<Value> = preview["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            json!([
                l["kind"],
                l["description"],
                l["quantity"],
                l["unit_price_minor"],
                l["amount_minor"],
                l["entry_ids"]
            ])
        })
        .collect();
    assert_eq!(
        lines,
        [
            json!(["time", "App · No task", "1.000", 10000, 10000, [e3]]),
            json!(["time", "App · No task", "2.000", 15000, 30000, [e4]]),
            json!(["time", "Web · Design", "2.000", 10000, 20000, [e1, e2]]),
            json!(["extra", "Hosting", "1.500", 2000, 3000, []]),
        ]
    );
    // 63000; discount 6300; tax 19 % of 56700 = 10773; total 67473.
    assert_eq!(
        [
            &preview["subtotal_minor"],
            &preview["discount_minor"],
            &preview["tax_minor"],
            &preview["total_minor"],
            &preview["balance_minor"]
        ],
        [
            &json!(63000),
            &json!(6300),
            &json!(10773),
            &json!(67473),
            &json!(67473)
        ]
    );

    let (status, _, invoice) =
        call(&app, req("POST", "/api/invoices", &key, Some(body.clone()))).await;
    assert_eq!(status, 201, "{invoice}");
    let id = invoice["id"].as_str().unwrap().to_owned();
    // The create wrote what the preview showed.
    let strip = |mut v: Value| {
        let o = v.as_object_mut().unwrap();
        for k in ["id", "created_at", "updated_at"] {
            o.remove(k);
        }
        for line in o["lines"].as_array_mut().unwrap() {
            line.as_object_mut().unwrap().remove("id");
        }
        v
    };
    assert_eq!(strip(invoice.clone()), strip(preview.clone()));
    assert_eq!(
        [
            &invoice["status"],
            &invoice["payment_status"],
            &invoice["number"],
            &invoice["currency"]
        ],
        [
            &json!("draft"),
            &json!("unpaid"),
            &Value::Null,
            &json!("EUR")
        ]
    );
    assert_eq!(
        invoice["client"],
        json!({"id": client, "name": "Acme GmbH", "address": "Hauptstraße 1\n10115 Berlin"})
    );
    assert_eq!(
        invoice["period"],
        json!({"from": "2026-03-01", "to": "2026-03-31"})
    );
    let (_, _, read) = call(&app, req("GET", &format!("/api/invoices/{id}"), &key, None)).await;
    assert_eq!(read, invoice);

    // Its entries are locked: for the owner too, with a detail naming the invoice.
    let (status, _, err) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/time-entries/{e1}"),
            &key,
            Some(json!({"description": "x"})),
        ),
    )
    .await;
    assert_eq!(
        (status, &err["error"]),
        (409, &json!("Time entry is locked"))
    );
    assert!(err["detail"].as_str().unwrap().contains(&id), "{err}");
    let (status, _, err) = call(
        &app,
        req("DELETE", &format!("/api/time-entries/{e2}"), &key, None),
    )
    .await;
    assert_eq!(
        (status, &err["error"]),
        (409, &json!("Time entry is locked"))
    );
    let (_, _, e1_body) = call(
        &app,
        req("GET", &format!("/api/time-entries/{e1}"), &key, None),
    )
    .await;
    assert_eq!(
        (
            &e1_body["pricing"]["invoice_id"],
            &e1_body["pricing"]["locked"],
            &e1_body["description"]
        ),
        (&json!(id), &json!(true), &json!(""))
    );
    // The uninvoiced report no longer counts them; the invoiced filter finds them.
    let (_, _, rows) = call(
        &app,
        req(
            "GET",
            "/api/reports/detailed?from=2026-03-01&to=2026-04-30&invoiced=true",
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(rows["data"].as_array().unwrap().len(), 4);
    // A rate added later does not re-price them.
    let (status, _, dry) = call(&app, req("POST", "/api/rates", &key, Some(json!({"kind": "billable", "scope": "client", "client_id": client, "currency": "EUR", "hourly_minor": 50000, "effective_from": "2026-01-01", "dry_run": true})))).await;
    assert_eq!(
        (status, &dry["affected_entries"]),
        (200, &json!(1)),
        "only April's: {dry}"
    );
    // A second create finds nothing left in March.
    let (status, _, err) = call(
        &app,
        req(
            "POST",
            "/api/invoices",
            &key,
            Some(json!({"client_id": client, "from": "2026-03-01", "to": "2026-03-31"})),
        ),
    )
    .await;
    assert_eq!((status, err), (409, json!({"error": "Nothing to invoice"})));

    // The draft's edits: totals follow; null clears the notes.
    // Due a year from today: still ahead whenever the test runs.
    let due = date_from_today(366);
    let (status, _, edited) = call(&app, req("PATCH", &format!("/api/invoices/{id}"), &key, Some(json!({"discount_percent": 0, "tax_percent": 0, "extra_lines": [], "notes": null, "issue_date": "2026-04-30", "due_date": due})))).await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(
        [
            &edited["subtotal_minor"],
            &edited["total_minor"],
            &edited["notes"],
            &edited["due_date"]
        ],
        [&json!(60000), &json!(60000), &Value::Null, &json!(due)]
    );
    assert_eq!(edited["lines"].as_array().unwrap().len(), 3);

    // Issue: the first number of the pattern for the issue date; frozen from then on.
    let (status, _, issued) = call(
        &app,
        req("POST", &format!("/api/invoices/{id}/issue"), &key, None),
    )
    .await;
    assert_eq!(status, 200, "{issued}");
    let year = issued["issue_date"].as_str().unwrap()[..4].to_owned();
    assert_eq!(issued["number"], json!(format!("{year}-0001")));
    assert_eq!(
        (&issued["status"], &issued["due_date"]),
        (&json!("issued"), &json!(due))
    );
    let (status, _, err) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/invoices/{id}"),
            &key,
            Some(json!({"notes": "late"})),
        ),
    )
    .await;
    assert_eq!((status, err), (409, json!({"error": "Invoice is issued"})));
    let (status, _, err) = call(
        &app,
        req("DELETE", &format!("/api/invoices/{id}"), &key, None),
    )
    .await;
    assert_eq!((status, err), (409, json!({"error": "Invoice is issued"})));
    let (status, _, err) = call(
        &app,
        req("POST", &format!("/api/invoices/{id}/issue"), &key, None),
    )
    .await;
    assert_eq!((status, err), (409, json!({"error": "Invoice is issued"})));
    let (status, _, err) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/time-entries/{e1}"),
            &key,
            Some(json!({"description": "x"})),
        ),
    )
    .await;
    assert_eq!(status, 409, "{err}");
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("{year}-0001")),
        "{err}"
    );

    // Payments: more than the balance is 400 and writes nothing; then partial, then paid.
    let pay = async |amount: Value| {
        call(
            &app,
            req(
                "POST",
                &format!("/api/invoices/{id}/payments"),
                &key,
                Some(json!({"amount_minor": amount, "paid_on": "2026-05-01", "note": "SEPA"})),
            ),
        )
        .await
    };
    let (status, _, err) = pay(json!(60001)).await;
    assert_eq!(
        (status, error_of(&err)),
        (
            400,
            json!({"error": "amount_minor must be an integer from 1 to the balance, 60000, got: 60001"})
        )
    );
    for bad in [json!(0), json!(-5), json!(1.5), json!("100")] {
        assert_eq!(pay(bad.clone()).await.0, 400, "{bad}");
    }
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM invoice_payments").await,
        0
    );
    let (status, _, partial) = pay(json!(20000)).await;
    assert_eq!(
        (
            status,
            &partial["payment_status"],
            &partial["balance_minor"]
        ),
        (201, &json!("partially_paid"), &json!(40000))
    );
    let (_, _, paid) = pay(json!(40000)).await;
    assert_eq!(
        (
            &paid["payment_status"],
            &paid["paid_minor"],
            &paid["balance_minor"]
        ),
        (&json!("paid"), &json!(60000), &json!(0))
    );
    let payment = paid["payments"][1]["id"].as_str().unwrap().to_owned();
    let (status, _, unpaid) = call(
        &app,
        req(
            "DELETE",
            &format!("/api/invoices/{id}/payments/{payment}"),
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(
        (status, &unpaid["payment_status"]),
        (200, &json!("partially_paid"))
    );
    let (_, _, list) = call(
        &app,
        req(
            "GET",
            "/api/invoices?payment_status=partially_paid",
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    let (_, _, list) = call(
        &app,
        req("GET", "/api/invoices?payment_status=paid", &key, None),
    )
    .await;
    assert_eq!(list["data"], json!([]));

    // Void: a reason is required; the entries are free again, and priced by today's rates.
    let (status, _, err) = call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{id}/void"),
            &key,
            Some(json!({})),
        ),
    )
    .await;
    assert_eq!((status, err), (400, json!({"error": "reason is required"})));
    let (status, _, void) = call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{id}/void"),
            &key,
            Some(json!({"reason": "Wrong period"})),
        ),
    )
    .await;
    assert_eq!(
        (status, &void["status"], &void["void_reason"]),
        (200, &json!("void"), &json!("Wrong period"))
    );
    for (path, body) in [("issue", None), ("void", Some(json!({"reason": "again"})))] {
        let (status, _, err) = call(
            &app,
            req("POST", &format!("/api/invoices/{id}/{path}"), &key, body),
        )
        .await;
        assert_eq!(
            (status, err),
            (409, json!({"error": "Invoice is void"})),
            "{path}"
        );
    }
    let (status, _, changed) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/time-entries/{e1}"),
            &key,
            Some(json!({"description": "fixed"})),
        ),
    )
    .await;
    assert_eq!(
        (
            status,
            &changed["description"],
            &changed["pricing"]["locked"]
        ),
        (200, &json!("fixed"), &json!(false))
    );
    // The number is never given again: the next invoice takes 0002.
    let (_, _, next) = call(
        &app,
        req(
            "POST",
            "/api/invoices",
            &key,
            Some(json!({"client_id": client, "from": "2026-03-01", "to": "2026-04-30"})),
        ),
    )
    .await;
    let next_id = next["id"].as_str().unwrap();
    // Without grouping: one line per unit price (4 entries at 100.00, 1 at 150.00).
    let counts: Vec<usize> = next["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["entry_ids"].as_array().unwrap().len())
        .collect();
    assert_eq!(counts, [4, 1], "{next}");
    assert!(next["lines"].to_string().contains(&april));
    // Issued in the first's year (numbers count per year of the issue date; today's may be
    // another).
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/invoices/{next_id}"),
            &key,
            Some(json!({"issue_date": "2026-05-04"})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let (_, _, issued) = call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{next_id}/issue"),
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(issued["number"], json!(format!("{year}-0002")));
    // A member may not read invoices either.
    let (status, _, _) = call(&app, req("GET", "/api/invoices", &linus_key, None)).await;
    assert_eq!(status, 403);
    let _ = linus;
}

#[actix_web::test]
async fn a_draft_deleted_releases_its_entries_and_the_lock_date_locks_for_every_role() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (client, web, _, _) = setup(&app, &t, "Lumina").await;
    let e = entry(&app, &key, json!({"start": "2026-02-02T08:00:00Z", "end": "2026-02-02T09:00:00Z", "project_id": web, "billable": true})).await;
    let (_, _, draft) = call(
        &app,
        req(
            "POST",
            "/api/invoices",
            &key,
            Some(json!({"client_id": client, "from": "2026-02-01", "to": "2026-02-28"})),
        ),
    )
    .await;
    let id = draft["id"].as_str().unwrap();
    let (status, _, err) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/time-entries/{e}"),
            &key,
            Some(json!({"billable": false})),
        ),
    )
    .await;
    assert_eq!(status, 409, "{err}");
    assert!(err["detail"].as_str().unwrap().contains("draft"), "{err}");
    let (status, _, err) = call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{id}/void"),
            &key,
            Some(json!({"reason": "x"})),
        ),
    )
    .await;
    assert_eq!((status, &err["error"]), (409, &json!("Invoice is a draft")));
    let (status, _, err) = call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{id}/payments"),
            &key,
            Some(json!({"amount_minor": 1, "paid_on": "2026-03-01"})),
        ),
    )
    .await;
    assert_eq!((status, &err["error"]), (409, &json!("Invoice is a draft")));
    let (status, _, ok) = call(
        &app,
        req("DELETE", &format!("/api/invoices/{id}"), &key, None),
    )
    .await;
    assert_eq!((status, ok), (200, json!({"success": true})));
    let (status, _, _) = call(&app, req("GET", &format!("/api/invoices/{id}"), &key, None)).await;
    assert_eq!(status, 404);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM invoice_lines").await, 0);

    // Issued with a due date past and nothing paid: overdue, and found by that filter.
    let (_, _, fee) = call(&app, req("POST", "/api/invoices", &key, Some(json!({"client_id": client, "from": "2026-06-01", "to": "2026-06-30", "extra_lines": [{"description": "Retainer", "quantity": 1, "unit_price_minor": 50000}]})))).await;
    let fee = fee["id"].as_str().unwrap().to_owned();
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/invoices/{fee}"),
            &key,
            Some(json!({"issue_date": "2026-01-01", "due_date": "2026-01-31"})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let (_, _, issued) = call(
        &app,
        req("POST", &format!("/api/invoices/{fee}/issue"), &key, None),
    )
    .await;
    assert_eq!(
        (&issued["number"], &issued["payment_status"]),
        (&json!("2026-0001"), &json!("overdue"))
    );
    let (_, _, overdue) = call(
        &app,
        req(
            "GET",
            "/api/invoices?payment_status=overdue&status=issued",
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(overdue["data"][0]["id"], json!(fee));
    assert_eq!(overdue["data"].as_array().unwrap().len(), 1);

    // The lock date: entries starting before it refuse change and deletion, for the owner too,
    // and none may be created or started inside the locked period.
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            "/api/workspace",
            &key,
            Some(json!({"settings": {"lock_before": "2026-03-01"}})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let locked = json!({"error": "Time entry is locked", "detail": "The workspace locks entries that start before 2026-03-01 (its lock_before)"});
    let (status, _, err) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/time-entries/{e}"),
            &key,
            Some(json!({"description": "x"})),
        ),
    )
    .await;
    assert_eq!((status, &err), (409, &locked));
    let (status, _, err) = call(
        &app,
        req("DELETE", &format!("/api/time-entries/{e}"), &key, None),
    )
    .await;
    assert_eq!((status, &err), (409, &locked));
    // Moving an open entry into the locked period is refused too.
    let open = entry(
        &app,
        &key,
        json!({"start": "2026-03-05T08:00:00Z", "end": "2026-03-05T09:00:00Z"}),
    )
    .await;
    let (status, _, err) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/time-entries/{open}"),
            &key,
            Some(json!({"start": "2026-02-27T08:00:00Z"})),
        ),
    )
    .await;
    assert_eq!((status, &err), (409, &locked));
    let (status, _, err) = call(
        &app,
        req(
            "POST",
            "/api/time-entries",
            &key,
            Some(json!({"start": "2026-02-10T08:00:00Z", "end": "2026-02-10T09:00:00Z"})),
        ),
    )
    .await;
    assert_eq!((status, &err), (409, &locked));
    // An invoice does not take locked entries.
    let (status, _, err) = call(
        &app,
        req(
            "POST",
            "/api/invoices/preview",
            &key,
            Some(json!({"client_id": client, "from": "2026-02-01", "to": "2026-02-28"})),
        ),
    )
    .await;
    assert_eq!((status, err), (409, json!({"error": "Nothing to invoice"})));
    // A timer cannot start while today is locked.
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            "/api/workspace",
            &key,
            Some(json!({"settings": {"lock_before": date_from_today(2)}})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _, err) = call(
        &app,
        req("POST", "/api/time-entries/start", &key, Some(json!({}))),
    )
    .await;
    assert_eq!(
        (status, &err["error"]),
        (409, &json!("Time entry is locked"))
    );
}

#[actix_web::test]
async fn concurrent_creates_never_bill_an_entry_twice_and_racing_issues_number_without_gaps() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (client, web, _, app_project) = setup(&app, &t, "Race").await;
    for day in 1..=20 {
        let project = if day % 2 == 0 { &web } else { &app_project };
        entry(&app, &key, json!({"start": format!("2026-05-{day:02}T08:00:00Z"), "end": format!("2026-05-{day:02}T09:00:00Z"), "project_id": project, "billable": true})).await;
    }
    // Two creates over overlapping periods, at once.
    let create = |from: &str, to: &str| {
        req(
            "POST",
            "/api/invoices",
            &key,
            Some(json!({"client_id": client, "from": from, "to": to})),
        )
    };
    let (a, b) = futures_util::join!(
        call(&app, create("2026-05-01", "2026-05-15")),
        call(&app, create("2026-05-10", "2026-05-20"))
    );
    let billed = |v: &Value| -> Vec<String> {
        v["lines"]
            .as_array()
            .map(|lines| {
                lines
                    .iter()
                    .flat_map(|l| {
                        l["entry_ids"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|e| e.as_str().unwrap().to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (mut ids_a, ids_b) = (billed(&a.2), billed(&b.2));
    assert!(a.0 == 201 || a.0 == 409, "{a:?}");
    assert!(b.0 == 201 || b.0 == 409, "{b:?}");
    let total = ids_a.len() + ids_b.len();
    ids_a.extend(ids_b);
    ids_a.sort();
    ids_a.dedup();
    assert_eq!(ids_a.len(), total, "an entry billed twice");
    assert_eq!(total, 20, "together they bill every entry of 1 to 20 May");
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM time_entries WHERE invoice_id IS NOT NULL")
            .await,
        20
    );

    // Twenty drafts (one extra line each) issued at once: numbers 1 to 20, each once.
    let mut drafts = Vec::new();
    for n in 0..20 {
        let (status, _, d) = call(&app, req("POST", "/api/invoices", &key, Some(json!({"client_id": client, "from": "2026-06-01", "to": "2026-06-30", "extra_lines": [{"description": format!("Fee {n}"), "quantity": 1, "unit_price_minor": 100}]})))).await;
        assert_eq!(status, 201, "{d}");
        drafts.push(d["id"].as_str().unwrap().to_owned());
    }
    let issues = drafts.iter().map(|id| {
        call(
            &app,
            req("POST", &format!("/api/invoices/{id}/issue"), &key, None),
        )
    });
    let results = futures_util::future::join_all(issues).await;
    let mut numbers: Vec<String> = results
        .iter()
        .map(|(status, _, v)| {
            assert_eq!(*status, 200, "{v}");
            v["number"].as_str().unwrap().to_owned()
        })
        .collect();
    numbers.sort();
    let year = &numbers[0][..4];
    let expected: Vec<String> = (1..=20).map(|n| format!("{year}-{n:04}")).collect();
    assert_eq!(numbers, expected);
}

#[actix_web::test]
async fn hostile_invoice_input_is_a_clear_4xx_and_writes_nothing() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (client, web, _, _) = setup(&app, &t, "Hostile").await;
    entry(&app, &key, json!({"start": "2026-07-01T08:00:00Z", "end": "2026-07-01T09:00:00Z", "project_id": web, "billable": true})).await;
    let (_, other_key) = t.other_workspace().await;
    let (_, _, foreign) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &other_key,
            Some(json!({"name": "Theirs"})),
        ),
    )
    .await;
    let (_, _, foreign_project) = call(
        &app,
        req(
            "POST",
            "/api/projects",
            &other_key,
            Some(json!({"name": "P", "client_id": foreign["id"]})),
        ),
    )
    .await;
    let (_, _, other_client) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &key,
            Some(json!({"name": "Another"})),
        ),
    )
    .await;
    let (_, _, not_its_project) = call(
        &app,
        req(
            "POST",
            "/api/projects",
            &key,
            Some(json!({"name": "Q", "client_id": other_client["id"]})),
        ),
    )
    .await;
    let base = json!({"client_id": client, "from": "2026-07-01", "to": "2026-07-31"});
    let with = |patch: Value| {
        let mut b = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let cases = [
        (
            with(json!({"client_id": foreign["id"]})),
            "client_id does not name a client of this workspace",
        ),
        (with(json!({"client_id": null})), "client_id is required"),
        (with(json!({"project_ids": [foreign_project["id"]]})), ""),
        (with(json!({"project_ids": [not_its_project["id"]]})), ""),
        (
            with(json!({"to": "2026-06-30"})),
            "to must not be before from",
        ),
        (
            with(json!({"from": "2025-01-01", "to": "2026-07-31"})),
            "from and to must be at most 366 days apart",
        ),
        (with(json!({"from": "July"})), ""),
        (
            with(json!({"group_by": ["client"]})),
            "group_by takes project, task, user and day, got: client",
        ),
        (
            with(json!({"group_by": ["day", "day"]})),
            "group_by names day twice",
        ),
        (with(json!({"tax_percent": 100.5})), ""),
        (with(json!({"discount_percent": -1})), ""),
        (with(json!({"tax_percent": "1e2"})), ""),
        (
            with(json!({"tax_percent": true})),
            "tax_percent must be a number",
        ),
        (
            with(
                json!({"extra_lines": [{"description": "x", "quantity": -1, "unit_price_minor": 1}]}),
            ),
            "",
        ),
        (
            with(
                json!({"extra_lines": [{"description": "x", "quantity": 1, "unit_price_minor": -1}]}),
            ),
            "",
        ),
        (
            with(
                json!({"extra_lines": [{"description": "x", "quantity": 1, "unit_price_minor": 1_000_000_000_001_i64}]}),
            ),
            "",
        ),
        (
            with(
                json!({"extra_lines": [{"description": "x", "quantity": "10000000", "unit_price_minor": 1}]}),
            ),
            "",
        ),
        (
            with(
                json!({"extra_lines": [{"description": "x", "quantity": "0.0001", "unit_price_minor": 1}]}),
            ),
            "",
        ),
        (
            with(
                json!({"extra_lines": [{"description": "", "quantity": 1, "unit_price_minor": 1}]}),
            ),
            "",
        ),
        (
            with(json!({"extra_lines": [{"quantity": 1, "unit_price_minor": 1}]})),
            "extra_lines[0].description is required",
        ),
        (
            with(json!({"notes": "x".repeat(5001)})),
            "notes must be at most 5000 characters",
        ),
        (with(json!({"notes": "a\u{0}b"})), ""),
    ];
    for (body, message) in cases {
        for path in ["/api/invoices/preview", "/api/invoices"] {
            let (status, _, err) = call(&app, req("POST", path, &key, Some(body.clone()))).await;
            assert_eq!(status, 400, "{body} → {err}");
            if !message.is_empty() {
                assert_eq!(error_of(&err), json!({"error": message}), "{body}");
            }
        }
    }
    let (status, _, _) = call(
        &app,
        req("POST", "/api/invoices", &key, Some(json!([1, 2]))),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM invoices").await, 0);
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM time_entries WHERE invoice_id IS NOT NULL")
            .await,
        0
    );

    // Unknown and malformed ids are 404; another workspace's invoice is unknown here.
    let (_, _, draft) = call(&app, req("POST", "/api/invoices", &key, Some(base.clone()))).await;
    let id = draft["id"].as_str().unwrap();
    for path in [
        "/api/invoices/00000000-0000-0000-0000-000000000000".to_owned(),
        "/api/invoices/not-a-uuid".to_owned(),
    ] {
        let (status, _, err) = call(&app, req("GET", &path, &key, None)).await;
        assert_eq!((status, err), (404, json!({"error": "Invoice not found"})));
    }
    let (status, _, _) = call(
        &app,
        req("GET", &format!("/api/invoices/{id}"), &other_key, None),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _, _) = call(
        &app,
        req("DELETE", &format!("/api/invoices/{id}"), &other_key, None),
    )
    .await;
    assert_eq!(status, 404);
    // Hostile edits of the draft change nothing.
    let before = t
        .scalar(&format!(
            "SELECT total_minor AS n FROM invoices WHERE id = '{id}'"
        ))
        .await;
    for body in [
        json!({"tax_percent": 101}),
        json!({"issue_date": "2026-08-10", "due_date": "2026-08-01"}),
        json!({"extra_lines": [{"description": "x", "quantity": 1, "unit_price_minor": -3}]}),
        json!({"due_date": "soon"}),
    ] {
        let (status, _, err) = call(
            &app,
            req(
                "PATCH",
                &format!("/api/invoices/{id}"),
                &key,
                Some(body.clone()),
            ),
        )
        .await;
        assert_eq!(status, 400, "{body} → {err}");
    }
    assert_eq!(
        t.scalar(&format!(
            "SELECT total_minor AS n FROM invoices WHERE id = '{id}'"
        ))
        .await,
        before
    );
    for (query, message) in [
        (
            "status=open",
            "status must be draft, issued or void, got: open",
        ),
        (
            "payment_status=late",
            "payment_status must be unpaid, partially_paid, paid or overdue, got: late",
        ),
        ("client_id=x", "client_id must be a UUID"),
    ] {
        let (status, _, err) = call(
            &app,
            req("GET", &format!("/api/invoices?{query}"), &key, None),
        )
        .await;
        assert_eq!((status, error_of(&err)), (400, json!({"error": message})));
    }
}

#[actix_web::test]
async fn a_line_is_the_sum_of_its_entries_and_the_total_follows_for_random_entries() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let mut rng = StdRng::seed_from_u64(4747);
    let (client, web, design, app_project) = setup(&app, &t, "Random").await;
    let (_, member_key) = t.colleague("Mia", Role::Member).await;
    for _ in 0..40 {
        let day = rng.random_range(1..29);
        let start = time::OffsetDateTime::parse(
            &format!(
                "2026-02-{day:02}T{:02}:{:02}:{:02}Z",
                rng.random_range(0..24),
                rng.random_range(0..60),
                rng.random_range(0..60)
            ),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        let end = start + time::Duration::seconds(rng.random_range(1..30_000));
        let project = [&web, &app_project][rng.random_range(0..2)];
        let mut body = json!({"start": timetrack_domain::timefmt::rfc3339(start), "end": timetrack_domain::timefmt::rfc3339(end), "project_id": project, "billable": rng.random_bool(0.8)});
        if project == &web && rng.random_bool(0.5) {
            body["task_id"] = json!(design);
        }
        let who = if rng.random_bool(0.5) {
            &key
        } else {
            &member_key
        };
        entry(&app, who, body).await;
    }
    for _ in 0..3 {
        let target = [&web, &app_project][rng.random_range(0..2)].clone();
        let (status, _, r) = call(&app, req("POST", "/api/rates", &key, Some(json!({"kind": "billable", "scope": "project", "project_id": target, "currency": "EUR", "hourly_minor": rng.random_range(1..50_000), "effective_from": format!("2026-02-{:02}", rng.random_range(1..29))})))).await;
        assert!(status == 201 || status == 409, "{r}");
    }
    let minutes = [0, 5, 6, 15][rng.random_range(0..4)];
    let mode = ["up", "down", "nearest"][rng.random_range(0..3)];
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            "/api/workspace",
            &key,
            Some(json!({"settings": {"rounding": {"minutes": minutes, "mode": mode}}})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let groupings = [
        json!([]),
        json!(["project"]),
        json!(["project", "task"]),
        json!(["user"]),
        json!(["day"]),
        json!(["user", "day"]),
    ];
    let group_by = groupings[rng.random_range(0..groupings.len())].clone();
    let discount = format!(
        "{}.{:03}",
        rng.random_range(0..100),
        rng.random_range(0..1000)
    );
    let tax = format!("{}.{}", rng.random_range(0..30), rng.random_range(0..10));
    let (status, _, invoice) = call(&app, req("POST", "/api/invoices", &key, Some(json!({"client_id": client, "from": "2026-02-01", "to": "2026-02-28", "group_by": group_by, "discount_percent": discount, "tax_percent": tax})))).await;
    assert_eq!(status, 201, "{invoice}");
    // Every line: the sum of its entries' billable amounts, each at one unit price.
    let mut subtotal = 0_i64;
    for line in invoice["lines"].as_array().unwrap() {
        let mut sum = 0;
        for id in line["entry_ids"].as_array().unwrap() {
            let (_, _, e) = call(
                &app,
                req(
                    "GET",
                    &format!("/api/time-entries/{}", id.as_str().unwrap()),
                    &key,
                    None,
                ),
            )
            .await;
            assert_eq!(
                e["pricing"]["billable_rate_minor"], line["unit_price_minor"],
                "{line}"
            );
            assert_eq!(e["pricing"]["locked"], json!(true));
            sum += e["pricing"]["billable_amount_minor"].as_i64().unwrap();
        }
        assert_eq!(line["amount_minor"].as_i64().unwrap(), sum, "{line}");
        subtotal += sum;
    }
    // The uninvoiced report over the same entries, before: equal; the totals follow section 5.
    let milli = |s: &str| {
        let (w, f) = s.split_once('.').unwrap();
        w.parse::<i128>().unwrap() * 1000 + format!("{f:0<3}").parse::<i128>().unwrap()
    };
    let half_up = |amount: i64, pct: i128| ((i128::from(amount) * pct + 50_000) / 100_000) as i64;
    let discount_minor = half_up(subtotal, milli(&discount));
    let tax_minor = half_up(subtotal - discount_minor, milli(&tax));
    assert_eq!(
        [
            &invoice["subtotal_minor"],
            &invoice["discount_minor"],
            &invoice["tax_minor"],
            &invoice["total_minor"]
        ],
        [
            &json!(subtotal),
            &json!(discount_minor),
            &json!(tax_minor),
            &json!(subtotal - discount_minor + tax_minor)
        ]
    );
    let billed: i64 = t
        .scalar("SELECT count(*) AS n FROM time_entries WHERE invoice_id IS NOT NULL")
        .await;
    let lines_entries: usize = invoice["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["entry_ids"].as_array().unwrap().len())
        .sum();
    assert_eq!(billed as usize, lines_entries);
}

#[actix_web::test]
async fn invoice_events_are_written_with_their_change_and_reach_owners_and_admins_only() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (_, member_key) = t.colleague("Mira", Role::Member).await;
    let (admin, admin_key) = t.colleague("Adele", Role::Admin).await;
    let (client, web, _, _) = setup(&app, &t, "Events GmbH").await;
    entry(&app, &key, json!({"start": "2026-08-03T08:00:00Z", "end": "2026-08-03T09:00:00Z", "project_id": web, "billable": true})).await;

    // A member may not subscribe to invoice events, nor add them by PATCH, nor read them in
    // the feed; an admin may.
    let subscribe = "/api/integrations/automation/webhooks/subscribe";
    let hook = |events: Value| json!({"url": "https://example.com/hook", "events": events});
    let (status, _, err) = call(
        &app,
        req(
            "POST",
            subscribe,
            &member_key,
            Some(hook(json!(["TIMER_STARTED", "INVOICE_PAID"]))),
        ),
    )
    .await;
    assert_eq!((status, err), (403, json!({"error": "Forbidden"})));
    let (status, _, own) = call(
        &app,
        req(
            "POST",
            subscribe,
            &member_key,
            Some(hook(json!(["TIMER_STARTED"]))),
        ),
    )
    .await;
    assert_eq!(status, 201, "{own}");
    let own_id = own["id"]
        .as_str()
        .or(own["webhook"]["id"].as_str())
        .unwrap()
        .to_owned();
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/integrations/automation/webhooks/{own_id}"),
            &member_key,
            Some(json!({"events": ["INVOICE_ISSUED"]})),
        ),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, _) = call(
        &app,
        req(
            "GET",
            "/api/integrations/automation/events?types=INVOICE_CREATED",
            &member_key,
            None,
        ),
    )
    .await;
    assert_eq!(status, 403);
    let every = json!([
        "INVOICE_CREATED",
        "INVOICE_ISSUED",
        "INVOICE_VOIDED",
        "INVOICE_PAID",
        "INVOICE_OVERDUE"
    ]);
    let (status, _, admins) = call(
        &app,
        req("POST", subscribe, &admin_key, Some(hook(every.clone()))),
    )
    .await;
    assert_eq!(status, 201, "{admins}");
    let admins_id = admins["id"]
        .as_str()
        .or(admins["webhook"]["id"].as_str())
        .unwrap()
        .to_owned();
    let (status, _, demoted) = call(
        &app,
        req("POST", subscribe, &admin_key, Some(hook(every.clone()))),
    )
    .await;
    assert_eq!(status, 201);
    let demoted_id = demoted["id"]
        .as_str()
        .or(demoted["webhook"]["id"].as_str())
        .unwrap()
        .to_owned();
    // The second of Ada's hooks stays; Ada then loses the admin role: neither of her hooks gets
    // invoice events any more. (The first is checked before the demotion.)
    let deliveries = async |id: &str| {
        t.scalar(&format!(
            "SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}'"
        ))
        .await
    };

    let (status, _, draft) = call(
        &app,
        req(
            "POST",
            "/api/invoices",
            &key,
            Some(json!({"client_id": client, "from": "2026-08-01", "to": "2026-08-31"})),
        ),
    )
    .await;
    assert_eq!(status, 201);
    let id = draft["id"].as_str().unwrap().to_owned();
    let created = t.events("INVOICE_CREATED").await;
    assert_eq!(created.len(), 1);
    assert_eq!(
        created[0],
        json!({"id": id, "number": null, "status": "draft", "paymentStatus": "unpaid",
               "client": {"id": client, "name": "Events GmbH"}, "currency": "EUR",
               "totalMinor": 10000, "paidMinor": 0, "balanceMinor": 10000,
               "issueDate": null, "dueDate": null,
               "workspace": {"id": t.workspace.id.to_string(), "name": t.workspace.name},
               "createdAt": draft["created_at"], "updatedAt": draft["updated_at"]})
    );
    assert_eq!(
        (deliveries(&admins_id).await, deliveries(&demoted_id).await),
        (1, 1)
    );
    // The admin's feed shows them (once every earlier transaction has ended); the member's
    // own feed, read after that, leaves them out.
    let mut shown = 0;
    for _ in 0..500 {
        let (_, _, feed) = call(
            &app,
            req(
                "GET",
                "/api/integrations/automation/events?types=INVOICE_CREATED",
                &admin_key,
                None,
            ),
        )
        .await;
        shown = feed["data"].as_array().unwrap().len();
        if shown > 0 {
            break;
        }
        actix_web::rt::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(shown, 1);
    let (_, _, feed) = call(
        &app,
        req(
            "GET",
            "/api/integrations/automation/events?limit=1000",
            &member_key,
            None,
        ),
    )
    .await;
    assert!(!feed["data"].as_array().unwrap().is_empty(), "{feed}");
    assert!(!feed.to_string().contains("INVOICE_"), "{feed}");

    // Ada becomes a member: her hooks stop receiving invoice events.
    let (status, _, _) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/members/{}", admin.id),
            &key,
            Some(json!({"role": "member"})),
        ),
    )
    .await;
    assert_eq!(status, 200);
    let (_, _, issued) = call(
        &app,
        req("POST", &format!("/api/invoices/{id}/issue"), &key, None),
    )
    .await;
    let events = t.events("INVOICE_ISSUED").await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        (&events[0]["number"], &events[0]["status"]),
        (&issued["number"], &json!("issued"))
    );
    assert_eq!(
        (deliveries(&admins_id).await, deliveries(&demoted_id).await),
        (1, 1)
    );
    // The owner's own hook gets them.
    let (_, _, owners) = call(
        &app,
        req("POST", subscribe, &key, Some(hook(every.clone()))),
    )
    .await;
    let owners_id = owners["id"]
        .as_str()
        .or(owners["webhook"]["id"].as_str())
        .unwrap()
        .to_owned();
    let (_, _, paid) = call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{id}/payments"),
            &key,
            Some(json!({"amount_minor": 4000, "paid_on": "2026-09-01"})),
        ),
    )
    .await;
    assert_eq!(paid["payment_status"], json!("partially_paid"));
    assert!(t.events("INVOICE_PAID").await.is_empty(), "not paid yet");
    call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{id}/payments"),
            &key,
            Some(json!({"amount_minor": 6000, "paid_on": "2026-09-02"})),
        ),
    )
    .await;
    let events = t.events("INVOICE_PAID").await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        (&events[0]["paymentStatus"], &events[0]["balanceMinor"]),
        (&json!("paid"), &json!(0))
    );
    assert_eq!(deliveries(&owners_id).await, 1);
    let (_, _, _) = call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{id}/void"),
            &key,
            Some(json!({"reason": "duplicate"})),
        ),
    )
    .await;
    let events = t.events("INVOICE_VOIDED").await;
    assert_eq!((events.len(), &events[0]["status"]), (1, &json!("void")));
    assert_eq!(deliveries(&owners_id).await, 2);
    let _ = own_id;
}

#[actix_web::test]
async fn an_overdue_invoice_is_announced_once_whoever_looks_and_however_often() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (client, _, _, _) = setup(&app, &t, "Late Payer").await;
    let fee = json!({"client_id": client, "from": "2026-01-01", "to": "2026-01-31",
                     "extra_lines": [{"description": "Retainer", "quantity": 1, "unit_price_minor": 50000}]});
    let mut ids = Vec::new();
    // Past due, and due a year from today (not yet overdue whenever the test runs).
    for (issue, due) in [
        ("2026-01-01", "2026-01-31".to_owned()),
        ("2026-01-01", date_from_today(366)),
    ] {
        let (_, _, d) = call(&app, req("POST", "/api/invoices", &key, Some(fee.clone()))).await;
        let id = d["id"].as_str().unwrap().to_owned();
        call(
            &app,
            req(
                "PATCH",
                &format!("/api/invoices/{id}"),
                &key,
                Some(json!({"issue_date": issue, "due_date": due})),
            ),
        )
        .await;
        let (status, _, _) = call(
            &app,
            req("POST", &format!("/api/invoices/{id}/issue"), &key, None),
        )
        .await;
        assert_eq!(status, 200);
        ids.push(id);
    }
    // A paid invoice past due is not overdue.
    let (_, _, d) = call(&app, req("POST", "/api/invoices", &key, Some(fee.clone()))).await;
    let paid = d["id"].as_str().unwrap().to_owned();
    call(
        &app,
        req(
            "PATCH",
            &format!("/api/invoices/{paid}"),
            &key,
            Some(json!({"issue_date": "2026-01-01", "due_date": "2026-01-31"})),
        ),
    )
    .await;
    call(
        &app,
        req("POST", &format!("/api/invoices/{paid}/issue"), &key, None),
    )
    .await;
    call(
        &app,
        req(
            "POST",
            &format!("/api/invoices/{paid}/payments"),
            &key,
            Some(json!({"amount_minor": 50000, "paid_on": "2026-01-15"})),
        ),
    )
    .await;

    // Two housekeepers at once, then again: one announcement, for the one overdue invoice.
    let (a, b) = futures_util::join!(
        t.state.invoices.announce_overdue(100),
        t.state.invoices.announce_overdue(100)
    );
    assert_eq!(a.unwrap() + b.unwrap(), 1);
    assert_eq!(t.state.invoices.announce_overdue(100).await.unwrap(), 0);
    let events = t.events("INVOICE_OVERDUE").await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        (
            &events[0]["id"],
            &events[0]["paymentStatus"],
            &events[0]["balanceMinor"]
        ),
        (&json!(ids[0]), &json!("overdue"), &json!(50000))
    );
}

/// The text of a PDF, as poppler's `pdftotext` extracts it (physical layout kept).
fn pdf_text(pdf: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("timetrack-pdf-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("invoice.pdf");
    std::fs::write(&file, pdf).unwrap();
    let out = std::process::Command::new(timetrack_testkit::pdftotext())
        .args(["-enc", "UTF-8", "-layout"])
        .arg(&file)
        .arg("-")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[actix_web::test]
async fn the_pdf_shows_the_number_the_client_every_line_and_the_total_in_any_script() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (client, web, design, _) = setup(&app, &t, "株式会社ルミナ").await;
    entry(&app, &key, json!({"start": "2026-09-01T08:00:00Z", "end": "2026-09-01T09:30:00Z", "project_id": web, "task_id": design, "billable": true})).await;
    // A long invoice: a time line and 100 extra lines, some with long descriptions to wrap.
    let extra: Vec<Value> = (1..=100)
        .map(|n| {
            let description = if n % 10 == 0 {
                format!("Item {n:03} Žluťoučký kůň úpěl ďábelské ódy — a description long enough to wrap onto a second line of the table")
            } else {
                format!("Item {n:03}")
            };
            json!({"description": description, "quantity": "1.25", "unit_price_minor": 123_456})
        })
        .collect();
    let (status, _, draft) = call(&app, req("POST", "/api/invoices", &key, Some(json!({"client_id": client, "from": "2026-09-01", "to": "2026-09-30", "group_by": ["project", "task"], "tax_percent": 19, "discount_percent": 5, "notes": "お支払いは30日以内にお願いします。\nThank you!", "extra_lines": extra})))).await;
    assert_eq!(status, 201, "{draft}");
    let id = draft["id"].as_str().unwrap().to_owned();
    let (_, _, issued) = call(
        &app,
        req("POST", &format!("/api/invoices/{id}/issue"), &key, None),
    )
    .await;
    let number = issued["number"].as_str().unwrap().to_owned();

    let fetch = async |uri: String, accept: Option<&str>| {
        let mut r = actix_web::test::TestRequest::get()
            .uri(&uri)
            .insert_header(("Authorization", key.clone()));
        if let Some(accept) = accept {
            r = r.insert_header(("Accept", accept.to_owned()));
        }
        let res = actix_web::test::call_service(&app, r.to_request()).await;
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let body = actix_web::test::read_body(res).await;
        (status, headers, body)
    };
    let (status, headers, pdf) =
        fetch(format!("/api/invoices/{id}"), Some("application/pdf")).await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("content-type").unwrap(), "application/pdf");
    assert_eq!(
        headers
            .get("content-disposition")
            .unwrap()
            .to_str()
            .unwrap(),
        format!("inline; filename=\"invoice-{number}.pdf\"")
    );
    assert!(pdf.starts_with(b"%PDF-"));
    let (_, _, by_format) = fetch(format!("/api/invoices/{id}?format=pdf"), None).await;
    assert!(by_format.starts_with(b"%PDF-"));
    let (status, _, json_body) = fetch(
        format!("/api/invoices/{id}?format=json"),
        Some("application/pdf"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(json_body.starts_with(b"{"));
    let (status, _, _) = fetch(format!("/api/invoices/{id}?format=xml"), None).await;
    assert_eq!(status, 400);

    let text = pdf_text(&pdf);
    // The whole text without the layout's spacing, to find wrapped words.
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains(&format!("Invoice {number}")), "{text}");
    assert!(text.contains("株式会社ルミナ"), "{text}");
    assert!(text.contains("Hauptstraße 1") && text.contains("10115 Berlin"));
    assert!(text.contains(&t.workspace.name));
    assert!(text.contains("Web · Design"));
    for n in 1..=100 {
        assert!(text.contains(&format!("Item {n:03}")), "line {n} missing");
    }
    assert!(flat.contains("Žluťoučký kůň úpěl ďábelské ódy"), "{flat}");
    assert!(flat.contains("お支払いは30日以内にお願いします。"));
    // Amounts in major units of EUR, the total as the API computed it.
    let total = issued["total_minor"].as_i64().unwrap();
    let total_text = format!(
        "{},{:03}.{:02} EUR",
        total / 100_000,
        (total / 100) % 1000,
        total % 100
    );
    assert!(
        text.contains(&total_text),
        "total {total_text} not in {text}"
    );
    assert!(text.contains("1,234.56 EUR"), "unit price");
    // Several pages, the table's header on each, numbered.
    let pages = text.matches("Page ").count();
    assert!(pages >= 3, "{pages} pages");
    assert!(text.contains(&format!("Page {pages} of {pages}")));
    // pdftotext ends each page with a form feed: every page with lines has the header.
    for (n, page) in text.split('\u{c}').enumerate() {
        if page.contains("Item ") {
            assert!(
                page.contains("Description"),
                "page {} has lines but no header",
                n + 1
            );
        }
    }
    // Members may not read it.
    let (_, member_key) = t.colleague("Nils", Role::Member).await;
    let res = actix_web::test::call_service(
        &app,
        actix_web::test::TestRequest::get()
            .uri(&format!("/api/invoices/{id}?format=pdf"))
            .insert_header(("Authorization", member_key))
            .to_request(),
    )
    .await;
    assert_eq!(res.status().as_u16(), 403);
}
