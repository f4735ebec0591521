//! The raw cases that abuse a request's body: too large, not UTF-8, shorter than its
//! `Content-Length`, or chunked wrongly.

use anyhow::Result;
use timetrack_testkit::ServerProcess;

use super::http::{Answer, Close, Ending, Raw};
use super::{Target, case, client_names};
use crate::scenario::Scenario;

/// Size of the oversized bodies (the service accepts 64 KiB).
const OVERSIZED: usize = 3 * 1024 * 1024;

/// Case 1: 3 MB JSON bodies to `POST /api/clients`, with a `Content-Length` and chunked.
pub async fn oversized_bodies(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
) -> Result<()> {
    let mut body = br#"{"name":""#.to_vec();
    body.resize(OVERSIZED, b'a');
    body.extend_from_slice(br#""}"#);
    let mut chunked = Vec::new();
    for piece in body.chunks(64 * 1024) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let requests = [
        Raw::new("Content-Length", target.post_json("/api/clients", &body)),
        Raw::new(
            "chunked",
            target.post_chunked("/api/clients", &[], &chunked),
        ),
    ];
    // 413 with the JSON error; a connection cut without an answer is clean too.
    case(
        s,
        server,
        target,
        "3 MB JSON body to POST /api/clients: 413 JSON or cut off",
        &requests,
        |a| {
            a.is_clean()
                && match a.status {
                    Some(status) => status == 413 && a.is_json_error(),
                    None => a.close != Close::Open,
                }
        },
    )
    .await;
    Ok(())
}

/// Case 2: invalid UTF-8 inside a JSON string, to `POST /api/clients` and to the client search.
pub async fn invalid_utf8(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
) -> Result<()> {
    let before = client_names(server, &target.key).await?;
    let strings: [(&str, &[u8]); 5] = [
        ("bytes ff fe", b"bad \xff\xfe name"),
        ("truncated sequence c3 28", b"\xc3\x28"),
        ("encoded surrogate ed a0 80", b"\xed\xa0\x80 x"),
        ("overlong slash c0 af", b"\xc0\xaf x"),
        ("escaped lone surrogate \\ud800", br"\ud800 x"),
    ];
    let with = |prefix: &[u8], inner: &[u8]| {
        let mut body = prefix.to_vec();
        body.extend_from_slice(inner);
        body.extend_from_slice(br#""}"#);
        body
    };
    let creates: Vec<Raw> = strings
        .iter()
        .map(|(label, inner)| {
            Raw::new(
                label,
                target.post_json("/api/clients", &with(br#"{"name":""#, inner)),
            )
        })
        .collect();
    case(
        s,
        server,
        target,
        "invalid UTF-8 in POST /api/clients: 400 JSON error",
        &creates,
        |a| a.is_clean() && a.status == Some(400) && a.is_json_error(),
    )
    .await;

    let find = "/api/integrations/automation/triggers/clients/find";
    let prefix = format!(r#"{{"workspace_id":"{}","name":""#, target.workspace_id);
    let finds: Vec<Raw> = strings
        .iter()
        .map(|(label, inner)| {
            Raw::new(
                label,
                target.post_json(find, &with(prefix.as_bytes(), inner)),
            )
        })
        .collect();
    case(
        s,
        server,
        target,
        "invalid UTF-8 in POST .../clients/find: 400 \"Invalid request parameters\"",
        &finds,
        |a| {
            a.is_clean()
                && a.status == Some(400)
                && a.error_message().as_deref() == Some("Invalid request parameters")
        },
    )
    .await;

    let after = client_names(server, &target.key).await?;
    s.check_eq(
        "invalid UTF-8: no client created (list unchanged)",
        after,
        before,
    );
    Ok(())
}

/// Case 5c: a `Content-Length` larger than the body, then the client stops sending.
pub async fn lying_length(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
) -> Result<()> {
    let body = br#"{"name":"Liar"}"#;
    let headers = [
        target.auth(),
        ("Content-Type", "application/json".to_owned()),
        ("Content-Length", "1000".to_owned()),
    ];
    let requests = [Raw {
        label: "Content-Length 1000, 15 bytes, then write side closed".to_owned(),
        bytes: target.request("POST", "/api/clients", &headers, body),
        ending: Ending::HalfClose,
    }];
    case(
        s,
        server,
        target,
        "Content-Length larger than the body: 4xx or closed",
        &requests,
        Answer::is_rejection,
    )
    .await;
    Ok(())
}

/// Case 5d: chunked bodies whose chunk sizes are wrong, and a body framed two ways at once.
pub async fn bad_chunks(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
) -> Result<()> {
    let data = br#"{"name":"Chunky"}"#;
    let framed = |size: &str| {
        let mut out = format!("{size}\r\n").into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n0\r\n\r\n");
        out
    };
    let path = "/api/clients";
    let requests = [
        Raw::new(
            "size not hex (zz)",
            target.post_chunked(path, &[], &framed("zz")),
        ),
        Raw::new(
            "size negative (-11)",
            target.post_chunked(path, &[], &framed("-11")),
        ),
        Raw::new(
            "size overflowing 64 bits",
            target.post_chunked(path, &[], &framed("ffffffffffffffffffffffff")),
        ),
        Raw::new(
            "size smaller than the data (5)",
            target.post_chunked(path, &[], &framed("5")),
        ),
        Raw::new(
            "Content-Length and chunked together",
            target.post_chunked(path, &[("Content-Length", "4".to_owned())], &framed("11")),
        ),
    ];
    case(
        s,
        server,
        target,
        "chunked encoding with a bad chunk size: 4xx or closed",
        &requests,
        Answer::is_rejection,
    )
    .await;
    Ok(())
}
