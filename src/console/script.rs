//! The status page's one script, `try.js`: "Try a tool", a small MCP client that runs in the
//! browser against each server's own endpoint on the page's origin. It is served as written (no
//! build step) from a path that carries a hash of its text, so a browser may keep it for good and
//! a new build is a new URL; the page's CSP allows that one URL, and the page's `<script>` tag
//! pins its SHA-256 too. Each server section holds an empty, hidden panel that says what the
//! script needs (the MCP URL, how a credential is sent); without script the page stays read-only.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::connect::Urls;
use crate::auth::{Auth, Source};
use crate::catalog::Server;
use crate::html::escape;

/// One of the page's scripts, served byte for byte as written, at a path that carries its hash.
pub struct Script {
    /// The path's stem: `/<stem>.<hash>.js`.
    stem: &'static str,
    pub source: &'static str,
    names: OnceLock<Names>,
}

/// "Try a tool": on every page.
pub static TRY: Script = Script::new("console", include_str!("try.js"));
/// The configuration editor and history: only on an admin's page.
pub static ADMIN: Script = Script::new("console-admin", include_str!("admin.js"));

/// The script served at `path`, if any. Every request's path is asked, so the stem is matched
/// first: the hash is worked out only for a path that could be the script's.
pub fn find(path: &str) -> Option<&'static Script> {
    [&TRY, &ADMIN].into_iter().find(|s| path.strip_prefix('/').and_then(|p| p.strip_prefix(s.stem)).is_some_and(|rest| rest.starts_with('.')) && s.path() == path)
}

struct Names {
    path: String,
    integrity: String,
}

impl Script {
    const fn new(stem: &'static str, source: &'static str) -> Script {
        Script { stem, source, names: OnceLock::new() }
    }

    /// The path and the integrity value, from the script's SHA-256, worked out once per isolate.
    fn names(&self) -> &Names {
        self.names.get_or_init(|| {
            let digest = Sha256::digest(self.source.as_bytes());
            // 64 bits of the hash tell builds apart; the integrity attribute carries all 256.
            let short = crate::hex::encode(digest.get(..8).unwrap_or_default());
            Names { path: format!("/{}.{short}.js", self.stem), integrity: format!("sha256-{}", crate::base64::encode(&digest)) }
        })
    }

    /// Where the Worker serves the script: `/<stem>.<16 hex digits>.js`.
    pub fn path(&self) -> &str {
        &self.names().path
    }

    /// The `integrity` attribute of the page's `<script>` tag.
    pub fn integrity(&self) -> &str {
        &self.names().integrity
    }

    /// The page's `<script>` tag: deferred, so it runs once the panels it fills are parsed.
    pub fn tag(&self) -> String {
        format!("<script src=\"{}\" integrity=\"{}\" defer></script>", self.path(), self.integrity())
    }

    /// The CSP source that allows the script and nothing else: its exact URL on `origin`. An
    /// origin that is not plain `scheme://host[:port]` text (it comes from the request) allows
    /// nothing.
    pub fn source(&self, origin: &str) -> String {
        let plain = !origin.is_empty() && origin.chars().all(|c| c.is_ascii_alphanumeric() || ".-:/[]".contains(c));
        if plain {
            format!("{origin}{}", self.path())
        } else {
            "'none'".into()
        }
    }
}

/// The script's response headers: cached for good (the path changes with the text), read as
/// nothing but JavaScript, and fetched by this origin's pages only.
pub fn headers() -> Vec<(&'static str, String)> {
    vec![
        ("Content-Type", "text/javascript; charset=utf-8".into()),
        ("Cache-Control", "public, max-age=31536000, immutable".into()),
        ("X-Content-Type-Options", "nosniff".into()),
        ("Cross-Origin-Resource-Policy", "same-origin".into()),
    ]
}

/// A server's "Try a tool" panel as the page sends it: empty and hidden, with what the script
/// needs in data attributes. The script shows and fills it; without script nothing shows.
/// A traced deployment's panel starts a sampled trace for each call and shows its id, linked
/// to `telemetry.traceLink` when there is one.
pub fn panel(server: &Server, urls: &Urls, telemetry: &crate::catalog::telemetry::Telemetry) -> String {
    let auth = server.auth.as_ref();
    let oauth = if auth.is_some_and(|a| a.oauth) { " data-oauth=\"1\"" } else { "" };
    let link = telemetry.trace_link.as_deref().map(|t| format!(" data-trace-link=\"{}\"", escape(t))).unwrap_or_default();
    let trace = if telemetry.tracing() { format!(" data-traced=\"1\"{link}") } else { String::new() };
    format!(
        "<div class=\"try\" hidden data-url=\"{}\" data-route=\"{}\" data-credential=\"{}\"{oauth}{trace}></div>",
        escape(&urls.mcp),
        escape(server.route.as_str()),
        escape(&credential(auth))
    )
}

