//! Which scope of a key each request needs (`integrations.md` section 4), decided once, by the
//! route's pattern and method, when the request is admitted: a request outside its key's scopes
//! is 403 `{"error": "Forbidden", "detail": "this key lacks the scope ..."}` before any handler
//! runs, so it changes nothing. The MCP tools say theirs in `mcp.rs` (`/mcp` itself needs none:
//! listing the tools reads nothing of the workspace).
//!
//! Scopes never widen a role: the role a route needs is checked right after its scope
//! (`crate::roles`), whatever the key holds.

use actix_web::http::Method;
use timetrack_domain::model::Scope;

/// The integration surface's webhooks, and everything under them.
const WEBHOOKS: &str = "/api/integrations/automation/webhooks";

/// `POST`s that only read: searches and an invoice's preview.
const READING_POSTS: &[&str] = &[
    "/api/integrations/automation/triggers/clients/find",
    "/api/integrations/automation/triggers/projects/find",
    "/api/invoices/preview",
];

/// The scope a request with `method` on the route `pattern` needs; `None` for `/mcp`, whose tools
/// each need their own, and for what needs no key at all.
pub fn required(method: &Method, pattern: &str) -> Option<Scope> {
    if pattern == crate::mcp::PATH || pattern.starts_with(&format!("{}/", crate::mcp::PATH)) {
        return None;
    }
    if pattern.starts_with("/api/keys") {
        return Some(Scope::Admin);
    }
    // A webhook's log, and an event's deliveries across one's webhooks, are the webhooks'.
    if pattern.starts_with(WEBHOOKS)
        || (pattern.starts_with("/api/integrations/automation/events/")
            && pattern.ends_with("/deliveries"))
    {
        return Some(Scope::Webhooks);
    }
    if matches!(*method, Method::GET | Method::HEAD) || READING_POSTS.contains(&pattern) {
        return Some(Scope::Read);
    }
    let under = |prefix: &str| pattern == prefix || pattern.starts_with(&format!("{prefix}/"));
    Some(if under("/api/time-entries") {
        Scope::TimeWrite
    } else if under("/api/clients") || under("/api/projects") || under("/api/tags") {
        Scope::CatalogWrite
    } else if under("/api/rates") || under("/api/invoices") {
        Scope::BillingWrite
    } else {
        // The workspace's settings, its members, and any write not named above: the strongest.
        Scope::Admin
    })
}

/// The scope an MCP tool needs: `read` for the tools that read, else the scope of the REST
/// operation it runs; `None` for a name that is no tool (the call fails as unknown).
pub fn of_tool(name: &str) -> Option<Scope> {
    Some(match name {
        "whoami" | "find_clients" | "list_projects" | "current_timer" | "list_time_entries"
        | "summary_report" | "recent_events" | "list_tags" | "list_tasks" | "list_members" => {
            Scope::Read
        }
        "start_timer" | "stop_timer" | "log_time" | "update_time_entry" | "delete_time_entry" => {
            Scope::TimeWrite
        }
        "create_client" | "create_project" | "create_tag" => Scope::CatalogWrite,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_request_needs_its_scope() {
        let cases = [
            ("GET", "/api/clients", Some(Scope::Read)),
            ("GET", "/api/reports/summary", Some(Scope::Read)),
            ("GET", "/api/members", Some(Scope::Read)),
            (
                "POST",
                "/api/integrations/automation/triggers/clients/find",
                Some(Scope::Read),
            ),
            ("POST", "/api/invoices/preview", Some(Scope::Read)),
            ("POST", "/api/time-entries/start", Some(Scope::TimeWrite)),
            ("PATCH", "/api/time-entries/{id}", Some(Scope::TimeWrite)),
            ("POST", "/api/clients", Some(Scope::CatalogWrite)),
            ("DELETE", "/api/projects/{id}", Some(Scope::CatalogWrite)),
            (
                "POST",
                "/api/projects/{id}/tasks",
                Some(Scope::CatalogWrite),
            ),
            ("POST", "/api/tags", Some(Scope::CatalogWrite)),
            ("POST", "/api/rates", Some(Scope::BillingWrite)),
            (
                "POST",
                "/api/invoices/{id}/payments",
                Some(Scope::BillingWrite),
            ),
            (
                "GET",
                "/api/integrations/automation/webhooks",
                Some(Scope::Webhooks),
            ),
            (
                "POST",
                "/api/integrations/automation/webhooks/subscribe",
                Some(Scope::Webhooks),
            ),
            (
                "GET",
                "/api/integrations/automation/events/{id}/deliveries",
                Some(Scope::Webhooks),
            ),
            (
                "GET",
                "/api/integrations/automation/events",
                Some(Scope::Read),
            ),
            ("PATCH", "/api/workspace", Some(Scope::Admin)),
            ("PATCH", "/api/members/{user_id}", Some(Scope::Admin)),
            ("GET", "/api/keys", Some(Scope::Admin)),
            ("POST", "/api/keys", Some(Scope::Admin)),
            ("DELETE", "/api/keys/{id}", Some(Scope::Admin)),
            ("POST", "/api/timesheets", Some(Scope::Admin)),
            ("POST", "/mcp", None),
            ("DELETE", "/mcp", None),
        ];
        for (method, pattern, scope) in cases {
            assert_eq!(
                required(&method.parse().unwrap(), pattern),
                scope,
                "{method} {pattern}"
            );
        }
    }
}
