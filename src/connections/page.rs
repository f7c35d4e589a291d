//! The connections' pages, in the sign-in pages' style (`oauth::page`: one style block, no
//! script): the consent a user gives before going to the provider, the end of a connection, a
//! refusal, and the signed-in user's list with its Disconnect buttons.

use crate::html::escape;
use crate::oauth::page::document;

/// The consent page of connection `title` for the user `who`: the form posts back to `action`.
pub fn consent(title: &str, who: &str, scopes: &[String], host: &str, action: &str) -> String {
    let scopes = if scopes.is_empty() { String::new() } else { format!("<dt>Access asked for</dt><dd id=\"scopes\">{}</dd>", escape(&scopes.join(" "))) };
    document(
        &format!("Connect {title}"),
        &format!(
            "<h1>Connect your {t} account?</h1><p>Tools you call through mcp-edge will act as you at <strong>{h}</strong>. You can disconnect at any time under My connections.</p>\
             <dl><dt>Signed in as</dt><dd id=\"who\">{w}</dd>{scopes}</dl>\
             <form method=\"post\" action=\"{a}\"><div class=\"buttons\"><button id=\"deny\" name=\"decision\" value=\"deny\">Cancel</button><button id=\"allow\" name=\"decision\" value=\"allow\">Connect</button></div></form>",
            t = escape(title),
            h = escape(host),
            w = escape(who),
            a = escape(action)
        ),
    )
}

/// The page the provider's callback ends on.
pub fn connected(title: &str) -> String {
    document(&format!("{title} connected"), &format!("<h1 id=\"connected\">Connected</h1><p>Your {} account is connected. Go back to your client: the tool goes on, or call it again.</p>", escape(title)))
}

/// A page that refuses, saying why in a sentence.
pub fn refused(heading: &str, message: &str) -> String {
    document(heading, &format!("<h1>{}</h1><p class=\"error\" id=\"error\">{}</p>", escape(heading), escape(message)))
}

/// One row of the signed-in user's list.
pub struct Row<'a> {
    pub name: &'a str,
    pub title: &'a str,
    /// When the user connected, as ISO 8601; `None`: not connected.
    pub since: Option<String>,
    pub scope: Option<&'a str>,
    /// The connect link signed for this user, for a connection not connected.
    pub connect: Option<String>,
}

/// "My connections": each per-user connection, connected or not, a Disconnect button by each
/// connected one (a POST, which only this origin's pages may send), a Connect link by the others.
pub fn list(who: &str, rows: &[Row<'_>]) -> String {
    let mut body = format!("<h1>My connections</h1><p class=\"who\">Signed in as {}</p><ul id=\"connections\">", escape(who));
    for r in rows {
        body.push_str(&format!("<li data-connection=\"{}\"><strong>{}</strong>: ", escape(r.name), escape(r.title)));
        match &r.since {
            Some(since) => body.push_str(&format!(
                "connected since {}{}<form method=\"post\" action=\"{}/{}/disconnect\"><button class=\"disconnect\">Disconnect</button></form>",
                escape(since),
                r.scope.map(|s| format!(" ({})", escape(s))).unwrap_or_default(),
                crate::paths::CONNECTIONS,
                escape(r.name)
            )),
            None => {
                body.push_str("not connected");
                if let Some(link) = &r.connect {
                    body.push_str(&format!(" <a class=\"connect\" href=\"{}\">Connect</a>", escape(link)));
                }
            }
        }
        body.push_str("</li>");
    }
    body.push_str("</ul><p><a href=\"/\">Back to the console</a></p>");
    document("My connections", &body)
}
