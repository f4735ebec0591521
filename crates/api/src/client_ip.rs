//! The client's address: the socket's peer, or, when the peer is a proxy the operator trusts
//! (`TIMETRACK_TRUSTED_PROXIES`), the nearest address its forwarding headers name that is not
//! itself a trusted proxy. Rate limits of failed authentications and the access log both use it.
//!
//! A client can write anything into `X-Forwarded-For` and `Forwarded`, so they are read only from
//! a trusted peer, from the right (the hops the trusted proxies appended) to the left, and only
//! entries that parse as IP addresses are taken: what is logged is always an address.

use std::net::IpAddr;
use std::sync::Arc;

use actix_web::http::header::HeaderMap;
use ipnet::IpNet;

/// The proxies whose forwarding headers are believed; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Arc<[IpNet]>);

impl TrustedProxies {
    /// Parses a comma-separated list of addresses and CIDR ranges (`10.0.0.1, 192.168.0.0/16,
    /// ::1`); an empty text trusts none.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| {
                item.parse::<IpNet>()
                    .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("{item:?} is not an IP address or CIDR range"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|nets| Self(nets.into()))
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client's address for a request from `peer` with `headers`; `None` without a peer.
    pub fn client(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = canonical(peer?);
        if !self.trusts(peer) {
            return Some(peer);
        }
        let mut farthest = peer;
        for hop in forwarded_hops(headers).into_iter().rev() {
            let Some(hop) = hop.map(canonical) else {
                // Not an address: nothing to its left can be believed either.
                break;
            };
            farthest = hop;
            if !self.trusts(hop) {
                break;
            }
        }
        Some(farthest)
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The addresses of `Forwarded` (`for=`), or else of `X-Forwarded-For`, nearest hop last; `None`
/// for an entry that is not an address.
fn forwarded_hops(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|v| v.trim().to_owned())
            .collect()
    };
    let forwarded = values("forwarded");
    if !forwarded.is_empty() {
        return forwarded
            .iter()
            .map(|element| {
                element
                    .split(';')
                    .filter_map(|pair| pair.trim().split_once('='))
                    .find(|(name, _)| name.trim().eq_ignore_ascii_case("for"))
                    .and_then(|(_, value)| node_address(value.trim().trim_matches('"')))
            })
            .collect();
    }
    values("x-forwarded-for")
        .iter()
        .map(|value| node_address(value))
        .collect()
}

/// The address of a forwarded node: `1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]` or
/// `[2001:db8::1]:80`, `2001:db8::1`.
fn node_address(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse() {
        return Some(ip);
    }
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split_once(']').and_then(|(ip, _)| ip.parse().ok());
    }
    node.rsplit_once(':')
        .and_then(|(ip, port)| port.parse::<u16>().ok().and(ip.parse().ok()))
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        map
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn without_trusted_proxies_the_peer_is_the_client_whatever_the_headers_say() {
        let none = TrustedProxies::default();
        let h = headers(&[("x-forwarded-for", "1.2.3.4"), ("forwarded", "for=5.6.7.8")]);
        assert_eq!(none.client(ip("203.0.113.9"), &h), ip("203.0.113.9"));
        assert_eq!(none.client(None, &h), None);
    }

    #[test]
    fn a_trusted_peer_forwards_the_nearest_untrusted_hop() {
        let trusted = TrustedProxies::parse("203.0.113.0/24, 10.0.0.1 ,::1").unwrap();
        let cases: &[(&[(&'static str, &'static str)], &str)] = &[
            (
                &[("x-forwarded-for", "6.6.6.6, 198.51.100.4, 10.0.0.1")],
                "198.51.100.4",
            ),
            (
                &[
                    ("x-forwarded-for", "6.6.6.6"),
                    ("x-forwarded-for", "198.51.100.4"),
                ],
                "198.51.100.4",
            ),
            (&[("x-forwarded-for", "10.0.0.1")], "10.0.0.1"),
            (
                &[("x-forwarded-for", "198.51.100.4 admin=true")],
                "203.0.113.9",
            ),
            (
                &[("x-forwarded-for", "1.1.1.1, nonsense, 10.0.0.1")],
                "10.0.0.1",
            ),
            (&[("x-forwarded-for", "198.51.100.4:4711")], "198.51.100.4"),
            (
                &[(
                    "forwarded",
                    r#"for="[2001:db8::7]:80";proto=https, for=10.0.0.1"#,
                )],
                "2001:db8::7",
            ),
            (
                &[("forwarded", "for=unknown"), ("x-forwarded-for", "1.2.3.4")],
                "203.0.113.9",
            ),
            (&[], "203.0.113.9"),
        ];
        for (pairs, expected) in cases {
            assert_eq!(
                trusted.client(ip("203.0.113.9"), &headers(pairs)),
                ip(expected),
                "{pairs:?}"
            );
        }
        // An IPv4 peer seen as an IPv4-mapped IPv6 address is still that address.
        assert_eq!(
            trusted.client(
                ip("::ffff:203.0.113.9"),
                &headers(&[("x-forwarded-for", "1.2.3.4")])
            ),
            ip("1.2.3.4")
        );
    }

    #[test]
    fn the_list_takes_addresses_and_ranges_and_refuses_anything_else() {
        assert!(TrustedProxies::parse("").unwrap().is_empty());
        assert_eq!(
            TrustedProxies::parse(" 10.0.0.1 , fd00::/8")
                .unwrap()
                .0
                .len(),
            2
        );
        assert_eq!(
            TrustedProxies::parse("10.0.0.1, proxy.internal"),
            Err(r#""proxy.internal" is not an IP address or CIDR range"#.to_owned())
        );
    }
}
