//! A NATS server's address as given (with its login, for connecting and for the team's
//! pointer file, 0600) and as shown to people (never with credentials). Compiled in every
//! build: a build without the NATS store still checks an address before saying so.

use crate::error::{Error, Result};

/// A server address: `nats://[USER:PASS@]HOST:PORT` or `tls://...`.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerUrl {
    full: String,
    shown: String,
    replicas: Option<usize>,
}

impl std::fmt::Debug for ServerUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerUrl({})", self.shown)
    }
}

impl ServerUrl {
    /// Check `url` (bad input when it is not a NATS address). A cluster may be given as
    /// several comma-separated addresses, `nats://[LOGIN@]H1:P1,H2:P2` (each may repeat the
    /// scheme): the client tries them in turn and reconnects to whichever is up. `?replicas=N`
    /// (1 to 5) at the end fixes the replicas of a team created there (else teamctl chooses).
    pub fn parse(url: &str) -> Result<ServerUrl> {
        let url = url.trim();
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(Error::bad(format!(
                "--store wants nats://HOST:PORT (or tls://HOST:PORT), not {:?}",
                strip_userinfo(url)
            )));
        };
        // Schemes are case-insensitive (RFC 3986): `NATS://` is `nats://`.
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "nats" | "tls") {
            return Err(Error::bad(format!(
                "--store: unknown scheme {scheme:?}; use nats://HOST:PORT or tls://HOST:PORT"
            )));
        }
        let hosts = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        let (hosts, replicas) = match hosts.split_once('?') {
            None => (hosts, None),
            Some((hosts, query)) => {
                let n = query
                    .strip_prefix("replicas=")
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|n| (1..=5).contains(n))
                    .ok_or_else(|| {
                        Error::bad(format!(
                            "--store: {query:?} is not replicas=N (N from 1 to 5), the one option an address takes"
                        ))
                    })?;
                (hosts, Some(n))
            }
        };
        let mut shown = Vec::new();
        for part in hosts.split(',') {
            let (s, hostport) = match part.split_once("://") {
                Some((s, h)) => (s.to_ascii_lowercase(), h),
                None => (scheme.clone(), part),
            };
            let hostport = hostport.trim_end_matches('/');
            if !matches!(s.as_str(), "nats" | "tls")
                || hostport.is_empty()
                || hostport.contains(['/', '?', '#', ' ', '@'])
                || hostport.chars().any(char::is_control)
            {
                return Err(Error::bad(format!(
                    "--store: {:?} is not HOST:PORT (or a comma-separated list of them)",
                    strip_userinfo(url)
                )));
            }
            // A port, when given, is one a server can listen on.
            if !hostport.ends_with(']')
                && let Some((_, port)) = hostport.rsplit_once(':')
                && !port.parse::<u16>().is_ok_and(|p| p > 0)
            {
                return Err(Error::bad(format!(
                    "--store: {port:?} in {:?} is not a port (1 to 65535)",
                    strip_userinfo(url)
                )));
            }
            shown.push(format!("{s}://{hostport}"));
        }
        Ok(ServerUrl {
            full: url.to_string(),
            shown: shown.join(","),
            replicas,
        })
    }

    /// The replicas asked for with `?replicas=N`, if any.
    #[cfg_attr(
        not(feature = "nats"),
        allow(dead_code, reason = "used by the NATS client only")
    )]
    pub fn replicas(&self) -> Option<usize> {
        self.replicas
    }

    /// Each server address, without credentials (given to the client as options).
    #[cfg_attr(
        not(feature = "nats"),
        allow(dead_code, reason = "used by the NATS client only")
    )]
    pub fn addresses(&self) -> Vec<String> {
        self.shown.split(',').map(str::to_string).collect()
    }

    /// The address with credentials, for connecting and for the pointer file (0600).
    pub fn full(&self) -> &str {
        &self.full
    }

    /// The address without credentials, for people.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// The login of `url`: `(user, Some(password))` for `USER:PASS@`, `(token, None)` for
/// `TOKEN@`, `None` without one.
#[cfg_attr(
    not(feature = "nats"),
    allow(dead_code, reason = "used by the NATS client only")
)]
pub(super) fn userinfo(url: &str) -> Option<(String, Option<String>)> {
    let (_, rest) = url.split_once("://")?;
    let (info, _) = rest.rsplit_once('@')?;
    Some(match info.split_once(':') {
        Some((user, pass)) => (user.to_string(), Some(pass.to_string())),
        None => (info.to_string(), None),
    })
}

fn strip_userinfo(url: &str) -> String {
    match (url.split_once("://"), url.rsplit_once('@')) {
        (Some((scheme, _)), Some((_, host))) => format!("{scheme}://{host}"),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_shown_without_credentials() {
        let u = ServerUrl::parse("nats://alice:s3cret@10.0.0.5:4222").unwrap();
        assert_eq!(u.shown(), "nats://10.0.0.5:4222");
        assert_eq!(u.full(), "nats://alice:s3cret@10.0.0.5:4222");
        assert!(!format!("{u:?}").contains("s3cret"));
        assert_eq!(ServerUrl::parse("tls://h:1").unwrap().shown(), "tls://h:1");
        assert_eq!(
            ServerUrl::parse("NATS://h:1").unwrap().shown(),
            "nats://h:1"
        );
        for bad in [
            "",
            "h:4222",
            "http://h:1",
            "nats://",
            "nats://a b",
            "nats://h/x",
        ] {
            let e = ServerUrl::parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
        let e = ServerUrl::parse("http://bob:pw@h:1").unwrap_err();
        assert!(!e.to_string().contains("pw"), "{e}");
    }

    #[test]
    fn a_port_out_of_range_is_bad_input() {
        for bad in [
            "nats://h:99999",
            "nats://h:0",
            "nats://h:port",
            "nats://a:4222,b:70000",
        ] {
            let e = ServerUrl::parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("not a port"), "{bad}: {e}");
        }
        for good in [
            "nats://h:4222",
            "nats://h",
            "nats://[::1]:4222",
            "nats://[::1]",
        ] {
            ServerUrl::parse(good).unwrap();
        }
    }

    #[test]
    fn a_cluster_is_a_list_of_addresses() {
        let u = ServerUrl::parse("nats://alice:s3cret@h1:4222,h2:4222,tls://h3:4222").unwrap();
        assert_eq!(u.shown(), "nats://h1:4222,nats://h2:4222,tls://h3:4222");
        assert_eq!(
            u.addresses(),
            ["nats://h1:4222", "nats://h2:4222", "tls://h3:4222"]
        );
        assert_eq!(
            userinfo(u.full()),
            Some(("alice".to_string(), Some("s3cret".to_string())))
        );
        for bad in [
            "nats://h1:1,",
            "nats://h1:1,,h2:2",
            "nats://h1:1,http://h2:2",
        ] {
            assert_eq!(ServerUrl::parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn replicas_may_be_fixed_in_the_address() {
        let u = ServerUrl::parse("nats://a:p?w@h1:1,h2:2?replicas=2").unwrap();
        assert_eq!(u.replicas(), Some(2));
        assert_eq!(u.addresses(), ["nats://h1:1", "nats://h2:2"]);
        assert_eq!(userinfo(u.full()), Some(("a".into(), Some("p?w".into()))));
        assert_eq!(ServerUrl::parse("nats://h:1").unwrap().replicas(), None);
        for bad in [
            "nats://h:1?replicas=0",
            "nats://h:1?replicas=6",
            "nats://h:1?replicas=x",
            "nats://h:1?r=1",
            "nats://h:1?replicas=1&x=2",
        ] {
            assert_eq!(ServerUrl::parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
