//! Invoices (`docs/billing.md`, sections 5 and 6): preview and create from uninvoiced time, the
//! lines and totals, the life cycle, payments, locking, concurrent creates and issues, and
//! hostile input.

use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::support::{TestApp, call, date_from_today, error_of, keyed as req};

/// Client `name` in `currency` with projects "Web" (with task "Design") and "App", and a
/// billable workspace rate of 100.00 from 2026-01-01 and a project rate of 150.00 on "App" from
/// 2026-03-16: (client, web, design task, app).
pub(crate) async fn setup<S, B>(
    app: &S,
    t: &TestApp,
    name: &str,
) -> (String, String, String, String)
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
pub(crate) async fn entry<S, B>(app: &S, key: &str, body: Value) -> String
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
