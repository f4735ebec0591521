//! Rate limits: per key on every authenticated endpoint, failed authentications per address.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test;
use serde_json::json;
use timetrack_api::{RateLimitStoreKind, RateLimits, StateSettings};
use timetrack_domain::ratelimit::RatePolicy;

use crate::support::{TestApp, call};

fn limits(per_minute: u32, per_second: u32, failures: u32) -> StateSettings {
    StateSettings {
        rate_limits: RateLimits {
            per_key: RatePolicy {
                per_minute,
                per_second,
            },
            auth_failures: RatePolicy {
                per_minute: failures,
                per_second: u32::MAX,
            },
        },
        ..StateSettings::default()
    }
}

fn header(res: &ServiceResponse<impl MessageBody>, name: &str) -> Option<String> {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

#[actix_web::test]
async fn the_eleventh_request_in_a_second_is_429_with_retry_after_and_headers() {
    let t = TestApp::with_settings(StateSettings::default()).await;
    let app = t.service().await;
    for n in 1..=10u32 {
        let res = test::call_service(
            &app,
            test::TestRequest::get()
                .uri("/api/me")
                .insert_header(t.bearer())
                .to_request(),
        )
        .await;
        assert_eq!(res.status(), 200, "request {n}");
        assert_eq!(header(&res, "x-ratelimit-limit").as_deref(), Some("100"));
        assert_eq!(
            header(&res, "x-ratelimit-remaining"),
            Some((100 - n).to_string())
        );
        let reset: i64 = header(&res, "x-ratelimit-reset").unwrap().parse().unwrap();
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        assert!(
            (now + 58..=now + 61).contains(&reset),
            "reset {reset} vs now {now}"
        );
    }
    let res = test::call_service(
        &app,
        test::TestRequest::get()
            .uri("/api/me")
            .insert_header(t.bearer())
            .to_request(),
    )
    .await;
    assert_eq!(res.status(), 429);
    assert_eq!(header(&res, "retry-after").as_deref(), Some("1"));
    assert_eq!(header(&res, "x-ratelimit-remaining").as_deref(), Some("90"));
    let body: serde_json::Value = serde_json::from_slice(&test::read_body(res).await).unwrap();
    assert_eq!(body, json!({"error": "Too many requests"}));

    // Honouring Retry-After gets through.
    tokio::time::sleep(std::time::Duration::from_millis(1050)).await;
    let res = test::call_service(
        &app,
        test::TestRequest::get()
            .uri("/api/me")
            .insert_header(t.bearer())
            .to_request(),
    )
    .await;
    assert_eq!(res.status(), 200);
}

#[actix_web::test]
async fn the_minute_window_holds_and_limits_count_on_every_authenticated_endpoint() {
    let t = TestApp::with_settings(limits(5, 1000, 1000)).await;
    let app = t.service().await;
    let requests = [
        test::TestRequest::get().uri("/api/me"),
        test::TestRequest::get().uri("/api/clients"),
        test::TestRequest::get().uri("/api/clients/00000000-0000-0000-0000-000000000000"),
        test::TestRequest::get().uri("/api/integrations/automation/webhooks"),
        test::TestRequest::get().uri("/api/integrations/automation/triggers/clients/fallback"),
        test::TestRequest::get().uri("/api/me"),
    ];
    let mut statuses = Vec::new();
    for req in requests {
        let res = test::call_service(&app, req.insert_header(t.bearer()).to_request()).await;
        // Headers on successes and on errors alike.
        assert!(
            header(&res, "x-ratelimit-limit").is_some(),
            "{}",
            res.status()
        );
        statuses.push(res.status().as_u16());
        if res.status() == 429 {
            let wait: u64 = header(&res, "retry-after").unwrap().parse().unwrap();
            assert!((58..=60).contains(&wait), "{wait}");
        }
    }
    assert_eq!(statuses, [200, 200, 404, 200, 200, 429]);
}

#[actix_web::test]
async fn keys_are_limited_separately_and_health_is_not_limited() {
    let t = TestApp::with_settings(limits(2, 1000, 1000)).await;
    let app = t.service().await;
    let (_, other_key) = t.other_workspace().await;
    for _ in 0..2 {
        assert_eq!(
            call(
                &app,
                test::TestRequest::get()
                    .uri("/api/me")
                    .insert_header(t.bearer())
                    .to_request()
            )
            .await
            .0,
            200
        );
    }
    assert_eq!(
        call(
            &app,
            test::TestRequest::get()
                .uri("/api/me")
                .insert_header(t.bearer())
                .to_request()
        )
        .await
        .0,
        429
    );
    assert_eq!(
        call(
            &app,
            test::TestRequest::get()
                .uri("/api/me")
                .insert_header(("Authorization", other_key.as_str()))
                .to_request()
        )
        .await
        .0,
        200
    );
    for _ in 0..5 {
        let res = test::call_service(
            &app,
            test::TestRequest::get().uri("/api/health").to_request(),
        )
        .await;
        assert_eq!(res.status(), 200);
        assert!(header(&res, "x-ratelimit-limit").is_none());
    }
}

#[actix_web::test]
async fn failed_authentications_are_limited_per_address() {
    let t = TestApp::with_settings(limits(100, 100, 3)).await;
    let app = t.service().await;
    let from = |addr: &str| {
        test::TestRequest::get()
            .uri("/api/me")
            .peer_addr(addr.parse().unwrap())
    };
    let valid = || {
        from("203.0.113.7:4002")
            .insert_header(t.bearer())
            .to_request()
    };
    assert_eq!(call(&app, valid()).await.0, 200);
    for _ in 0..3 {
        let (status, _, body) = call(
            &app,
            from("203.0.113.7:4000")
                .insert_header(("Authorization", "Bearer tt_wrong"))
                .to_request(),
        )
        .await;
        assert_eq!((status, body), (401, json!({"error": "Unauthorized"})));
    }
    let res = test::call_service(&app, from("203.0.113.7:4001").to_request()).await;
    assert_eq!(res.status(), 429, "a fourth failure, even without a key");
    assert!(header(&res, "retry-after").is_some());
    // Another address still gets 401; a valid key this process has verified still works from
    // the limited address (any other key is refused there without being looked up).
    assert_eq!(call(&app, from("198.51.100.9:1").to_request()).await.0, 401);
    assert_eq!(call(&app, valid()).await.0, 200);
}

#[actix_web::test]
async fn the_postgres_store_shares_counts_between_instances() {
    let settings = StateSettings {
        rate_limit_store: RateLimitStoreKind::Postgres,
        ..limits(5, 1000, 1000)
    };
    let t = TestApp::with_settings(settings.clone()).await;
    let first = t.service().await;
    // A second instance: its own state (and in-process caches), the same database.
    let second_state = timetrack_api::AppState::new(
        t.pool.clone(),
        std::sync::Arc::new(timetrack_adapters::SystemClock),
        settings,
    );
    let second = test::init_service(timetrack_api::build_app(second_state)).await;
    assert_eq!(admitted_alternately(&t, &first, &second).await, 5);
}

#[actix_web::test]
async fn http_workers_on_pools_of_their_own_share_the_in_memory_counts() {
    let t = TestApp::with_settings(limits(5, 1000, 1000)).await;
    let first = t.service().await;
    // `serve` gives each HTTP worker thread a copy of the state on a pool of its own.
    let worker_pool = t.db().pool();
    let second = test::init_service(timetrack_api::build_app(t.state.on_pool(worker_pool))).await;
    assert_eq!(admitted_alternately(&t, &first, &second).await, 5);
}

/// Sends 8 requests with the test key, alternately to `first` and `second`: how many were
/// admitted (the others must be 429).
async fn admitted_alternately<S1, B1, S2, B2>(t: &TestApp, first: &S1, second: &S2) -> usize
where
    S1: Service<actix_http::Request, Response = ServiceResponse<B1>, Error = actix_web::Error>,
    B1: MessageBody,
    S2: Service<actix_http::Request, Response = ServiceResponse<B2>, Error = actix_web::Error>,
    B2: MessageBody,
{
    let mut admitted = 0;
    for n in 0..8 {
        let req = test::TestRequest::get()
            .uri("/api/me")
            .insert_header(t.bearer())
            .to_request();
        let status = if n % 2 == 0 {
            call(first, req).await.0
        } else {
            call(second, req).await.0
        };
        if status == 200 {
            admitted += 1;
        } else {
            assert_eq!(status, 429);
        }
    }
    admitted
}

#[actix_web::test]
async fn idempotent_replays_mismatches_and_originals_all_count_against_the_key() {
    // A minute window of 12, so the count does not depend on how fast the test runs.
    let t = TestApp::with_settings(limits(12, 1_000, 30)).await;
    let app = t.service().await;
    let post = |name: &str| {
        test::TestRequest::post()
            .uri("/api/clients")
            .insert_header(t.bearer())
            .insert_header(("Idempotency-Key", "flood"))
            .set_json(json!({ "name": name }))
            .to_request()
    };
    let mut statuses = Vec::new();
    for n in 0..30 {
        // The original, then replays of it and, every third request, the key with another body.
        let name = if n % 3 == 2 { "Other" } else { "Acme" };
        let res = test::call_service(&app, post(name)).await;
        let status = res.status().as_u16();
        if status == 429 {
            assert!(header(&res, "retry-after").is_some());
            assert_eq!(
                test::read_body(res).await,
                r#"{"error":"Too many requests"}"#
            );
        }
        statuses.push(status);
    }
    let admitted: Vec<u16> = statuses.iter().copied().filter(|s| *s != 429).collect();
    assert_eq!(admitted.len(), 12, "{statuses:?}");
    assert_eq!(admitted[..3], [201, 201, 422], "{statuses:?}");
    assert!(statuses[12..].iter().all(|s| *s == 429), "{statuses:?}");
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 1);
}

