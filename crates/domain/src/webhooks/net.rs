//! Where webhooks may be sent: the HTTPS URL rules and the SSRF guard's address ranges.
//!
//! Every address that is not publicly routable is refused: loopback, private, link-local, shared
//! (carrier-grade NAT), unique-local, multicast, reserved, documentation and benchmarking ranges,
//! and IPv6 addresses that embed an IPv4 address (mapped, translated, compatible, NAT64, 6to4,
//! Teredo, ISATAP) are judged by the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Longest accepted webhook URL, in bytes.
pub const MAX_URL_LEN: usize = 2048;

/// Why an address is refused, for logs and delivery errors.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

/// Whether deliveries may go to `ip`.
pub fn is_public(ip: IpAddr) -> bool {
    blocked_reason(ip).is_none()
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([0, 0, 0, 0], 8, "\"this network\" (0.0.0.0/8)"),
        ([10, 0, 0, 0], 8, "private (10.0.0.0/8)"),
        (
            [100, 64, 0, 0],
            10,
            "shared address space / carrier-grade NAT (100.64.0.0/10)",
        ),
        ([127, 0, 0, 0], 8, "loopback (127.0.0.0/8)"),
        ([169, 254, 0, 0], 16, "link-local (169.254.0.0/16)"),
        ([172, 16, 0, 0], 12, "private (172.16.0.0/12)"),
        (
            [192, 0, 0, 0],
            24,
            "IETF protocol assignments (192.0.0.0/24)",
        ),
        ([192, 0, 2, 0], 24, "documentation (192.0.2.0/24)"),
        ([192, 88, 99, 0], 24, "6to4 relay anycast (192.88.99.0/24)"),
        ([192, 168, 0, 0], 16, "private (192.168.0.0/16)"),
        ([198, 18, 0, 0], 15, "benchmarking (198.18.0.0/15)"),
        ([198, 51, 100, 0], 24, "documentation (198.51.100.0/24)"),
        ([203, 0, 113, 0], 24, "documentation (203.0.113.0/24)"),
        ([224, 0, 0, 0], 4, "multicast (224.0.0.0/4)"),
        (
            [240, 0, 0, 0],
            4,
            "reserved (240.0.0.0/4, broadcast included)",
        ),
    ];
    RANGES
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, reason)| *reason)
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

/// The IPv4 address carried by an IPv6 address of an embedding scheme, if it is one.
fn embedded_v4(ip: Ipv6Addr) -> Option<(Ipv4Addr, &'static str)> {
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if in_v6(ip, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96) {
        return Some((low32, "IPv4-mapped"));
    }
    if in_v6(ip, [0, 0, 0, 0, 0xffff, 0, 0, 0], 96) {
        return Some((low32, "IPv4-translated"));
    }
    if in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        return Some((low32, "NAT64"));
    }
    if in_v6(ip, [0, 0, 0, 0, 0, 0, 0, 0], 96) {
        return Some((low32, "IPv4-compatible"));
    }
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        return Some((Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32), "6to4"));
    }
    if in_v6(ip, [0x2001, 0, 0, 0, 0, 0, 0, 0], 32) {
        // Teredo: the client's address is the last 32 bits, inverted.
        return Some((Ipv4Addr::from(!((bits & 0xffff_ffff) as u32)), "Teredo"));
    }
    // ISATAP: an interface identifier of `0:5efe` or `200:5efe` (any prefix) carries the IPv4
    // address of the tunnel's end.
    let isatap = ((bits >> 32) as u32) & 0xfdff_ffff;
    if isatap == 0x0000_5efe {
        return Some((low32, "ISATAP"));
    }
    None
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified (::)");
    }
    if ip.is_loopback() {
        return Some("loopback (::1)");
    }
    if let Some((v4, _)) = embedded_v4(ip) {
        // An embedding scheme is only as good as the IPv4 address it carries; these schemes are
        // also transition mechanisms nobody should receive webhooks on, but a public IPv4 inside
        // is what the request would reach.
        return blocked_v4(v4).map(|_| "IPv6 address embedding a blocked IPv4 address");
    }
    const RANGES: &[([u16; 8], u32, &str)] = &[
        (
            [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
            48,
            "local-use NAT64 (64:ff9b:1::/48)",
        ),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only (100::/64)"),
        (
            [0x2001, 0x2, 0, 0, 0, 0, 0, 0],
            48,
            "benchmarking (2001:2::/48)",
        ),
        (
            [0x2001, 0x10, 0, 0, 0, 0, 0, 0],
            28,
            "ORCHID (2001:10::/28)",
        ),
        (
            [0x2001, 0x20, 0, 0, 0, 0, 0, 0],
            28,
            "ORCHIDv2 (2001:20::/28)",
        ),
        (
            [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
            32,
            "documentation (2001:db8::/32)",
        ),
        (
            [0x3fff, 0, 0, 0, 0, 0, 0, 0],
            20,
            "documentation (3fff::/20)",
        ),
        (
            [0x5f00, 0, 0, 0, 0, 0, 0, 0],
            16,
            "segment routing (5f00::/16)",
        ),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique-local (fc00::/7)"),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local (fe80::/10)"),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local (fec0::/10)"),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast (ff00::/8)"),
    ];
    RANGES
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
        .map(|(_, _, reason)| *reason)
}

