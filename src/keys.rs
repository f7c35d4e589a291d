//! The deployment's own keys by name (what signs its tokens, callbacks and request states; the
//! admin token) and how long each must be. A floor of its own: the authorization server, the
//! signatures and the catalog's lists of secrets (`catalog::secrets`) all name them.

/// Signs the authorization server's tokens, sealed forms and cookies.
pub const OAUTH_SIGNING_KEY: &str = "OAUTH_SIGNING_KEY";
/// Signs callback URLs and 2026-07-28 request states.
pub const CALLBACK_SIGNING_KEY: &str = "CALLBACK_SIGNING_KEY";
/// Lets automation use the admin API.
pub const ADMIN_TOKEN: &str = "MCP_EDGE_ADMIN_TOKEN";
/// Encrypts the connections' stored tokens (AES-256-GCM); absent, a key derived from the
/// authorization server's signing key (or its generated one) with a purpose tag.
pub const CONNECTIONS_KEY: &str = "CONNECTIONS_KEY";
/// The key before the last rotation: tokens sealed with it are still read, and sealed anew.
pub const CONNECTIONS_KEY_PREVIOUS: &str = "CONNECTIONS_KEY_PREVIOUS";

/// The keys the deployment itself reads, whatever its configuration names.
pub const OWN_KEYS: [&str; 5] = [OAUTH_SIGNING_KEY, CALLBACK_SIGNING_KEY, ADMIN_TOKEN, CONNECTIONS_KEY, CONNECTIONS_KEY_PREVIOUS];

/// The shortest value a key may have: 32 characters of a random value are at least 128 bits
/// even as hex, beyond any offline guess at the signatures and tokens clients are handed.
pub const MIN_KEY_CHARS: usize = 32;

/// Why the value of the key `name` may not be used, if it may not: the message the deployment
/// answers with until the key is fixed. An empty value is no key at all, not a short one.
pub fn too_short(name: &str, value: &str) -> Option<String> {
    let chars = value.chars().count();
    (chars > 0 && chars < MIN_KEY_CHARS).then(|| {
        format!("the secret {name} is {chars} characters long; it must have at least {MIN_KEY_CHARS} (for example: openssl rand -hex 32)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_a_minimum_length() {
        assert_eq!(too_short(ADMIN_TOKEN, ""), None, "unset is not short");
        assert_eq!(too_short(ADMIN_TOKEN, &"k".repeat(32)), None);
        assert_eq!(
            too_short(ADMIN_TOKEN, "hunter2").as_deref(),
            Some("the secret MCP_EDGE_ADMIN_TOKEN is 7 characters long; it must have at least 32 (for example: openssl rand -hex 32)")
        );
    }
}