#[actix_web::test]
async fn a_key_over_its_limit_gets_no_replay() {
    let t = TestApp::with_settings(limits(3, 1_000, 30)).await;
    let app = t.service().await;
    let post = || {
        test::TestRequest::post()
            .uri("/api/clients")
            .insert_header(t.bearer())
            .insert_header(("Idempotency-Key", "once"))
            .set_json(json!({"name": "Acme"}))
            .to_request()
    };
    assert_eq!(call(&app, post()).await.0, 201);
    for _ in 0..2 {
        let me = test::TestRequest::get()
            .uri("/api/me")
            .insert_header(t.bearer())
            .to_request();
        assert_eq!(call(&app, me).await.0, 200);
    }
    let res = test::call_service(&app, post()).await;
    assert_eq!(res.status(), 429);
    assert!(res.headers().get("idempotent-replayed").is_none());
}

/// `GET /api/me` with `key`, from the address the failure-limit tests bring to its limit.
fn me_from_limited(key: &str) -> actix_http::Request {
    test::TestRequest::get()
        .uri("/api/me")
        .peer_addr("203.0.113.7:4000".parse().unwrap())
        .insert_header(("Authorization", format!("Bearer {key}")))
        .to_request()
}

#[actix_web::test]
async fn past_the_failure_limit_no_key_is_looked_up() {
    let t = TestApp::with_settings(limits(100, 100, 3)).await;
    let app = t.service().await;
    // A valid key this process has verified keeps working from the limited address.
    assert_eq!(call(&app, me_from_limited(&t.secret)).await.0, 200);
    // Well-formed keys that are unknown: each costs a lookup, until the limit.
    let unknown = format!("tt_{}", "A".repeat(43));
    for _ in 0..3 {
        assert_eq!(call(&app, me_from_limited(&unknown)).await.0, 401);
    }
    // Past it, a lookup would fail: the table is gone. Nothing may reach it.
    t.execute("ALTER TABLE api_keys RENAME TO api_keys_hidden")
        .await;
    for key in [unknown.as_str(), "tt_wrong"] {
        let (status, _, body) = call(&app, me_from_limited(key)).await;
        assert_eq!(
            (status, body),
            (429, json!({"error": "Too many requests"})),
            "{key}"
        );
    }
    assert_eq!(call(&app, me_from_limited(&t.secret)).await.0, 200);
}

