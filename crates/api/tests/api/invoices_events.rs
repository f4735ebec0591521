//! Invoices (`docs/billing.md`, sections 5 and 6), continued: the invoice events and who they
//! reach, the overdue notice, and the PDF read back by a real text extractor.

use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::invoices::{entry, setup};
use crate::support::{TestApp, call, date_from_today, keyed as req};

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
