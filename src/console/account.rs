//! Who is looking at the page, and the parts of it that depend on that: the account bar (who is
//! signed in, or the ways to sign in), the sign-in page a `signed-in` console shows everyone
//! else, and the administration section an admin sees (the configuration's version, the health
//! figures, and the editor the admin script fills).

use super::session::{Session, ADMIN_ROLE};
use crate::paths::{ADMIN_API, CONSOLE_SIGNIN, CONSOLE_SIGNOUT};
use crate::health::HealthView;
use crate::html::escape;
use crate::time::iso;
use crate::live::store::Version;

/// The ways this deployment offers to sign in to the console.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ways {
    /// Its own authorization server (`oauth`): a link to `/console/signin`.
    pub oauth: bool,
    /// The admin token (`MCP_EDGE_ADMIN_TOKEN` is set): a form that takes it.
    pub token: bool,
}

/// What an admin sees besides the servers.
pub struct AdminView {
    /// The version served, and its record (who made it, when, what changed).
    pub version: Version,
    pub health: HealthView,
}

/// Who is looking, and what the page says to them.
#[derive(Default)]
pub struct Viewer<'a> {
    pub session: Option<&'a Session>,
    pub ways: Ways,
    pub admin: Option<AdminView>,
    /// A sign-in that failed, said at the top of the page.
    pub notice: Option<&'a str>,
    /// When the page is drawn: the access rules that read the time decide what it lists.
    pub now_ms: u64,
    /// The deployment has per-user connections: a signed-in viewer gets a link to theirs.
    pub connections: bool,
}

impl Viewer<'_> {
    pub fn principal(&self) -> Option<&crate::auth::Principal> {
        self.session.map(|s| &s.principal)
    }
}

/// The account bar in the page's header.
pub fn bar(viewer: &Viewer<'_>) -> String {
    let mut out = String::from("<div class=\"account\">");
    match viewer.session {
        Some(s) => {
            let role = if s.is_admin() { " <span class=\"badge admin\">admin</span>" } else { "" };
            let mine = if viewer.connections { format!("<a id=\"my-connections\" href=\"{}\">My connections</a>", crate::paths::CONNECTIONS) } else { String::new() };
            out.push_str(&format!(
                "<span>Signed in as <strong>{}</strong>{role}</span>{mine}<form method=\"post\" action=\"{CONSOLE_SIGNOUT}\"><button class=\"quiet\">Sign out</button></form>",
                escape(s.name())
            ));
        }
        // Nobody can sign in: say how an operator turns it on (no secret is named but the
        // variable's, which the docs name too).
        None if viewer.ways == Ways::default() => out.push_str(
            "<details class=\"signin\"><summary>Admin</summary><p class=\"pop\">Live changes are off. Set the secret <code>MCP_EDGE_ADMIN_TOKEN</code> \
             (under <code>npm start</code>: <code>ADMIN_TOKEN=… npm start</code>), or configure <code>oauth</code>; then sign in here to add, \
             change and roll back tools, and to see their health.</p></details>",
        ),
        None => out.push_str(&ways(viewer.ways, false)),
    }
    out.push_str("</div>");
    out
}

/// The ways in, as links and a form; `full`: the sign-in page's larger version.
fn ways(ways: Ways, full: bool) -> String {
    let mut out = String::new();
    if ways.oauth {
        out.push_str(&format!("<a class=\"button\" href=\"{CONSOLE_SIGNIN}\">Sign in</a>"));
    }
    if ways.token {
        // In the bar, the form opens over the page.
        let pop = if full { "" } else { " pop" };
        let form = format!(
            "<form method=\"post\" action=\"{CONSOLE_SIGNIN}\" class=\"token{pop}\"><label for=\"admin-token\">Admin token</label>\
             <input id=\"admin-token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required><button>Sign in</button></form>"
        );
        if full {
            out.push_str(&form);
        } else {
            out.push_str(&format!("<details class=\"signin\"><summary>Admin sign-in</summary>{form}</details>"));
        }
    }
    out
}

/// The body of the page a `signed-in` console shows a viewer who may not see it: the ways in,
/// or who they are and why not.
pub fn gate(viewer: &Viewer<'_>, roles: &[String]) -> String {
    let mut out = String::from("<section class=\"server gate\"><h2>Sign in to see this console</h2>");
    match viewer.session {
        Some(s) => {
            let needed: Vec<String> = roles.iter().chain(std::iter::once(&ADMIN_ROLE.to_string())).map(|r| format!("<code>{}</code>", escape(r))).collect();
            out.push_str(&format!(
                "<p>You are signed in as <strong>{}</strong>, who may not see it: it needs the role {}.</p>\
                 <form method=\"post\" action=\"{CONSOLE_SIGNOUT}\"><button>Sign out</button></form>",
                escape(s.name()),
                needed.join(" or ")
            ));
        }
        None if viewer.ways == Ways::default() => {
            out.push_str("<p>This console is for signed-in people only, and no way to sign in is configured: set the secret <code>MCP_EDGE_ADMIN_TOKEN</code>, or configure <code>oauth</code>.</p>");
        }
        None => {
            out.push_str("<p>This console is for signed-in people only.</p>");
            out.push_str(&ways(viewer.ways, true));
        }
    }
    if let Some(notice) = viewer.notice {
        out.push_str(&format!("<p class=\"notice\" role=\"alert\">{}</p>", escape(notice)));
    }
    out.push_str("</section>");
    out
}

