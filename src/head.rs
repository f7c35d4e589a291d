//! What the edge reads of a request before its body: the method, the URL and the headers, taken
//! from the runtime as one string (`METHOD\nURL\nname\nvalue…`) in a single crossing of the
//! wasm boundary, where reading header by header costs a crossing and a string copy each.

/// A request's method, URL and headers. Header names arrive lowercased, as the runtime
/// iterates them; repeated headers arrive joined with `, `.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    pub url: String,
    headers: Vec<(String, String)>,
}

impl RequestHead {
    pub fn parse(text: &str) -> RequestHead {
        let mut lines = text.split('\n');
        let method = lines.next().unwrap_or_default().to_string();
        let url = lines.next().unwrap_or_default().to_string();
        let mut headers = Vec::new();
        while let (Some(name), Some(value)) = (lines.next(), lines.next()) {
            headers.push((name.to_ascii_lowercase(), value.to_string()));
        }
        RequestHead { method, url, headers }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The size of the header block, names and values.
    pub fn header_bytes(&self) -> usize {
        self.headers.iter().map(|(name, value)| name.len() + value.len()).sum()
    }

    /// The path, cut from the serialized URL without parsing it again: a special-scheme URL
    /// always has a path, and `?` and `#` within it are always percent-encoded.
    pub fn path(&self) -> &str {
        let after_scheme = self.url.find("://").map_or(0, |i| i + 3);
        let rest = self.url.get(after_scheme..).unwrap_or_default();
        let path = rest.find('/').and_then(|i| rest.get(i..)).unwrap_or("/");
        path.split(['?', '#']).next().unwrap_or("/")
    }
}

/// A request URL as the runtime serialized it (WHATWG-normalized: lowercase scheme and host,
/// default port dropped, path percent-encoded), split without a general URL parser: the
/// incoming request's URL is on every request's hot path, and is already normalized.
///
/// Never for a URL that came from a configuration, a client, an upstream or a token: its
/// splitting trusts that normalization (a `\`, a tab or a non-ASCII host would be read
/// otherwise than workerd reads it). Those are parsed by `crate::weburl`, which may hand one
/// over through [`RequestUrl::of`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestUrl {
    /// `scheme://host[:port]`, as `Origin` headers and resource identifiers spell it.
    pub origin: String,
    /// Always starts with `/`.
    pub path: String,
    /// After `?`, without the fragment; empty when there is none.
    pub query: String,
}

impl RequestUrl {
    /// Splits a URL the runtime serialized (see above: never another).
    pub fn parse(url: &str) -> Option<RequestUrl> {
        let (scheme, rest) = url.split_once("://")?;
        let url = rest.split('#').next().unwrap_or_default();
        let authority_end = url.find(['/', '?']).unwrap_or(url.len());
        let (authority, rest) = url.split_at(authority_end);
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let path = if path.is_empty() { "/" } else { path };
        Some(RequestUrl { origin: format!("{scheme}://{host}"), path: path.to_string(), query: query.to_string() })
    }

    /// A URL the WHATWG parser read and serialized, split the same way.
    pub fn of(url: &crate::weburl::WebUrl) -> RequestUrl {
        RequestUrl { origin: url.origin(), path: url.path().to_string(), query: url.query().unwrap_or_default().to_string() }
    }

    /// The first value of a query parameter, decoded as a form would encode it.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (form_decode(key) == name).then(|| form_decode(value))
        })
    }
}

/// A query or form value decoded: `+` is a space, then `%XX` escapes (kept as written when
/// malformed).
pub fn form_decode(s: &str) -> String {
    let plus_as_space = s.replace('+', " ");
    percent_decode(&plus_as_space).unwrap_or(plus_as_space)
}

/// `%XX` escapes to bytes; `None` when an escape is malformed or the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            out.push(u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let head = RequestHead::parse("POST\nhttp://127.0.0.1:8787/mcp?x=1\nhost\n127.0.0.1:8787\nMcp-Session-Id\nabc\ncontent-length\n0");
        assert_eq!((head.method.as_str(), head.path()), ("POST", "/mcp"));
        assert_eq!(head.header("mcp-session-id"), Some("abc"));
        assert_eq!(head.header("Host"), Some("127.0.0.1:8787"));
        assert_eq!(head.header("origin"), None);
        assert_eq!(head.header_bytes(), "host127.0.0.1:8787mcp-session-idabccontent-length0".len());
        let bare = RequestHead::parse("GET\nhttps://h");
        assert_eq!((bare.path(), bare.header_bytes()), ("/", 0));
    }

    #[test]
    fn request_urls() {
        let u = RequestUrl::parse("https://mcp.example.com:8443/a/b?sessionId=x%20y&q=a+b#frag").unwrap();
        assert_eq!(u.origin, "https://mcp.example.com:8443");
        assert_eq!(u.path, "/a/b");
        assert_eq!(u.query, "sessionId=x%20y&q=a+b");
        assert_eq!(u.query_param("sessionId").as_deref(), Some("x y"));
        assert_eq!(u.query_param("q").as_deref(), Some("a b"));
        assert_eq!(u.query_param("missing"), None);
        let bare = RequestUrl::parse("http://127.0.0.1:8787?flag").unwrap();
        assert_eq!((bare.origin.as_str(), bare.path.as_str()), ("http://127.0.0.1:8787", "/"));
        assert_eq!(bare.query_param("flag").as_deref(), Some(""));
        assert_eq!(RequestUrl::parse("http://user:pw@h/x").unwrap().origin, "http://h");
        assert_eq!(RequestUrl::parse("no-scheme"), None);
        assert_eq!(percent_decode("%E2%82%AC%2F"), Some("€/".to_string()));
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%FF"), None);
    }
}