#[actix_web::test]
async fn a_key_made_a_moment_ago_waits_one_second_at_a_limited_address() {
    let t = TestApp::with_settings(limits(100, 100, 3)).await;
    let app = t.service().await;
    let unknown = format!("tt_{}", "A".repeat(43));
    for _ in 0..3 {
        assert_eq!(call(&app, me_from_limited(&unknown)).await.0, 401);
    }
    // Read the set of keys now, so that a key made next is not in it.
    assert_eq!(call(&app, me_from_limited(&unknown)).await.0, 429);
    let (_, fresh) = t
        .admin
        .create_api_key(t.user.id, t.workspace.id, None)
        .await
        .unwrap();
    // Not yet in the set of keys (read less than a second ago): a second's wait, as
    // decisions.md says, not the address's window; then it passes.
    let res = test::call_service(&app, me_from_limited(fresh.expose())).await;
    assert_eq!(res.status(), 429);
    assert_eq!(header(&res, "retry-after").as_deref(), Some("1"));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(call(&app, me_from_limited(fresh.expose())).await.0, 200);
    // Without a key, the address waits for its window.
    let res = test::call_service(
        &app,
        test::TestRequest::get()
            .uri("/api/me")
            .peer_addr("203.0.113.7:4001".parse().unwrap())
            .to_request(),
    )
    .await;
    assert_eq!(res.status(), 429);
    let wait: u64 = header(&res, "retry-after").unwrap().parse().unwrap();
    assert!(wait > 1, "the window's wait: {wait}");
}