/// A notice above everything else (a failed sign-in).
pub fn notice(viewer: &Viewer<'_>) -> String {
    viewer.notice.map(|n| format!("<p class=\"notice\" role=\"alert\">{}</p>", escape(n))).unwrap_or_default()
}

/// The administration section: the version served, the editor (filled by the admin script),
/// and the health figures.
pub fn admin(view: &AdminView) -> String {
    let v = &view.version;
    let made = if v.version == 0 {
        "the bundled configuration file, as deployed".to_string()
    } else {
        // Read as the history table reads it; the attribute keeps ISO 8601.
        let at = iso(v.at_ms);
        format!("{} by <strong>{}</strong>, at <time datetime=\"{at}\">{} UTC</time>", escape(&v.summary), escape(&v.by), at.replace('T', " ").trim_end_matches('Z'))
    };
    let mut out = format!(
        "<section class=\"server admin\" id=\"admin\"><div class=\"head\"><h2>Configuration</h2><span class=\"badge\" id=\"config-version\">version {}</span></div>\
         <p class=\"muted\">Served now: {made}.</p><div id=\"admin-panel\" data-api=\"{ADMIN_API}\" data-version=\"{}\" hidden></div>\
         <noscript><p class=\"muted\">Editing needs JavaScript; the admin API (<code>{ADMIN_API}</code>) needs none.</p></noscript></section>",
        v.version, v.version
    );
    out.push_str(&super::health::section(&view.health));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;
    use crate::console::session::Via;

    fn session(name: &str, roles: &[&str]) -> Session {
        Session { principal: Principal::new("user", name, roles.iter().map(|r| r.to_string()).collect()), via: Via::Grant("g".into()), exp_ms: 1 }
    }

    #[test]
    fn the_bar_says_who_or_how_to_sign_in() {
        let alice = session("<alice>", &["admin"]);
        let bar_of = |viewer: Viewer<'_>| bar(&viewer);
        let signed = bar_of(Viewer { session: Some(&alice), ..Viewer::default() });
        assert!(signed.contains("Signed in as <strong>&lt;alice&gt;</strong> <span class=\"badge admin\">admin</span>"), "{signed}");
        assert!(signed.contains("action=\"/console/signout\""));
        let off = bar_of(Viewer::default());
        assert!(off.contains("<summary>Admin</summary>") && off.contains("Live changes are off.") && !off.contains("<form"), "{off}");
        let both = bar_of(Viewer { ways: Ways { oauth: true, token: true }, ..Viewer::default() });
        assert!(both.contains("href=\"/console/signin\"") && both.contains("name=\"token\" type=\"password\""));
        let token = bar_of(Viewer { ways: Ways { oauth: false, token: true }, ..Viewer::default() });
        assert!(!token.contains("href=") && token.contains("<summary>Admin sign-in</summary>"));
    }

    #[test]
    fn the_gate_says_why() {
        let bob = session("bob", &["guest"]);
        let roles = vec!["staff".to_string()];
        let refused = gate(&Viewer { session: Some(&bob), ..Viewer::default() }, &roles);
        assert!(refused.contains("signed in as <strong>bob</strong>, who may not see it: it needs the role <code>staff</code> or <code>admin</code>."), "{refused}");
        assert!(gate(&Viewer::default(), &roles).contains("no way to sign in is configured"));
        let failed = gate(&Viewer { ways: Ways { oauth: false, token: true }, notice: Some("That is not the admin token."), ..Viewer::default() }, &roles);
        assert!(failed.contains("name=\"token\"") && failed.contains("<p class=\"notice\" role=\"alert\">That is not the admin token.</p>"));
    }

    #[test]
    fn the_admin_section_names_the_version() {
        let view = |version: Version| admin(&AdminView { version, health: HealthView::default() });
        let bundled = view(Version::default());
        assert!(bundled.contains("version 0</span>") && bundled.contains("the bundled configuration file, as deployed"), "{bundled}");
        let live = view(Version { version: 3, at_ms: 1_790_000_000_000, by: "alice".into(), summary: "tool <x> created".into(), servers: vec![] });
        assert!(live.contains("tool &lt;x&gt; created by <strong>alice</strong>, at <time datetime=\"2026-09-21T14:13:20Z\">2026-09-21 14:13:20 UTC</time>"), "{live}");
        assert!(live.contains("data-version=\"3\""));
    }
}
