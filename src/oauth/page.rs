//! The sign-in and consent page, and the error page: plain HTML with one inline style block (its
//! hash in the CSP), no script, no third-party asset, never framed.

/// What the consent page shows and carries.
pub struct Consent<'a> {
    /// The MCP server the client asks for (its title or name).
    pub server: &'a str,
    pub resource: &'a str,
    /// The client asks for the admin API: the page says in words what that grants.
    pub admin: bool,
    pub client_name: &'a str,
    /// Who vouches for the client's name.
    pub vouched: Vouched<'a>,
    pub redirect_host: &'a str,
    pub scopes: &'a [String],
    /// Who is signed in already; `None`: the page asks for a username and password.
    pub signed_in_as: Option<&'a str>,
    pub error: Option<&'a str>,
    /// The sealed authorization request and the CSRF token, sent back with the form.
    pub request: &'a str,
    pub csrf: &'a str,
    /// Who the identity provider said signed in, sealed (sign-in mode (a)).
    pub identity: Option<&'a str>,
    /// The username typed before a failed attempt, so only the password is typed again.
    pub username: &'a str,
}

/// Who vouches for the name a client shows on the consent page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vouched<'a> {
    /// The deployment's configuration lists the client.
    Configured,
    /// A Client ID Metadata Document: the client is whoever controls this host.
    Document { host: &'a str },
    /// Dynamic registration: the client chose its own name, which anyone can.
    SelfNamed,
}

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;color:#1d2330;margin:0}\
main{max-width:26rem;margin:8vh auto;background:#fff;border-radius:12px;padding:2rem;box-shadow:0 2px 12px #0002}\
h1{font-size:1.3rem;margin:0 0 1rem}dl{margin:1rem 0;font-size:.9rem}dt{color:#5b6270}dd{margin:0 0 .5rem;word-break:break-all}\
label{display:block;margin:.75rem 0 .25rem;font-weight:600}input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;border:1px solid #b8bdc7;border-radius:6px}\
.buttons{display:flex;gap:.75rem;margin-top:1.5rem}button{flex:1;padding:.6rem;font:inherit;border-radius:6px;border:1px solid #b8bdc7;background:#fff;cursor:pointer}\
button#allow{background:#2454d6;border-color:#2454d6;color:#fff}.error{background:#fde8e8;color:#8a1c1c;padding:.5rem .75rem;border-radius:6px}\
.who{color:#5b6270;font-size:.9rem}";

pub use crate::html::escape;

pub fn document(title: &str, body: &str) -> String {
    format!("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\"><title>{}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>", escape(title))
}

pub fn consent(c: &Consent<'_>) -> String {
    let what = if c.admin { "administer this deployment".to_string() } else { format!("use {}", c.server) };
    let mut body = format!("<h1>Allow <span id=\"client-name\">{}</span> to {}?</h1>", escape(c.client_name), escape(&what));
    let vouched = match c.vouched {
        Vouched::Configured => "This application is configured by this server's operator.".to_string(),
        Vouched::Document { host } => format!("This application is the one published at <strong>{}</strong>; the name is its own.", escape(host)),
        Vouched::SelfNamed => "<strong>The application chose this name itself, and nothing checks it</strong>: any application can call itself anything. Allow only if you started this sign-in yourself.".to_string(),
    };
    body.push_str(&format!("<p class=\"who\" id=\"vouched\">{vouched}</p>"));
    if c.admin {
        body.push_str(
            "<p class=\"error\" id=\"admin-rights\">This gives the application <strong>administrator rights</strong> over this deployment: \
             it can read and change every server's tools, resources and prompts (where they send requests, and with which of the deployment's secrets), \
             see the health figures, and roll the configuration back.</p>",
        );
    }
    if let Some(error) = c.error {
        body.push_str(&format!("<p class=\"error\" id=\"error\" role=\"alert\">{}</p>", escape(error)));
    }
    let scopes = match (c.admin, c.scopes.is_empty()) {
        (true, _) => "administrator rights: the admin API".to_string(),
        (false, true) => "the tools this server offers you".to_string(),
        (false, false) => c.scopes.join(" "),
    };
    let resource_label = if c.admin { "Admin API" } else { "MCP server" };
    body.push_str(&format!(
        "<dl><dt>{resource_label}</dt><dd id=\"resource\">{}</dd><dt>Access</dt><dd id=\"scopes\">{}</dd><dt>You will be sent back to</dt><dd id=\"redirect-host\">{}</dd></dl>",
        escape(c.resource),
        escape(&scopes),
        escape(c.redirect_host)
    ));
    body.push_str(&format!("<form method=\"post\" action=\"/authorize\" id=\"consent\"><input type=\"hidden\" name=\"request\" value=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">", escape(c.request), escape(c.csrf)));
    if let Some(identity) = c.identity {
        body.push_str(&format!("<input type=\"hidden\" name=\"identity\" value=\"{}\">", escape(identity)));
    }
    match c.signed_in_as {
        Some(who) => body.push_str(&format!("<p class=\"who\" id=\"signed-in\">Signed in as {}</p>", escape(who))),
        None => body.push_str(&format!(
            "<label for=\"username\">Username</label><input id=\"username\" name=\"username\" value=\"{}\" autocomplete=\"username\" required autofocus>\
             <label for=\"password\">Password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>",
            escape(c.username)
        )),
    }
    body.push_str("<div class=\"buttons\"><button id=\"deny\" name=\"decision\" value=\"deny\" formnovalidate>Deny</button><button id=\"allow\" name=\"decision\" value=\"allow\">Allow</button></div></form>");
    document(&format!("Allow {} to {what}", c.client_name), &body)
}

pub fn error_page(message: &str) -> String {
    // Messages come from several layers, some written as clauses: the page shows a sentence.
    let mut sentence: String = message.chars().take(1).flat_map(char::to_uppercase).chain(message.chars().skip(1)).collect();
    if !sentence.ends_with('.') {
        sentence.push('.');
    }
    document("Sign-in cannot continue", &format!("<h1>Sign-in cannot continue</h1><p class=\"error\" id=\"error\">{}</p><p class=\"who\">Go back to the application and try again.</p>", escape(&sentence)))
}

/// An error for an application that may not be sent back to at once: the page says what went
/// wrong, and a link returns to the application with the error, if the person so chooses.
pub fn error_return_page(message: &str, host: &str, location: &str) -> String {
    // It follows a colon: as written, so a parameter's name (`code_challenge_method`) stays one.
    let mut sentence = message.to_string();
    if !sentence.ends_with('.') {
        sentence.push('.');
    }
    document(
        "Sign-in cannot continue",
        &format!(
            "<h1>Sign-in cannot continue</h1><p class=\"error\" id=\"error\">The application's request is not valid: {}</p>\
             <p class=\"who\">If you started this sign-in, <a id=\"return\" href=\"{}\" rel=\"noreferrer\">return to {}</a> to tell it. If you did not, close this page.</p>",
            escape(&sentence),
            escape(location),
            escape(host)
        ),
    )
}

/// The page's headers: a CSP that allows its one style block and a form posted to this origin
/// (and the redirect that follows it, to `redirect_origin`: browsers apply `form-action` to it).
pub fn headers(redirect_origin: Option<&str>) -> Vec<(&'static str, String)> {
    let form_action = match redirect_origin {
        Some(o) => format!("'self' {o}"),
        None => "'self'".into(),
    };
    crate::html::page_headers(STYLE, &form_action)
}

/// What a redirect URI's origin is for `form-action`: `scheme://host[:port]` as parsed, or the
/// scheme alone (`cursor:`) for a native app's URI, or one whose host a CSP source cannot spell.
pub fn redirect_origin(redirect_uri: &str) -> Option<String> {
    let url = super::uri::read(redirect_uri).ok()?;
    let plain = |h: &str| h.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':'));
    Some(match url.host_and_port() {
        Some(host) if !host.is_empty() && plain(&host) => format!("{}://{host}", url.scheme()),
        _ => format!("{}:", url.scheme()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(signed_in_as: Option<&str>, error: Option<&str>) -> String {
        consent(&Consent { server: "Demo", resource: "https://mcp.test/mcp", admin: false, client_name: "<script>x</script>", vouched: Vouched::SelfNamed, redirect_host: "claude.ai", scopes: &[], signed_in_as, error, request: "r\"1", csrf: "c1", identity: None, username: "bob\"" })
    }

    #[test]
    fn the_consent_page_escapes_what_clients_say() {
        let html = page(None, None);
        assert!(html.contains("<span id=\"client-name\">&lt;script&gt;x&lt;/script&gt;</span>"), "{html}");
        assert!(!html.contains("<script>"));
        assert!(html.contains("name=\"request\" value=\"r&quot;1\""));
        assert!(html.contains("id=\"username\" name=\"username\" value=\"bob&quot;\"") && html.contains("id=\"password\""));
        assert!(html.contains("<dd id=\"redirect-host\">claude.ai</dd>"));
        let signed_in = page(Some("alice"), Some("wrong <password>"));
        assert!(!signed_in.contains("id=\"password\""));
        assert!(signed_in.contains("Signed in as alice"));
        assert!(signed_in.contains("<p class=\"error\" id=\"error\" role=\"alert\">wrong &lt;password&gt;</p>"));
    }

    #[test]
    fn the_page_says_who_vouches_for_the_name_and_what_admin_rights_are() {
        let html = page(None, None);
        assert!(html.contains("The application chose this name itself, and nothing checks it"), "{html}");
        assert!(!html.contains("administrator rights"));
        let c = |admin, vouched| consent(&Consent { server: "Demo", resource: "https://mcp.test/admin/api", admin, client_name: "Claude", vouched, redirect_host: "claude.ai", scopes: &[], signed_in_as: Some("ann"), error: None, request: "r", csrf: "c", identity: None, username: "" });
        let admin = c(true, Vouched::Document { host: "claude.ai" });
        assert!(admin.contains("<h1>Allow <span id=\"client-name\">Claude</span> to administer this deployment?</h1>"), "{admin}");
        assert!(admin.contains("<strong>administrator rights</strong> over this deployment"));
        assert!(admin.contains("the one published at <strong>claude.ai</strong>"));
        assert!(admin.contains("<dt>Admin API</dt><dd id=\"resource\">https://mcp.test/admin/api</dd>"));
        assert!(c(false, Vouched::Configured).contains("configured by this server's operator"));
    }

    #[test]
    fn an_error_goes_back_only_by_the_persons_link() {
        let html = error_return_page("code_challenge_method \"plain\" is not supported; use S256", "127.0.0.1:9", "http://127.0.0.1:9/cb?error=invalid_request&state=a\"b");
        assert!(html.contains("The application's request is not valid: code_challenge_method &quot;plain&quot; is not supported; use S256.</p>"), "{html}");
        assert!(html.contains("<a id=\"return\" href=\"http://127.0.0.1:9/cb?error=invalid_request&amp;state=a&quot;b\" rel=\"noreferrer\">return to 127.0.0.1:9</a>"), "{html}");
    }

    #[test]
    fn pages_are_never_framed_and_run_nothing() {
        let headers = headers(Some("https://claude.ai"));
        let csp = &headers.iter().find(|(k, _)| *k == "Content-Security-Policy").unwrap().1;
        assert!(csp.starts_with("default-src 'none'; style-src 'sha256-"), "{csp}");
        assert!(csp.ends_with("; form-action 'self' https://claude.ai; frame-ancestors 'none'; base-uri 'none'"), "{csp}");
        assert_eq!(redirect_origin("http://127.0.0.1:5/cb?x").as_deref(), Some("http://127.0.0.1:5"));
        assert_eq!(redirect_origin("cursor://x/cb").as_deref(), Some("cursor://x"));
        assert_eq!(redirect_origin("com.example.app:/cb").as_deref(), Some("com.example.app:"));
        assert_eq!(redirect_origin("HTTPS://Claude.AI:443/cb").as_deref(), Some("https://claude.ai"));
        assert_eq!(redirect_origin("cursor://a;script-src/cb").as_deref(), Some("cursor:"), "a host a CSP source cannot spell");
        assert!(error_page("<b>").contains("&lt;b&gt;."));
        assert!(error_page("this client is gone").contains(">This client is gone.</p>"));
        assert!(error_page("Done.").contains(">Done.</p>"));
    }
}