/// How the panel sends a credential the user types: `bearer` (`Authorization: Bearer`),
/// `header:<name>`, `cookie:<name>` (the browser's own cookie, which a script cannot set), or
/// empty for a server without `auth`. Only the header's name, never a secret's.
fn credential(auth: Option<&Auth>) -> String {
    let Some(auth) = auth else { return String::new() };
    // A bearer token is what a person pastes most often: use it when the server takes one.
    if auth.sources.is_empty() || auth.sources.contains(&Source::Bearer) {
        return "bearer".into();
    }
    match auth.sources.first() {
        Some(Source::Header(name)) => format!("header:{name}"),
        Some(Source::Cookie(name)) => format!("cookie:{name}"),
        Some(Source::Bearer) | None => "bearer".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(extra: &str) -> Server {
        let text = format!(r#"{{"servers":[{{"name":"s","version":"1","route":"/a/mcp"{extra}}}],"oauth":{{"signIn":{{"users":[{{"username":"a","passwordSecret":"PW"}}]}}}}}}"#);
        crate::config::load(&text).unwrap().servers[0].as_ref().clone()
    }

    #[test]
    fn the_path_and_integrity_follow_the_text() {
        for (script, stem) in [(&TRY, "console"), (&ADMIN, "console-admin")] {
            let digest = Sha256::digest(script.source.as_bytes());
            assert_eq!(script.integrity(), format!("sha256-{}", crate::base64::encode(&digest)));
            let hex = crate::hex::encode(digest.get(..8).unwrap_or_default());
            assert_eq!(script.path(), format!("/{stem}.{hex}.js"));
            assert_eq!(script.source("http://127.0.0.1:8787"), format!("http://127.0.0.1:8787{}", script.path()));
            assert_eq!(find(script.path()).map(|s| s.stem), Some(stem));
            // Anything that could end the directive or add a source allows nothing.
            assert_eq!(script.source("http://x.test; script-src *"), "'none'");
            assert_eq!(script.source(""), "'none'");
        }
        assert!(find("/console.js").is_none());
    }

    #[test]
    fn the_panel_says_how_to_send_a_credential_and_never_a_secret() {
        let panel = |extra: &str| {
            let s = server(extra);
            super::panel(&s, &Urls::of(&s, "https://x.test"), &Default::default())
        };
        assert_eq!(panel(""), "<div class=\"try\" hidden data-url=\"https://x.test/a/mcp\" data-route=\"/a/mcp\" data-credential=\"\"></div>");
        let tokens = panel(r#","auth":{"from":["header:X-Key","bearer"],"tokens":[{"secret":"SECRET_NAME","subject":"bot"}]}"#);
        assert!(tokens.contains("data-credential=\"bearer\"") && !tokens.contains("SECRET_NAME") && !tokens.contains("data-oauth"));
        assert!(panel(r#","auth":{"from":["header:X-Key"],"tokens":[{"secret":"S","subject":"bot"}]}"#).contains("data-credential=\"header:x-key\""));
        assert!(panel(r#","auth":{"from":["cookie:sid"],"tokens":[{"secret":"S","subject":"bot"}]}"#).contains("data-credential=\"cookie:sid\""));
        assert!(panel(r#","auth":{"oauth":true}"#).contains("data-credential=\"bearer\" data-oauth=\"1\""));
        // The trace link, escaped for its attribute.
        let s = server("");
        let mut telemetry = crate::catalog::telemetry::Telemetry { trace_link: Some("https://g.example/explore?a=1&traceId={traceId}".into()), ..Default::default() };
        // No link without tracing: there would be no trace to find.
        assert!(!super::panel(&s, &Urls::of(&s, "https://x.test"), &telemetry).contains("data-trace"));
        telemetry.otlp = Some(crate::catalog::telemetry::Otlp { endpoint: "https://o.example".into(), headers: vec![], encoding: crate::catalog::telemetry::Encoding::Protobuf });
        let linked = super::panel(&s, &Urls::of(&s, "https://x.test"), &telemetry);
        assert!(linked.ends_with(" data-traced=\"1\" data-trace-link=\"https://g.example/explore?a=1&amp;traceId={traceId}\"></div>"), "{linked}");
    }

    #[test]
    fn the_script_builds_no_markup_from_data() {
        // Server data reaches the page as text: no innerHTML, no eval, no inline handlers.
        for script in [&TRY, &ADMIN] {
            for banned in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute('on"] {
                assert!(!script.source.contains(banned), "{} uses {banned}", script.stem);
            }
            assert!(script.source.starts_with("//"));
        }
    }
}
