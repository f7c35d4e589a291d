//! `GET /`: the status page (`crate::console`), rendered for the request's origin and sent with
//! its CSP, and `GET /console.<hash>.js`, its script. A top-level navigation sends no `Origin`,
//! and a same-origin script needs none, so only the Host check applies.

use worker::{Headers, Method, Response, ResponseBuilder};

use crate::catalog::Catalog;
use crate::edge::http::Incoming;
use crate::error::Error;
use crate::head::RequestUrl;

/// The page, for `GET` and `HEAD`; `None` for other methods, which get the plain 404.
pub fn serve(req: &Incoming, catalog: &Catalog, url: &RequestUrl) -> Option<Result<Response, Error>> {
    let method = req.method();
    if method != Method::Get && method != Method::Head {
        return None;
    }
    Some((|| {
        // The page spells URLs on the request's origin: only a host some server allows may name it.
        crate::edge::worker::entry::any_host_allowed(req, catalog)?;
        // The page's script: the same bytes for every origin, with headers of its own.
        let script = url.path == crate::console::script::path();
        let headers = Headers::new();
        let fields = if script { crate::console::script::headers() } else { crate::console::page::headers(&url.origin) };
        for (name, value) in fields {
            headers.set(name, &value)?;
        }
        let builder = ResponseBuilder::new().with_status(200).with_headers(headers);
        if method == Method::Head {
            return Ok(builder.empty());
        }
        if script {
            return Ok(builder.fixed(crate::console::script::SOURCE.as_bytes().to_vec()));
        }
        Ok(builder.fixed(crate::console::page::render(catalog, &url.origin).into_bytes()))
    })())
}
