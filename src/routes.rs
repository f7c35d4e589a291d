//! Route patterns such as `/api/v1/interactions/{chat_uuid}/mcp`, and matching paths to them.

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
        // `/` alone is the root: no segments, and it matches only `/`.
        if rest.is_empty() {
            return Ok(RoutePattern { source: source.to_string(), segments: Vec::new() });
        }
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
        if self.segments.is_empty() {
            return path.is_empty().then(Vec::new);
        }
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
    fn the_root_route() {
        let r = RoutePattern::parse("/").unwrap();
        assert_eq!(r.matches("/"), Some(vec![]));
        assert_eq!(r.matches("/mcp"), None);
        assert_eq!(r.sibling("stream").as_str(), "/stream");
        assert!(!r.overlaps(&RoutePattern::parse("/mcp").unwrap()) && !r.overlaps(&RoutePattern::parse("/{x}").unwrap()));
        assert!(RoutePattern::parse("/mcp/").is_err() && RoutePattern::parse("//").is_err());
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
}