#[actix_web::test]
async fn past_the_failure_limit_a_valid_key_still_passes_and_a_guess_does_not() {
    let t = TestApp::with_settings(limits(100, 100, 3)).await;
    let app = t.service().await;
    let at = |method: &str, path: &str, key: &str| {
        test::TestRequest::default()
            .method(method.parse().unwrap())
            .uri(path)
            .peer_addr("203.0.113.7:4000".parse().unwrap())
            .insert_header(("Authorization", format!("Bearer {key}")))
            .set_json(json!({"name": "Shared NAT Ltd"}))
            .to_request()
    };
    let unknown = format!("tt_{}", "A".repeat(43));
    for _ in 0..3 {
        assert_eq!(call(&app, at("GET", "/api/me", &unknown)).await.0, 401);
    }
    assert_eq!(call(&app, at("GET", "/api/me", &unknown)).await.0, 429);
    // A key this process has never seen (made elsewhere, after the guesses began), from the
    // same address: it passes, for reads and writes.
    let (_, fresh) = t
        .admin
        .create_api_key(t.user.id, t.workspace.id, None)
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        call(&app, at("GET", "/api/me", fresh.expose())).await.0,
        200
    );
    assert_eq!(
        call(&app, at("POST", "/api/clients", fresh.expose()))
            .await
            .0,
        201
    );
    // Guesses stay refused; with the keys' table out of reach, they are refused all the same
    // (the set of keys is read at most once a second, and not per guess).
    t.execute("ALTER TABLE api_keys RENAME TO api_keys_hidden")
        .await;
    for n in 0..20 {
        let guess = format!("tt_{}{n:02}", "B".repeat(41));
        let (status, _, body) = call(&app, at("GET", "/api/me", &guess)).await;
        assert_eq!(
            (status, body),
            (429, json!({"error": "Too many requests"})),
            "{guess}"
        );
    }
    t.execute("ALTER TABLE api_keys_hidden RENAME TO api_keys")
        .await;
}
