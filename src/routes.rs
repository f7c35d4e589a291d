//! Route patterns such as `/api/v1/interactions/{chat_uuid}/mcp`, matching paths to them, and the
//! parts of a request URL the server reads.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutePattern {
    source: String,
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
}

/// Values of a route's `{param}` segments for one request.
pub type RouteParams = Vec<(String, String)>;

impl RoutePattern {
    pub fn parse(source: &str) -> Result<RoutePattern, String> {
        let rest = source.strip_prefix('/').ok_or("a route must start with '/'")?;
        let segments = rest
            .split('/')
            .map(|seg| {
                if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return Err(format!("invalid route parameter {seg:?}"));
                    }
                    Ok(Segment::Param(name.to_string()))
                } else if seg.is_empty() {
                    Err("a route has no empty segments".to_string())
                } else if seg.contains(['{', '}', '?', '#']) {
                    Err(format!("invalid route segment {seg:?}"))
                } else {
                    Ok(Segment::Literal(seg.to_string()))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RoutePattern { source: source.to_string(), segments })
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The same route with its last segment replaced, e.g. `/mcp` → `/stream`.
    pub fn sibling(&self, last: &str) -> RoutePattern {
        let mut segments = self.segments.clone();
        segments.pop();
        segments.push(Segment::Literal(last.to_string()));
        let source = segments
            .iter()
            .map(|s| match s {
                Segment::Literal(l) => format!("/{l}"),
                Segment::Param(p) => format!("/{{{p}}}"),
            })
            .collect();
        RoutePattern { source, segments }
    }

    pub fn params(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Param(p) => Some(p.as_str()),
            Segment::Literal(_) => None,
        })
    }

    /// Matches a request path (one trailing slash tolerated), returning the parameter values.
    pub fn matches(&self, path: &str) -> Option<RouteParams> {
        let path = path.strip_prefix('/')?;
        let path = path.strip_suffix('/').unwrap_or(path);
        let mut parts = path.split('/');
        let mut params = Vec::new();
        for seg in &self.segments {
            let part = parts.next()?;
            match seg {
                Segment::Literal(l) if l == part => {}
                Segment::Param(name) if !part.is_empty() => params.push((name.clone(), part.to_string())),
                _ => return None,
            }
        }
        parts.next().is_none().then_some(params)
    }

    /// Whether two patterns could match the same path.
    pub fn overlaps(&self, other: &RoutePattern) -> bool {
        self.segments.len() == other.segments.len()
            && self.segments.iter().zip(&other.segments).all(|pair| match pair {
                (Segment::Literal(a), Segment::Literal(b)) => a == b,
                _ => true,
            })
    }
}

/// A request URL as the runtime serialized it (WHATWG-normalized: lowercase scheme and host,
/// default port dropped, path percent-encoded), split without a general URL parser.
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

    /// The first value of a query parameter, decoded as a form would encode it.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (form_decode(key) == name).then(|| form_decode(value))
        })
    }
}

fn form_decode(s: &str) -> String {
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
    fn literal_and_parameter_routes() {
        let r = RoutePattern::parse("/mcp").unwrap();
        assert_eq!(r.matches("/mcp"), Some(vec![]));
        assert_eq!(r.matches("/mcp/"), Some(vec![]));
        assert_eq!(r.matches("/mcpx"), None);
        assert_eq!(r.matches("/mcp/x"), None);
        let r = RoutePattern::parse("/api/v1/interactions/{chat_uuid}/mcp").unwrap();
        assert_eq!(r.matches("/api/v1/interactions/abc/mcp"), Some(vec![("chat_uuid".into(), "abc".into())]));
        assert_eq!(r.matches("/api/v1/interactions//mcp"), None);
        assert_eq!(r.sibling("stream").as_str(), "/api/v1/interactions/{chat_uuid}/stream");
        assert_eq!(r.params().collect::<Vec<_>>(), ["chat_uuid"]);
    }

    #[test]
    fn bad_routes() {
        assert!(RoutePattern::parse("mcp").is_err());
        assert!(RoutePattern::parse("/a//b").is_err());
        assert!(RoutePattern::parse("/a/{x-y}").is_err());
        assert!(RoutePattern::parse("/a/b{x}").is_err());
    }

    #[test]
    fn overlap() {
        let a = RoutePattern::parse("/t/{x}/mcp").unwrap();
        assert!(a.overlaps(&RoutePattern::parse("/t/one/mcp").unwrap()));
        assert!(!a.overlaps(&RoutePattern::parse("/t/one/stream").unwrap()));
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
