//! `GET /console`: the delivery console, a page over the public JSON API (`docs/console.md`).
//!
//! Its files are built into the binary from `crates/api/console/` and served with a strict
//! Content-Security-Policy: scripts and styles from this origin only, no inline script, no
//! `eval`, API calls to this origin only, and no framing. The page keeps the API key in
//! `sessionStorage` and sends it as a bearer token, so it has no cookie and no CSRF surface.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, web};

use crate::error::{json_error, method_not_allowed};
use crate::routes::RoutePattern;

/// The policy on every console response.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// A file of the console: its name under `/console/assets/`, its type and its bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("../../console/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
/// The verification snippets are shown, never run, by the page.
const TEXT: &str = "text/plain; charset=utf-8";

static INDEX: &[u8] = include_bytes!("../../console/index.html");

static ASSETS: &[Asset] = &[
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("chart.js", JS),
    asset!("reports.js", JS),
    asset!("invoices.js", JS),
    asset!("style.css", CSS),
    asset!("snippets/verify.js", TEXT),
    asset!("snippets/verify.py", TEXT),
    asset!("snippets/verify.rs", TEXT),
];

/// A console response: `body` of `content_type` with the strict headers.
fn page(content_type: &'static str, body: &'static [u8]) -> HttpResponse {
    let mut response = HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body);
    harden(response.headers_mut());
    response
}

/// The console's security headers.
fn harden(headers: &mut header::HeaderMap) {
    let pairs = [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ];
    for (name, value) in pairs {
        headers.insert(name, value);
    }
}

/// `GET /console`: the page.
async fn index() -> HttpResponse {
    page("text/html; charset=utf-8", INDEX)
}

/// `GET /console/assets/{name}`: one of its files, or 404 JSON.
async fn asset(name: web::Path<String>) -> HttpResponse {
    match ASSETS.iter().find(|asset| asset.name == name.as_str()) {
        Some(asset) => page(asset.content_type, asset.body),
        None => {
            let mut response = json_error(actix_web::http::StatusCode::NOT_FOUND, "Not found");
            harden(response.headers_mut());
            response
        }
    }
}

/// Registers the console's routes (GET and HEAD; they are not part of the OpenAPI document).
pub fn configure(cfg: &mut web::ServiceConfig) {
    let refuse = || web::to(|| method_not_allowed("GET, HEAD".to_owned()));
    // Each resource names its pattern, as the API's do, for the route label of logs and metrics.
    for path in ["/console", "/console/"] {
        cfg.service(
            web::resource(path)
                .app_data(RoutePattern(path))
                .route(web::get().to(index))
                .route(web::head().to(index))
                .default_service(refuse()),
        );
    }
    const ASSET: &str = "/console/assets/{name:.+}";
    cfg.service(
        web::resource(ASSET)
            .app_data(RoutePattern(ASSET))
            .route(web::get().to(asset))
            .route(web::head().to(asset))
            .default_service(refuse()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_a_type_for_its_extension() {
        for asset in ASSETS {
            let expected = match asset.name.rsplit('.').next() {
                Some("js") if asset.name.starts_with("snippets/") => TEXT,
                Some("js") => JS,
                Some("css") => CSS,
                Some("py" | "rs") => TEXT,
                other => panic!("unexpected asset {other:?}"),
            };
            assert_eq!(asset.content_type, expected, "{}", asset.name);
        }
    }

    #[test]
    fn the_page_loads_only_listed_assets_and_no_inline_script() {
        let index = std::str::from_utf8(INDEX).unwrap();
        for reference in index.split("/console/assets/").skip(1) {
            let name = &reference[..reference.find('"').unwrap()];
            assert!(
                ASSETS.iter().any(|asset| asset.name == name),
                "{name} is not served"
            );
        }
        assert!(!index.contains("<script>"), "inline script");
        assert!(!index.contains("style="), "inline style");
    }
}
