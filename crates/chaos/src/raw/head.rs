//! The raw cases that abuse a request's head or its framing: too many headers, a huge request
//! line, and bytes that are not HTTP at all.

use anyhow::Result;
use timetrack_testkit::ServerProcess;

use super::http::{Answer, Raw};
use super::{Target, case};
use crate::scenario::Scenario;

/// Case 3: a request with 200 extra headers.
pub async fn many_headers(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
) -> Result<()> {
    let mut headers = vec![target.auth()];
    let names: Vec<String> = (0..200).map(|i| format!("X-Fuzz-{i:03}")).collect();
    headers.extend(names.iter().map(|n| (n.as_str(), "value".to_owned())));
    let requests = [Raw::new(
        "GET /api/me",
        target.request("GET", "/api/me", &headers, b""),
    )];
    case(
        s,
        server,
        target,
        "200 extra headers: 200, 400 or 431, never 5xx",
        &requests,
        |a| a.is_clean() && matches!(a.status, None | Some(200 | 400 | 431)),
    )
    .await;
    Ok(())
}

/// Case 5a: bytes that are not HTTP at all.
pub async fn not_http(s: &mut Scenario, server: &mut ServerProcess, target: &Target) -> Result<()> {
    let mut hello = vec![
        0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03,
    ];
    hello.extend(noise(0x5eed, 160));
    let requests = [
        Raw::new("a TLS ClientHello", hello),
        Raw::new("4 KiB of binary noise", noise(0xfeed, 4096)),
        Raw::new("1 KiB of NUL bytes", vec![0; 1024]),
        Raw::new(
            "a line of text",
            b"HELLO SERVER, THIS IS NOT HTTP\r\n\r\n".to_vec(),
        ),
        Raw::new(
            "an unknown protocol version",
            format!("GET /api/health HTTP/9.9\r\nHost: {}\r\n\r\n", target.addr).into_bytes(),
        ),
    ];
    case(
        s,
        server,
        target,
        "garbage that is not HTTP: 4xx or closed",
        &requests,
        Answer::is_rejection,
    )
    .await;
    Ok(())
}

/// Case 5b: a request line with a 100 KB path.
pub async fn long_path(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
) -> Result<()> {
    let path = format!("/api/{}", "a".repeat(100 * 1024));
    let auth = [target.auth()];
    let requests = [
        Raw::new("GET, 100 KB path", target.request("GET", &path, &auth, b"")),
        Raw::new(
            "GET, 100 KB query",
            target.request(
                "GET",
                &format!("/api/clients?cursor={}", "b".repeat(100 * 1024)),
                &auth,
                b"",
            ),
        ),
    ];
    case(
        s,
        server,
        target,
        "request line of 100 KB: 4xx or closed",
        &requests,
        Answer::is_rejection,
    )
    .await;
    Ok(())
}

/// `len` reproducible pseudo-random bytes (xorshift).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
