//! Which role a request needs, decided once, by the route's pattern and method, when the request
//! is admitted (ADR 0026): a member's request that only owners and admins may make is 403
//! `Forbidden` before any handler runs, so before any field of its body is checked: it changes
//! nothing, and a member never learns what the body would have been refused for.
//!
//! The rules themselves are the domain's, and its services check them again on every call
//! ([`Principal::require_admin`], [`WorkspaceService::require_catalog`]): this table only decides
//! *when* the API asks, so that the handlers hold no role checks and a new route under a guarded
//! prefix is guarded without a line of its own. The MCP tools call the services through the
//! handlers, which refuse the same way.
//!
//! [`Principal::require_admin`]: timetrack_domain::model::Principal::require_admin
//! [`WorkspaceService::require_catalog`]: timetrack_domain::services::WorkspaceService::require_catalog

use actix_web::http::Method;

/// What a request must be made by, besides a key with the scope of its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// An owner or an admin.
    Admin,
    /// Someone who may change the catalog: an owner or an admin, or a member when the
    /// workspace's `members_manage_catalog` allows it.
    Catalog,
}

/// The role a request with `method` on the route `pattern` needs; `None` when every member may
/// make it (the service may still refuse what it is about, such as another member's entry).
pub fn required(method: &Method, pattern: &str) -> Option<Needs> {
    let under = |prefix: &str| pattern == prefix || pattern.starts_with(&format!("{prefix}/"));
    let reads = matches!(*method, Method::GET | Method::HEAD);
    if under("/api/invoices") {
        // Invoices are billing's: reading one is as much an owner's or an admin's as issuing it.
        return Some(Needs::Admin);
    }
    if reads {
        return None;
    }
    if under("/api/rates") || under("/api/members") || under("/api/workspace") {
        Some(Needs::Admin)
    } else if under("/api/clients") || under("/api/projects") || under("/api/tags") {
        Some(Needs::Catalog)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billing_settings_and_members_need_an_admin_and_the_catalog_its_rule() {
        let cases = [
            (Method::GET, "/api/invoices", Some(Needs::Admin)),
            (Method::GET, "/api/invoices/{id}", Some(Needs::Admin)),
            (Method::POST, "/api/invoices/preview", Some(Needs::Admin)),
            (
                Method::DELETE,
                "/api/invoices/{id}/payments/{payment_id}",
                Some(Needs::Admin),
            ),
            (Method::GET, "/api/rates", None),
            (Method::POST, "/api/rates", Some(Needs::Admin)),
            (Method::DELETE, "/api/rates/{id}", Some(Needs::Admin)),
            (Method::PATCH, "/api/members/{user_id}", Some(Needs::Admin)),
            (Method::GET, "/api/members", None),
            (Method::PATCH, "/api/workspace", Some(Needs::Admin)),
            (Method::GET, "/api/workspace", None),
            (Method::POST, "/api/clients", Some(Needs::Catalog)),
            (Method::PATCH, "/api/clients/{id}", Some(Needs::Catalog)),
            (Method::DELETE, "/api/projects/{id}", Some(Needs::Catalog)),
            (
                Method::POST,
                "/api/projects/{id}/tasks",
                Some(Needs::Catalog),
            ),
            (Method::POST, "/api/tags", Some(Needs::Catalog)),
            (Method::GET, "/api/clients", None),
            (Method::POST, "/api/time-entries", None),
            (Method::POST, "/api/time-entries/start", None),
            (Method::POST, "/api/integrations/automation/webhooks", None),
            (Method::POST, "/api/keys", None),
        ];
        for (method, pattern, needs) in cases {
            assert_eq!(required(&method, pattern), needs, "{method} {pattern}");
        }
    }
}
