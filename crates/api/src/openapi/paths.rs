//! The ids a route's path names, each described once for every operation that takes it (the
//! handlers read them with `crate::extract::Id`): a UUID, and a malformed one is 404 like an
//! unknown one.

use uuid::Uuid;

/// The `{id}` of a route's path.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ClientPath {
    /// Client id (a malformed one is 404, like an unknown one).
    pub id: Uuid,
}

/// The `{id}` of a route's path.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ProjectPath {
    /// Project id (a malformed one is 404, like an unknown one).
    pub id: Uuid,
}

/// The `{id}` of a route's path.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TimeEntryPath {
    /// Time entry id (a malformed one is 404, like an unknown one).
    pub id: Uuid,
}

/// The `{id}` of a route's path.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct RatePath {
    /// Rate id (a malformed one is 404, like an unknown one).
    pub id: Uuid,
}

/// The `{id}` of a route's path.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct InvoicePath {
    /// Invoice id (a malformed one is 404, like an unknown one).
    pub id: Uuid,
}

/// The `{id}` of a route's path.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct KeyPath {
    /// Key id (a malformed one is 404, like an unknown one).
    pub id: Uuid,
}

/// The `{user_id}` of a route's path.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct MemberPath {
    /// The member's user id (a malformed one is 404, like an unknown one).
    pub user_id: Uuid,
}

/// The `{id}` and `{payment_id}` of a payment's path.
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct PaymentPath {
    /// Invoice id (a malformed one is 404, like an unknown one).
    pub id: Uuid,
    /// Payment id (a malformed one is 404, like an unknown one).
    pub payment_id: Uuid,
}
