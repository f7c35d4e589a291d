//! The health figures as a section of the status page: per server, a table of its tools with
//! the last hour's calls, errors by kind, and p50 and p95 latency. For admins only: the page
//! decides who sees it; this renders what it is given, every name escaped.

use crate::health::view::ToolHealth;
use crate::health::HealthView;
use crate::html::escape;

/// The section, styled with the page's classes (`section.server`, `.badge`, `.tag`, `.muted`).
pub fn section(view: &HealthView) -> String {
    let mut out = String::from("<section class=\"server health\" id=\"health\"><div class=\"head\"><h2>Health</h2><span class=\"badge\">last hour</span></div>");
    if view.servers.is_empty() {
        out.push_str("<p class=\"muted\">No tool calls in the last hour.</p></section>");
        return out;
    }
    for server in &view.servers {
        let calls: u64 = server.tools.iter().map(|t| t.calls).sum();
        out.push_str(&format!("<h3>{} <span class=\"badge\">{calls} call{}</span></h3>", escape(&server.name), if calls == 1 { "" } else { "s" }));
        out.push_str("<table class=\"health\"><thead><tr><th>Tool</th><th>Calls</th><th>Errors</th><th>p50</th><th>p95</th></tr></thead><tbody>");
        for tool in &server.tools {
            out.push_str(&row(tool));
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("<p class=\"muted\">Latency over the calls that reached an upstream. Figures arrive within a few seconds of their calls.</p></section>");
    out
}

fn row(tool: &ToolHealth) -> String {
    let errors = if tool.errors.is_empty() {
        "<span class=\"muted\">none</span>".to_string()
    } else {
        tool.errors.iter().map(|(kind, n)| format!("<span class=\"tag\">{} × {n}</span>", escape(kind))).collect()
    };
    let ms = |v: Option<u64>| v.map_or_else(|| "<span class=\"muted\">—</span>".to_string(), |v| format!("{v} ms"));
    format!("<tr><td><code>{}</code></td><td>{}</td><td>{errors}</td><td>{}</td><td>{}</td></tr>", escape(&tool.name), tool.calls, ms(tool.p50_ms), ms(tool.p95_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::{Outcome, Window};

    #[test]
    fn a_table_per_server_with_every_name_escaped() {
        let mut w = Window::default();
        w.record("<srv>", "echo", Outcome::Ok, 12, 0);
        // 40 ms reads as 39: the middle of its bucket.
        w.record("<srv>", "echo", Outcome::Upstream(502), 40, 0);
        w.record("<srv>", "a\"b", Outcome::Validation, 0, 0);
        let html = section(&HealthView::of(&w, 0));
        assert!(html.contains("<h3>&lt;srv&gt; <span class=\"badge\">3 calls</span></h3>"), "{html}");
        assert!(html.contains("<tr><td><code>echo</code></td><td>2</td><td><span class=\"tag\">upstream 502 × 1</span></td><td>12 ms</td><td>39 ms</td></tr>"), "{html}");
        assert!(html.contains("<tr><td><code>a&quot;b</code></td><td>1</td><td><span class=\"tag\">validation × 1</span></td><td><span class=\"muted\">—</span></td>"), "{html}");
        assert!(!html.contains("<srv>"));
    }

    #[test]
    fn an_empty_hour_says_so() {
        assert!(section(&HealthView::default()).contains("No tool calls in the last hour."));
    }
}
