//! Who may talk to the endpoint: only a client on this machine that holds
//! the daemon's secret token, through a page of the endpoint's own origin.
//!
//! - **Host** must name the loopback address and port the endpoint serves
//!   (`127.0.0.1:P`, `localhost:P`, `[::1]:P`): a DNS-rebinding page whose
//!   host resolves to 127.0.0.1 still sends its own name and is refused.
//! - **Origin**, when a browser sends one, must be the endpoint's own or the
//!   desktop app's webview: no other web page can drive the debugger, even
//!   one that guessed the token.
//! - **Token**: `Authorization: Bearer T`, `?token=T` (the URL the daemon
//!   prints, and WebSocket upgrades, which cannot carry headers), or the
//!   `strobe_token` cookie the first page load sets (HttpOnly,
//!   SameSite=Strict) so the page's own requests need not repeat it.

use axum::http::{HeaderMap, header};

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The Host header is missing or not this endpoint's loopback address.
    Host(String),
    /// A cross-origin request.
    Origin(String),
    /// A cross-origin request a browser made without an Origin header
    /// (a no-cors GET), told apart by its `Sec-Fetch-Site`.
    CrossSite(String),
    /// No token, or the wrong one.
    Token,
}

impl Refusal {
    /// What the client is told.
    pub fn message(&self) -> String {
        match self {
            Refusal::Host(h) => format!(
                "Host {h:?} is not this endpoint's loopback address; open the URL `strobe ui` prints"
            ),
            Refusal::Origin(o) => format!(
                "requests from origin {o:?} are refused: only Strobe's own page may use this endpoint"
            ),
            Refusal::CrossSite(site) => format!(
                "a {site} request (from another page) is refused: only Strobe's own page may use this endpoint"
            ),
            Refusal::Token => {
                "missing or wrong token: open the URL `strobe ui` prints (it carries the \
                               token), or send `Authorization: Bearer <token>`"
                    .to_string()
            }
        }
    }
}

/// Where a request's token was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// `Authorization: Bearer`.
    Header,
    /// `?token=` in the URL.
    Query,
    /// The cookie set by an earlier response.
    Cookie,
}

/// The endpoint's identity: its port and its secret.
#[derive(Clone)]
pub struct Guard {
    port: u16,
    token: String,
}

/// Origins of the Tauri webview (Linux/macOS and Windows spellings).
const APP_ORIGINS: &[&str] = &["tauri://localhost", "http://tauri.localhost"];
/// The cookie that carries the token after the first page load.
pub const COOKIE: &str = "strobe_token";

impl Guard {
    /// A guard for the endpoint on `port` with `token`.
    pub fn new(port: u16, token: String) -> Self {
        Self { port, token }
    }

    /// The secret.
    pub fn token(&self) -> &str {
        &self.token
    }

    fn allowed_hosts(&self) -> [String; 3] {
        let p = self.port;
        [
            format!("127.0.0.1:{p}"),
            format!("localhost:{p}"),
            format!("[::1]:{p}"),
        ]
    }

    /// Checks a request's headers and query string; says where the right
    /// token was found.
    pub fn check(&self, headers: &HeaderMap, query: Option<&str>) -> Result<TokenSource, Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !self.allowed_hosts().iter().any(|a| a == host) {
            return Err(Refusal::Host(host.to_string()));
        }
        // Browsers leave Origin off no-cors GETs, yet send the token cookie
        // from any page on another loopback port (same site: ports do not
        // count). Fetch metadata tells those apart; opening the page itself
        // (a navigation, e.g. from an editor's link) stays allowed.
        let fetch_meta = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(site @ ("cross-site" | "same-site")) = fetch_meta("sec-fetch-site")
            && fetch_meta("sec-fetch-mode") != Some("navigate")
        {
            return Err(Refusal::CrossSite(site.to_string()));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            let own = self
                .allowed_hosts()
                .iter()
                .any(|h| origin == format!("http://{h}"));
            if !own && !APP_ORIGINS.contains(&origin) {
                return Err(Refusal::Origin(origin.to_string()));
            }
        }
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(|t| (TokenSource::Header, t.to_string()));
        let from_query = query
            .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")))
            .map(|t| (TokenSource::Query, t.to_string()));
        let from_cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|c| c.to_str().ok())
            .flat_map(|c| c.split(';'))
            .find_map(|c| {
                c.trim()
                    .strip_prefix(&format!("{COOKIE}="))
                    .map(str::to_string)
            })
            .map(|t| (TokenSource::Cookie, t));
        [from_query, bearer, from_cookie]
            .into_iter()
            .flatten()
            .find(|(_, t)| same_secret(t.as_bytes(), self.token.as_bytes()))
            .map(|(source, _)| source)
            .ok_or(Refusal::Token)
    }
}

