//! Invoices (`docs/billing.md`, sections 5 and 6), continued: concurrent creates and issues,
//! hostile input, and a property: a line is the sum of its entries for random entries.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::invoices::{entry, setup};
use crate::support::{TestApp, call, error_of, keyed as req};

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
