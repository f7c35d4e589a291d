//! What the pages the Worker serves share (the sign-in pages in `oauth::page`, the status page in
//! `console`): text escaping, which every configured or client-sent string passes through, and
//! the headers that allow a page its one style block and nothing else.

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A page's headers: a CSP that allows its one inline style block (by its SHA-256) and forms
/// posted only to `form_action`; never framed, never cached, no referrer.
pub fn page_headers(style: &str, form_action: &str) -> Vec<(&'static str, String)> {
    page_headers_with(style, &[], form_action)
}

/// The same, for a page that also runs a script: `directives` (`script-src …`, `connect-src …`)
/// go between the style and the form action, each as given.
pub fn page_headers_with(style: &str, directives: &[String], form_action: &str) -> Vec<(&'static str, String)> {
    use sha2::{Digest, Sha256};
    let hash = crate::base64::encode(&Sha256::digest(style.as_bytes()));
    let more: String = directives.iter().map(|d| format!("; {d}")).collect();
    vec![
        ("Content-Type", "text/html; charset=utf-8".into()),
        ("Content-Security-Policy", format!("default-src 'none'; style-src 'sha256-{hash}'{more}; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'")),
        ("X-Frame-Options", "DENY".into()),
        ("X-Content-Type-Options", "nosniff".into()),
        ("Referrer-Policy", "no-referrer".into()),
        ("Cache-Control", "no-store".into()),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_markup_character_is_escaped() {
        assert_eq!(super::escape(r#"<a href="x" title='y'>&</a>"#), "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
    }
}