/// Compares without stopping at the first difference, so response time
/// does not tell how much of a guess was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A new random token: 32 bytes from the kernel, hex.
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn guard() -> Guard {
        Guard::new(4100, "s3cret".into())
    }

    #[test]
    fn the_token_comes_from_a_header_the_query_or_the_cookie() {
        let g = guard();
        let host = (header::HOST, "127.0.0.1:4100");
        assert_eq!(
            g.check(&headers(std::slice::from_ref(&host)), None),
            Err(Refusal::Token)
        );
        assert!(
            g.check(
                &headers(&[host.clone(), (header::AUTHORIZATION, "Bearer s3cret")]),
                None
            )
            .is_ok()
        );
        assert!(
            g.check(
                &headers(std::slice::from_ref(&host)),
                Some("a=1&token=s3cret")
            )
            .is_ok()
        );
        assert!(
            g.check(
                &headers(&[host.clone(), (header::COOKIE, "x=1; strobe_token=s3cret")]),
                None
            )
            .is_ok()
        );
        assert_eq!(
            g.check(&headers(&[host]), Some("token=s3cre")),
            Err(Refusal::Token)
        );
    }

    #[test]
    fn foreign_hosts_and_origins_are_refused_even_with_the_token() {
        let g = guard();
        let evil_host = headers(&[(header::HOST, "evil.example:4100")]);
        assert!(matches!(
            g.check(&evil_host, Some("token=s3cret")),
            Err(Refusal::Host(_))
        ));
        let other_port = headers(&[(header::HOST, "127.0.0.1:9999")]);
        assert!(matches!(
            g.check(&other_port, Some("token=s3cret")),
            Err(Refusal::Host(_))
        ));
        let evil_origin = headers(&[
            (header::HOST, "localhost:4100"),
            (header::ORIGIN, "https://evil.example"),
        ]);
        assert!(matches!(
            g.check(&evil_origin, Some("token=s3cret")),
            Err(Refusal::Origin(_))
        ));
        for own in [
            "http://localhost:4100",
            "http://127.0.0.1:4100",
            "tauri://localhost",
        ] {
            let h = headers(&[(header::HOST, "localhost:4100"), (header::ORIGIN, own)]);
            assert!(g.check(&h, Some("token=s3cret")).is_ok(), "{own}");
        }
    }

    #[test]
    fn another_pages_originless_requests_are_refused_but_opening_the_page_is_not() {
        let g = guard();
        let site = header::HeaderName::from_static("sec-fetch-site");
        let mode = header::HeaderName::from_static("sec-fetch-mode");
        let host = (header::HOST, "127.0.0.1:4100");
        let cookie = (header::COOKIE, "strobe_token=s3cret");
        // A no-cors GET from a page on another loopback port: no Origin,
        // but the cookie comes along (same site).
        for from in ["same-site", "cross-site"] {
            let h = headers(&[
                host.clone(),
                cookie.clone(),
                (site.clone(), from),
                (mode.clone(), "no-cors"),
            ]);
            assert_eq!(g.check(&h, None), Err(Refusal::CrossSite(from.into())));
        }
        // Following a link to the page (an editor, another tab) is fine.
        let nav = headers(&[
            host.clone(),
            (site.clone(), "cross-site"),
            (mode.clone(), "navigate"),
        ]);
        assert_eq!(g.check(&nav, Some("token=s3cret")), Ok(TokenSource::Query));
        // The page's own requests, and a typed-in URL.
        for own in ["same-origin", "none"] {
            let h = headers(&[
                host.clone(),
                cookie.clone(),
                (site.clone(), own),
                (mode.clone(), "cors"),
            ]);
            assert_eq!(g.check(&h, None), Ok(TokenSource::Cookie));
        }
    }

    #[test]
    fn tokens_are_long_and_differ() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