/// A webhook destination that passed the URL rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookTarget {
    /// The URL as given (trimmed).
    pub url: String,
    /// The parsed URL.
    pub parsed: Url,
}

impl WebhookTarget {
    /// The host name to resolve, when the host is a name rather than an address.
    pub fn domain(&self) -> Option<&str> {
        self.parsed.domain()
    }

    /// The port requests go to (443 unless given).
    pub fn port(&self) -> u16 {
        self.parsed.port_or_known_default().unwrap_or(443)
    }

    /// The URL a request goes to: the parsed form this check judged (host lower-cased, default
    /// port and dot segments removed), so the sender never parses the text a second way.
    pub fn request_uri(&self) -> &str {
        self.parsed.as_str()
    }
}

/// Checks the URL rules: an absolute `https://` URL of at most 2,048 bytes with a host and no
/// user or password; with `allow_private` false, a host that is an address must be public and a
/// host name must not be `localhost` or end in `.localhost`. Returns `None` when a rule fails.
///
/// A host *name*'s addresses are checked by the caller after resolution.
pub fn check_webhook_url(raw: &str, allow_private: bool) -> Option<WebhookTarget> {
    parse_webhook_url(raw, allow_private).ok()
}

/// [`check_webhook_url`], with the rule that failed, in words for the caller.
pub(crate) fn parse_webhook_url(
    raw: &str,
    allow_private: bool,
) -> Result<WebhookTarget, &'static str> {
    let url = raw.trim();
    let starts_https = url
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    if !starts_https {
        return Err("url must be an absolute https:// URL (http and other schemes are refused)");
    }
    if url.len() > MAX_URL_LEN {
        return Err("url must be at most 2048 bytes long");
    }
    // Control characters (NUL among them) are refused here: the URL is stored as sent, and no
    // stored text may hold a NUL.
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("url must not contain spaces or control characters");
    }
    // Parsers disagree on backslashes (WHATWG reads `\\` as `/`, RFC 3986 parsers as part of the
    // authority) and on what an `@` hides, so neither is accepted anywhere: the host this check
    // judges is then the host every parser finds. The request itself is built from `parsed`
    // (`WebhookTarget::request_uri`), never from the text.
    let authority = url[8..].split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() {
        return Err("url must name a host");
    }
    if url.contains('\\') || authority.contains('@') {
        return Err("url must not contain a backslash or a user name or password (@)");
    }
    let parsed = Url::parse(url).map_err(|_| "url is not a well-formed URL")?;
    if parsed.scheme() != "https" || !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("url must be an https:// URL without a user name or password");
    }
    let refused = "url must point to a public host: loopback, private, link-local and other \
                   reserved addresses are refused (a server run for development may allow them: \
                   --webhook-allow-private-targets)";
    let allowed = match parsed.host().ok_or("url must name a host")? {
        Host::Ipv4(v4) => allow_private || is_public(IpAddr::V4(v4)),
        Host::Ipv6(v6) => allow_private || is_public(IpAddr::V6(v6)),
        Host::Domain(name) => {
            let name = name.trim_end_matches('.');
            if name.is_empty() {
                return Err("url must name a host");
            }
            allow_private || (name != "localhost" && !name.ends_with(".localhost"))
        }
    };
    if !allowed {
        return Err(refused);
    }
    Ok(WebhookTarget {
        url: url.to_owned(),
        parsed,
    })
}

