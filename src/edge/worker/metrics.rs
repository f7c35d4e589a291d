//! `GET /metrics`: the cumulative metrics (`crate::metrics`) for a scraper, in Prometheus text
//! or OpenMetrics as `Accept` asks. Who may: a bearer of the scrape token (the secret that
//! `telemetry.metrics.scrapeTokenSecret` names: a credential that reads metrics and nothing
//! else), or an admin bearer credential as the admin API takes them. Compared in constant time;
//! a refused request counts against its address's limit, which bounds guessing.

use worker::{Env, Response};

use crate::catalog::telemetry::Metrics;
use crate::catalog::Catalog;
use crate::edge::http::{self, Incoming};
use crate::error::Error;
use crate::head::RequestUrl;
use crate::metrics::prometheus::{render, Format};

/// Whether this request is the metrics': `/metrics`, unless a server is routed there.
pub fn serves(catalog: &Catalog, path: &str) -> bool {
    crate::paths::answers(crate::paths::Owner::Metrics, path) && catalog.route(path).is_none()
}

pub async fn serve(req: Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    let settings = &catalog.telemetry.metrics;
    if req.method() != worker::Method::Get && req.method() != worker::Method::Head {
        return Err(Error::MethodNotAllowed("GET"));
    }
    if !allowed(&req, env, catalog, url, settings).await? {
        // Counted only when refused: a scraper every few seconds spends nothing.
        crate::edge::worker::admission::per_address(&req, env, catalog).await?;
        let fields = [("WWW-Authenticate", "Bearer realm=\"metrics\""), ("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")];
        return Ok(http::builder(401, &fields)?.fixed(b"send Authorization: Bearer with the scrape token or an admin credential\n".to_vec()));
    }
    let format = Format::of(req.header("accept").as_deref());
    let totals = crate::edge::health::totals(env).await?;
    let text = render(&totals, format);
    Ok(http::builder(200, &[("Content-Type", format.content_type()), ("Cache-Control", "no-store")])?.fixed(text.into_bytes()))
}

/// Whether the bearer may read the metrics.
async fn allowed(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl, settings: &Metrics) -> Result<bool, Error> {
    let header = req.header("authorization");
    let Some(credential) = header.as_deref().and_then(|h| crate::auth::authorization(h, "Bearer")) else { return Ok(false) };
    // An unset (or empty) secret admits no one: an empty bearer must not match it.
    let scrape = settings.scrape_token_secret.as_deref().and_then(|name| crate::edge::secret(env, name)).filter(|t| !t.is_empty());
    if scrape.is_some_and(|token| crate::auth::same_secret(&token, &credential)) {
        return Ok(true);
    }
    Ok(crate::edge::worker::admin::bearer(env, catalog, url, &credential).await.is_ok())
}
