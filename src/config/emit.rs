//! A configuration model written out as a Rust expression, for `build.rs` to bundle. The Worker
//! then builds its configuration from code and carries no parser for the file, about a sixth of
//! its module. Every struct lists its fields here: one missed or renamed fails the build.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::file::ConfigError;
use super::model::*;

pub trait Emit {
    /// Appends a Rust expression that evaluates to `self`.
    fn emit(&self, out: &mut String);
}

/// The expression for a configuration read from a file: `Ok(model)`, or the located fault.
pub fn result(read: &Result<ConfigFile, ConfigError>) -> String {
    let mut out = String::new();
    match read {
        Ok(file) => {
            out.push_str("Ok(");
            file.emit(&mut out);
            out.push(')');
        }
        Err(e) => {
            out.push_str("Err(crate::config::ConfigError::at(");
            e.path.emit(&mut out);
            out.push_str(", ");
            e.message.emit(&mut out);
            out.push_str("))");
        }
    }
    out
}

impl Emit for String {
    fn emit(&self, out: &mut String) {
        // `Debug` of a string is a Rust string literal: quotes, backslashes and control
        // characters escaped.
        let _ = write!(out, "String::from({self:?})");
    }
}

macro_rules! literals {
    ($($t:ty),*) => {$(
        impl Emit for $t {
            fn emit(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}
literals!(bool, u32, u64, usize);

impl Emit for Value {
    fn emit(&self, out: &mut String) {
        // As JSON text, parsed by the Worker when it loads: the parser is in the module anyway.
        let _ = write!(out, "crate::config::json({:?})", self.to_string());
    }
}

impl<T: Emit> Emit for Option<T> {
    fn emit(&self, out: &mut String) {
        match self {
            None => out.push_str("None"),
            Some(v) => {
                out.push_str("Some(");
                v.emit(out);
                out.push(')');
            }
        }
    }
}

impl<T: Emit> Emit for Vec<T> {
    fn emit(&self, out: &mut String) {
        out.push_str("vec![");
        for v in self {
            v.emit(out);
            out.push_str(", ");
        }
        out.push(']');
    }
}

impl<V: Emit> Emit for BTreeMap<String, V> {
    fn emit(&self, out: &mut String) {
        out.push_str("std::collections::BTreeMap::from([");
        for (k, v) in self {
            out.push('(');
            k.emit(out);
            out.push_str(", ");
            v.emit(out);
            out.push_str("), ");
        }
        out.push_str("])");
    }
}

macro_rules! structs {
    ($($name:ident { $($field:ident),* $(,)? })*) => {$(
        impl Emit for $name {
            fn emit(&self, out: &mut String) {
                out.push_str(concat!("crate::config::model::", stringify!($name), " { "));
                $(
                    out.push_str(concat!(stringify!($field), ": "));
                    self.$field.emit(out);
                    out.push_str(", ");
                )*
                out.push('}');
            }
        }
    )*};
}

structs! {
    ConfigFile { schema, servers, log }
    CacheConfig { ttl_ms, scope }
    ServerConfig {
        route, stream_route, name, version, title, instructions, allowed_origins, allowed_hosts,
        private_upstreams, sessions, legacy_sse, stateless, notifications, limits, auth, cache,
        tools, resources, resource_templates, prompts,
    }
    SessionsConfig { idle_timeout_ms, keepalive_ms, retry_ms, lease_ms }
    NotificationsConfig { route, token_secret }
    AuthConfig { from, tokens, introspection, jwt, required_roles, authorization_servers, scopes }
    TokenConfig { secret, subject, roles }
    IntrospectionConfig { http, subject, roles, cache_ms }
    JwtConfig { jwks, issuer, audience, roles_claim, cache_ms }
    StatelessConfig { collect_timeout_ms }
    LimitsConfig {
        max_body_bytes, max_reply_bytes, tools_page_size, max_json_depth, max_header_bytes,
        max_calls_in_flight, max_sessions_per_principal, rate_limit,
    }
    RateLimitConfig { binding, period_seconds }
    ToolConfig {
        name, title, description, input_schema, output_schema, annotations, response, retry,
        result, sse, execution, pending_timeout_ms, roles, cache, forward_meta_auth, http,
    }
    ResponseConfig { pick, max_bytes, oversize }
    RetryConfig { attempts, initial_delay_ms, max_delay_ms }
    ToolSseConfig { close_after_ms }
    HttpConfig { method, url, headers, body, body_type, timeout_ms, max_redirects, redirect_hosts }
    ResourceConfig { uri, name, title, description, mime_type, text, blob, http }
    ResourceTemplateConfig { uri_template, name, title, description, mime_type, http, completions }
    PromptConfig { name, title, description, arguments, messages }
    PromptArgumentConfig { name, title, description, required, completions }
}

macro_rules! unit_enums {
    ($($name:ident),*) => {$(
        impl Emit for $name {
            fn emit(&self, out: &mut String) {
                // A unit variant's `Debug` is its name.
                let _ = write!(out, concat!("crate::config::model::", stringify!($name), "::{:?}"), self);
            }
        }
    )*};
}
unit_enums!(CacheScope, RequestLogging, ExecutionConfig, OversizeConfig, ResultModeConfig, BodyTypeConfig);
