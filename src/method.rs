//! The typed method table: every JSON-RPC method mcp-edge knows, parsed once from its wire name,
//! with the properties the other layers decide by. Nothing else spells a method's name: adding a
//! method here makes the compiler list every `match` that must decide about it.

use std::fmt;

macro_rules! methods {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A method mcp-edge knows, in either direction.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $($(#[$doc])* $variant,)*
        }

        impl Method {
            /// Every method, in table order.
            pub const ALL: &'static [Method] = &[$(Method::$variant,)*];

            /// The wire name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)*
                }
            }

            /// The method a wire name stands for, if mcp-edge knows it.
            pub fn parse(name: &str) -> Option<Method> {
                match name {
                    $($name => Some(Method::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

methods! {
    // Requests from the client.
    Initialize = "initialize",
    Ping = "ping",
    /// 2026-07-28: what `initialize` answered, without a session.
    ServerDiscover = "server/discover",
    ToolsList = "tools/list",
    ToolsCall = "tools/call",
    ResourcesList = "resources/list",
    ResourcesTemplatesList = "resources/templates/list",
    ResourcesRead = "resources/read",
    ResourcesSubscribe = "resources/subscribe",
    ResourcesUnsubscribe = "resources/unsubscribe",
    /// 2026-07-28: a stream of resource updates, the one stateless request that needs state.
    SubscriptionsListen = "subscriptions/listen",
    PromptsList = "prompts/list",
    PromptsGet = "prompts/get",
    CompletionComplete = "completion/complete",
    LoggingSetLevel = "logging/setLevel",
    /// 2025-11-25 Tasks: a task's state, its result (waited for), the session's tasks, a cancel.
    TasksGet = "tasks/get",
    TasksResult = "tasks/result",
    TasksList = "tasks/list",
    TasksCancel = "tasks/cancel",
    /// The 2026-07-28 Tasks extension: answers to a task's requests for input.
    TasksUpdate = "tasks/update",
    // Notifications from the client (progress goes both ways).
    Initialized = "notifications/initialized",
    Cancelled = "notifications/cancelled",
    Progress = "notifications/progress",
    RootsListChanged = "notifications/roots/list_changed",
    // Requests to the client, which an upstream asks for through the server.
    SamplingCreateMessage = "sampling/createMessage",
    ElicitationCreate = "elicitation/create",
    RootsList = "roots/list",
    // Notifications to the client.
    LogMessage = "notifications/message",
    ResourcesUpdated = "notifications/resources/updated",
    /// A live change (the admin API) changed a server's tools, resources or prompts.
    ToolsListChanged = "notifications/tools/list_changed",
    ResourcesListChanged = "notifications/resources/list_changed",
    PromptsListChanged = "notifications/prompts/list_changed",
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged",
    /// A task's status changed.
    TasksStatus = "notifications/tasks/status",
    /// 2025-11-25: the out-of-band interaction a URL-mode elicitation asked for is done.
    ElicitationComplete = "notifications/elicitation/complete",
    /// Seed 003's progress notification, sent beside `notifications/progress` when asked for.
    ProgressUpdate = "progress.update",
}

/// A server capability a method needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Prompts,
    Resources,
    Completions,
}

impl Capability {
    /// Its key in `initialize`'s `capabilities`.
    pub fn key(self) -> &'static str {
        match self {
            Capability::Prompts => "prompts",
            Capability::Resources => "resources",
            Capability::Completions => "completions",
        }
    }
}

impl Method {
    /// The server capability the method needs: a server without it does not know the method.
    pub fn capability(self) -> Option<Capability> {
        match self {
            Method::PromptsList | Method::PromptsGet => Some(Capability::Prompts),
            Method::ResourcesList | Method::ResourcesRead | Method::ResourcesTemplatesList | Method::SubscriptionsListen => Some(Capability::Resources),
            Method::CompletionComplete => Some(Capability::Completions),
            Method::Initialize
            | Method::Ping
            | Method::ServerDiscover
            | Method::ToolsList
            | Method::ToolsCall
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::LoggingSetLevel
            | Method::TasksGet
            | Method::TasksResult
            | Method::TasksList
            | Method::TasksCancel
            | Method::TasksUpdate
            | Method::TasksStatus
            | Method::Initialized
            | Method::Cancelled
            | Method::Progress
            | Method::RootsListChanged
            | Method::SamplingCreateMessage
            | Method::ElicitationCreate
            | Method::RootsList
            | Method::LogMessage
            | Method::ResourcesUpdated
            | Method::ToolsListChanged
            | Method::ResourcesListChanged
            | Method::PromptsListChanged
            | Method::SubscriptionsAcknowledged
            | Method::ElicitationComplete
            | Method::ProgressUpdate => None,
        }
    }

    /// Whether the 2026-07-28 revision has the method: it removed the ones that need a session,
    /// and its Tasks extension the two that 2025-11-25 had and it does without.
    pub fn in_stateless_revision(self) -> bool {
        // The Tasks extension removed `tasks/result` and `tasks/list`.
        !matches!(self, Method::Initialize | Method::Ping | Method::LoggingSetLevel | Method::ResourcesSubscribe | Method::ResourcesUnsubscribe | Method::TasksResult | Method::TasksList)
    }

    /// Whether only the 2026-07-28 revision has the method: sessions answer it as unknown.
    pub fn only_stateless(self) -> bool {
        matches!(self, Method::ServerDiscover | Method::SubscriptionsListen | Method::TasksUpdate)
    }

    /// Whether the method leaves a session as it was, so the Worker keeps its lease on the
    /// session when it sends such a message on to the object. Anything else (`logging/setLevel`,
    /// subscriptions, a legacy `initialize`) drops the lease.
    pub fn keeps_session(self) -> bool {
        match self {
            Method::ToolsCall
            | Method::ToolsList
            | Method::Ping
            | Method::ResourcesList
            | Method::ResourcesTemplatesList
            | Method::ResourcesRead
            | Method::PromptsList
            | Method::PromptsGet
            | Method::CompletionComplete
            // Tasks are kept beside the session, not in it.
            | Method::TasksGet
            | Method::TasksResult
            | Method::TasksList
            | Method::TasksCancel
            | Method::TasksUpdate
            | Method::Initialized
            | Method::Cancelled
            | Method::Progress
            | Method::RootsListChanged => true,
            Method::Initialize
            | Method::ServerDiscover
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::SubscriptionsListen
            | Method::LoggingSetLevel
            | Method::SamplingCreateMessage
            | Method::ElicitationCreate
            | Method::RootsList
            | Method::LogMessage
            | Method::ResourcesUpdated
            | Method::ToolsListChanged
            | Method::ResourcesListChanged
            | Method::PromptsListChanged
            | Method::SubscriptionsAcknowledged
            | Method::TasksStatus
            | Method::ElicitationComplete
            | Method::ProgressUpdate => false,
        }
    }

    /// Whether the Worker may serve the request itself from a lease on the session: the calls
    /// that make an upstream fetch, and nothing that changes the session.
    pub fn lease_serves(self) -> bool {
        matches!(self, Method::ToolsCall | Method::ResourcesRead)
    }

    /// 2026-07-28: the params field the `Mcp-Name` header mirrors.
    pub fn name_field(self) -> Option<&'static str> {
        match self {
            Method::ToolsCall | Method::PromptsGet => Some("name"),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Some("taskId"),
            Method::ResourcesRead => Some("uri"),
            _ => None,
        }
    }

    /// 2026-07-28: whether the result carries the server's cache hint (lists of what only a
    /// deployment changes, and reads).
    pub fn cacheable(self) -> bool {
        matches!(self, Method::PromptsList | Method::ResourcesList | Method::ResourcesTemplatesList | Method::ResourcesRead)
    }

    /// For a request to the client: the client capability it needs.
    pub fn client_capability(self) -> Option<&'static str> {
        match self {
            Method::SamplingCreateMessage => Some("sampling"),
            Method::ElicitationCreate => Some("elicitation"),
            Method::RootsList => Some("roots"),
            _ => None,
        }
    }
}

impl Method {
    /// The table's properties of the method in one line, as each area file of `protocol/`
    /// lists them for its methods (its `PROPERTIES`, which a test holds to this).
    #[cfg(test)]
    pub fn properties(self) -> String {
        let revisions = match (self.in_stateless_revision(), self.only_stateless()) {
            (true, false) => "every revision",
            (true, true) => "2026-07-28 only",
            (false, _) => "before 2026-07-28 only",
        };
        let capability = self.capability().map_or("none", Capability::key);
        let yes = |b: bool| if b { "yes" } else { "no" };
        format!(
            "capability {capability}; {revisions}; keeps the session: {}; lease serves it: {}; cacheable: {}; Mcp-Name: {}",
            yes(self.keeps_session()),
            yes(self.lease_serves()),
            yes(self.cacheable()),
            self.name_field().unwrap_or("none")
        )
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A method name as a message carries it: one mcp-edge knows, or the name as sent, kept for the
/// error that answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    Known(Method),
    Unknown(String),
}

impl Named {
    pub fn parse(name: &str) -> Named {
        Method::parse(name).map_or_else(|| Named::Unknown(name.to_string()), Named::Known)
    }

    pub fn known(&self) -> Option<Method> {
        match self {
            Named::Known(m) => Some(*m),
            Named::Unknown(_) => None,
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Named::Known(m) => m.name(),
            Named::Unknown(name) => name,
        }
    }
}

impl From<Method> for Named {
    fn from(method: Method) -> Named {
        Named::Known(method)
    }
}

impl PartialEq<Method> for Named {
    fn eq(&self, other: &Method) -> bool {
        *self == Named::Known(*other)
    }
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_method() {
        for &m in Method::ALL {
            assert_eq!(Method::parse(m.name()), Some(m));
        }
        assert_eq!(Method::parse("tools/cal"), None);
        assert_eq!(Named::parse("future/method"), Named::Unknown("future/method".into()));
        assert_eq!(Named::parse("ping"), Method::Ping);
    }

    #[test]
    fn the_revision_removed_what_needs_a_session() {
        let removed: Vec<&str> = Method::ALL.iter().filter(|m| !m.in_stateless_revision()).map(|m| m.name()).collect();
        assert_eq!(removed, ["initialize", "ping", "resources/subscribe", "resources/unsubscribe", "logging/setLevel", "tasks/result", "tasks/list"]);
    }

    #[test]
    fn a_lease_serves_only_calls_that_keep_the_session() {
        for &m in Method::ALL {
            assert!(!m.lease_serves() || m.keeps_session(), "{m}");
        }
    }

    /// A wire name in quotes, outside the table and outside tests, is a second place to keep
    /// in step: callers say `Method::X` instead.
    #[test]
    fn only_the_table_spells_a_wire_name() {
        fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut all = Vec::new();
        files(&root, &mut all);
        for path in all.iter().filter(|p| !p.ends_with("method.rs")) {
            let text = std::fs::read_to_string(path).unwrap();
            // A file of tests only (`#![cfg(test)]`) has no code outside tests.
            let code = if text.contains("#![cfg(test)]") { "" } else { text.split("#[cfg(test)]").next().unwrap_or_default() };
            for m in Method::ALL {
                assert!(!code.contains(&format!("\"{}\"", m.name())), "{} spells {m:?}: use Method::{m:?}", path.display());
            }
        }
    }
}