/// The port of an `https://` URL whose host is the literal `127.0.0.1`, the one address a local
/// receiver (`timetrack listen`, [`LocalReceivers`]) binds: where one may be asked for. Another
/// loopback address (`127.0.0.2`, `[::1]`) is not: the receiver is not there, and whatever
/// listens there is not it. A host *name* (`localhost`) is not one either: only a literal names
/// the address without a resolver.
///
/// [`LocalReceivers`]: crate::webhooks::ports::LocalReceivers
pub fn loopback_literal_port(raw: &str) -> Option<u16> {
    let parsed = Url::parse(raw.trim()).ok()?;
    let listen_address = match parsed.host()? {
        Host::Ipv4(v4) => v4 == Ipv4Addr::LOCALHOST,
        Host::Ipv6(_) | Host::Domain(_) => false,
    };
    (parsed.scheme() == "https" && listen_address)
        .then(|| parsed.port_or_known_default().unwrap_or(443))
}

/// What the caller is told when a host name resolves to an address [`check_webhook_url`] would
/// refuse.
pub(crate) const RESOLVES_TO_PRIVATE: &str = "url's host resolves to a non-public address \
     (loopback, private, link-local or reserved; a server run for development may allow them: \
     --webhook-allow-private-targets)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_literal_ports_are_found_for_https_literals_only() {
        for (url, port) in [
            ("https://127.0.0.1:4431/hook", Some(4431)),
            ("https://127.0.0.1/hook", Some(443)),
            ("https://[::1]:9000/", None),
            ("https://127.0.0.2:4431/", None),
            ("https://127.1.2.3:80/", None),
            ("http://127.0.0.1:4431/", None),
            ("https://localhost:4431/", None),
            ("https://10.0.0.1:4431/", None),
            ("https://example.com:4431/", None),
            ("not a url", None),
        ] {
            assert_eq!(loopback_literal_port(url), port, "{url}");
        }
    }

    fn blocked(ip: &str) -> bool {
        !is_public(ip.parse().unwrap())
    }

    #[test]
    fn ipv4_range_edges() {
        let cases = [
            // (address, blocked)
            ("0.0.0.0", true),
            ("0.255.255.255", true),
            ("1.0.0.0", false),
            ("9.255.255.255", false),
            ("10.0.0.0", true),
            ("10.255.255.255", true),
            ("11.0.0.0", false),
            ("100.63.255.255", false),
            ("100.64.0.0", true),
            ("100.127.255.255", true),
            ("100.128.0.0", false),
            ("126.255.255.255", false),
            ("127.0.0.0", true),
            ("127.255.255.255", true),
            ("128.0.0.0", false),
            ("169.253.255.255", false),
            ("169.254.0.0", true),
            ("169.254.169.254", true),
            ("169.254.255.255", true),
            ("169.255.0.0", false),
            ("172.15.255.255", false),
            ("172.16.0.0", true),
            ("172.31.255.255", true),
            ("172.32.0.0", false),
            ("191.255.255.255", false),
            ("192.0.0.0", true),
            ("192.0.0.255", true),
            ("192.0.1.0", false),
            ("192.0.2.0", true),
            ("192.0.2.255", true),
            ("192.0.3.0", false),
            ("192.88.98.255", false),
            ("192.88.99.0", true),
            ("192.88.100.0", false),
            ("192.167.255.255", false),
            ("192.168.0.0", true),
            ("192.168.255.255", true),
            ("192.169.0.0", false),
            ("198.17.255.255", false),
            ("198.18.0.0", true),
            ("198.19.255.255", true),
            ("198.20.0.0", false),
            ("198.51.99.255", false),
            ("198.51.100.0", true),
            ("198.51.100.255", true),
            ("198.51.101.0", false),
            ("203.0.112.255", false),
            ("203.0.113.0", true),
            ("203.0.113.255", true),
            ("203.0.114.0", false),
            ("223.255.255.255", false),
            ("224.0.0.0", true),
            ("239.255.255.255", true),
            ("240.0.0.0", true),
            ("255.255.255.255", true),
            ("8.8.8.8", false),
            ("93.184.216.34", false),
        ];
        for (ip, expected) in cases {
            assert_eq!(blocked(ip), expected, "{ip}");
        }
    }

    #[test]
    fn ipv6_ranges_and_embedded_ipv4() {
        let cases = [
            ("::", true),
            ("::1", true),
            ("::2", true),
            ("::ffff:127.0.0.1", true),
            ("::ffff:169.254.169.254", true),
            ("::ffff:10.0.0.1", true),
            ("::ffff:8.8.8.8", false),
            ("::127.0.0.1", true),
            ("::8.8.8.8", false),
            ("64:ff9b::7f00:1", true),
            ("64:ff9b::a9fe:a9fe", true),
            ("64:ff9b::808:808", false),
            ("64:ff9b:1::1", true),
            ("2002:7f00:1::", true),
            ("2002:a9fe:a9fe::1", true),
            ("2002:808:808::1", false),
            // Teredo with client 127.0.0.1 (inverted: 80ff:fffe) and with 8.8.8.8 (f7f7:f7f7).
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", true),
            ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", false),
            ("100::1", true),
            ("100:0:0:1::1", false),
            ("2001:2::1", true),
            ("2001:10::1", true),
            ("2001:20::1", true),
            ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2001:db8::", true),
            ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("2001:db9::", false),
            ("3fff::1", true),
            ("3fff:1000::", false),
            ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("fc00::", true),
            ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("fe00::", false),
            ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("fe80::", true),
            ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("fec0::1", true),
            ("ff00::", true),
            ("ff02::1", true),
            ("2606:4700:4700::1111", false),
            ("2a00:1450:4001::200e", false),
        ];
        for (ip, expected) in cases {
            assert_eq!(blocked(ip), expected, "{ip}");
        }
    }

    #[test]
    fn every_spelling_of_loopback_and_metadata_is_refused() {
        for url in [
            "https://127.0.0.1/",
            "https://127.1/",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://0177.0.0.1/",
            "https://0x7f.1/",
            "https://127.0.0.1./",
            "https://%31%32%37.0.0.1/",
            "https://[::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:7f00:1]/",
            "https://[0:0:0:0:0:ffff:127.0.0.1]/",
            "https://169.254.169.254/latest/meta-data/",
            "https://2852039166/",
            "https://0xa9fea9fe/",
            "https://0251.0376.0251.0376/",
            "https://169.254.43518/",
            "https://[::ffff:a9fe:a9fe]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[2002:a9fe:a9fe::]/",
            "https://localhost/",
            "https://LOCALHOST./",
            "https://api.localhost/",
            "https://0.0.0.0/",
            "https://[::]/",
        ] {
            assert_eq!(check_webhook_url(url, false), None, "{url}");
            assert!(
                check_webhook_url(url, true).is_some(),
                "allowed with private targets: {url}"
            );
        }
    }

    #[test]
    fn backslashes_and_any_userinfo_are_refused_even_with_private_targets_allowed() {
        // A parser that reads `\` as `/` sees 8.8.8.8; one that does not sees 127.0.0.1.
        for url in [
            "https://8.8.8.8\\@127.0.0.1/",
            "https://8.8.8.8\\\\@127.0.0.1/",
            "https://hooks.example.com\\path",
            "https://hooks.example.com/a\\b",
            "https://:@8.8.8.8/",
            "https://@8.8.8.8/",
            "https://user@8.8.8.8/",
            "https://:pw@8.8.8.8/",
            "https://8.8.8.8%5C@127.0.0.1/",
            "https://hooks.example.com/@x",
        ] {
            let checked = check_webhook_url(url, true);
            if url.ends_with("/@x") {
                // An `@` in the path is not userinfo.
                assert!(checked.is_some(), "{url}");
                continue;
            }
            assert_eq!(checked, None, "{url}");
        }
    }

    #[test]
    fn every_ipv6_form_embedding_an_ipv4_address_is_judged_by_it() {
        let cases = [
            // IPv4-translated (RFC 2765): ::ffff:0:a.b.c.d.
            ("::ffff:0:7f00:1", true),
            ("::ffff:0:a00:1", true),
            ("::ffff:0:808:808", false),
            // ISATAP interface identifiers carry the IPv4 address of the tunnel end.
            ("2606:4700::5efe:7f00:1", true),
            ("2606:4700::200:5efe:a00:1", true),
            ("2606:4700::5efe:808:808", false),
            // NAT64 (well-known prefix), mapped, compatible, 6to4, Teredo.
            ("64:ff9b::7f00:1", true),
            ("64:ff9b::808:808", false),
            ("::ffff:808:808", false),
            ("::a00:1", true),
            ("2002:808:808::1", false),
            ("2002:a00:1::1", true),
        ];
        for (ip, expected) in cases {
            assert_eq!(blocked(ip), expected, "{ip}");
        }
        for url in [
            "https://[::ffff:0:7f00:1]/",
            "https://[::ffff:0:127.0.0.1]/",
        ] {
            assert_eq!(check_webhook_url(url, false), None, "{url}");
        }
    }

    #[test]
    fn the_target_sent_to_is_the_url_the_check_parsed() {
        let target = check_webhook_url("HTTPS://Hooks.Example.com:443/a/../b?x=1", false).unwrap();
        assert_eq!(target.request_uri(), "https://hooks.example.com/b?x=1");
    }

    #[test]
    fn url_shape_rules() {
        assert!(check_webhook_url("https://hooks.example.com/catch/1/abc?x=1", false).is_some());
        assert!(check_webhook_url("HTTPS://Hooks.Example.com/", false).is_some());
        assert!(check_webhook_url("https://8.8.8.8:8443/x", false).is_some());
        assert_eq!(
            check_webhook_url("https://hooks.example.com:8443/", false)
                .unwrap()
                .port(),
            8443
        );
        for bad in [
            "http://hooks.example.com/",
            "ftp://example.com/",
            "https:example.com",
            "https:///path",
            "//example.com",
            "example.com",
            "",
            "https://",
            "https://user:pw@example.com/",
            "https://user@example.com/",
            "https://exa mple.com/",
            " https://example.com/ x",
            "https://hooks.example.com/a\u{0}b",
            "https://hooks.example.com/a\u{7f}b",
            "https://hooks.example.com/\u{1b}[0m",
        ] {
            assert_eq!(check_webhook_url(bad, false), None, "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(check_webhook_url(&long, false), None);
        let fits = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN - 20));
        assert!(check_webhook_url(&fits, false).is_some());
    }
}
