//! `GET /console` and its assets: served from the binary with the strict headers.

use actix_web::test;

use crate::support::TestApp;

/// Every console file the page loads, and the snippets it shows.
const FILES: &[(&str, &str)] = &[
    ("/console", "text/html; charset=utf-8"),
    ("/console/", "text/html; charset=utf-8"),
    ("/console/assets/app.js", "text/javascript; charset=utf-8"),
    ("/console/assets/api.js", "text/javascript; charset=utf-8"),
    ("/console/assets/dom.js", "text/javascript; charset=utf-8"),
    ("/console/assets/chart.js", "text/javascript; charset=utf-8"),
    ("/console/assets/style.css", "text/css; charset=utf-8"),
    (
        "/console/assets/snippets/verify.js",
        "text/plain; charset=utf-8",
    ),
    (
        "/console/assets/snippets/verify.py",
        "text/plain; charset=utf-8",
    ),
    (
        "/console/assets/snippets/verify.rs",
        "text/plain; charset=utf-8",
    ),
];

fn header<'a, B>(res: &'a actix_web::dev::ServiceResponse<B>, name: &str) -> &'a str {
    res.headers()
        .get(name)
        .unwrap_or_else(|| panic!("no {name} on {}", res.request().path()))
        .to_str()
        .unwrap()
}

fn assert_strict<B>(res: &actix_web::dev::ServiceResponse<B>) {
    let csp = header(res, "content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp} lacks {directive}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(!csp.contains("unsafe-eval"), "{csp}");
    assert_eq!(header(res, "x-content-type-options"), "nosniff");
    assert_eq!(header(res, "referrer-policy"), "no-referrer");
    assert!(res.headers().get("set-cookie").is_none());
}

#[actix_web::test]
async fn the_console_and_its_files_are_served_with_the_strict_headers_and_no_key() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for (path, content_type) in FILES {
        let res = test::call_service(&app, test::TestRequest::get().uri(path).to_request()).await;
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(header(&res, "content-type"), *content_type, "{path}");
        assert_strict(&res);
        let body = test::read_body(res).await;
        assert!(!body.is_empty(), "{path}");
        if path.ends_with(".js") && !path.contains("snippets") {
            let text = std::str::from_utf8(&body).unwrap();
            for forbidden in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "eval(",
                "document.write",
            ] {
                assert!(!text.contains(forbidden), "{path} uses {forbidden}");
            }
        }
    }
    let page =
        test::call_service(&app, test::TestRequest::get().uri("/console").to_request()).await;
    let html = String::from_utf8(test::read_body(page).await.to_vec()).unwrap();
    assert!(
        html.contains(r#"<script type="module" src="/console/assets/app.js">"#),
        "{html}"
    );
}

#[actix_web::test]
async fn unknown_console_files_are_404_json_with_the_same_headers() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for path in [
        "/console/assets/nope.js",
        "/console/assets/../../Cargo.toml",
        "/console/assets/%2e%2e/%2e%2e/src/lib.rs",
        "/console/assets/snippets/",
        "/console/assets/index.html",
    ] {
        let res = test::call_service(&app, test::TestRequest::get().uri(path).to_request()).await;
        assert_eq!(res.status(), 404, "{path}");
        let body: serde_json::Value = serde_json::from_slice(&test::read_body(res).await)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(body, serde_json::json!({"error": "Not found"}), "{path}");
    }
    let res = test::call_service(
        &app,
        test::TestRequest::get()
            .uri("/console/assets/nope.js")
            .to_request(),
    )
    .await;
    assert_strict(&res);
    let res =
        test::call_service(&app, test::TestRequest::post().uri("/console").to_request()).await;
    assert_eq!(res.status(), 405);
    assert_eq!(header(&res, "allow"), "GET, HEAD");
}
