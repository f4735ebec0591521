//! The ids a route's path names, each written once: the segment it stands in, the resource a
//! malformed one is not found as (the handlers read it with [`crate::extract::Id`]: 404, like an
//! unknown one), and its description in the OpenAPI document (a parameter struct per id, for the
//! operations' `params(...)`).

use uuid::Uuid;

use crate::extract::PathId;

/// For each UUID id of the domain: its [`PathId`] and the parameter struct that describes it.
macro_rules! path_ids {
    ($($id:ty => $params:ident { $segment:ident }, $resource:literal, $doc:literal;)*) => {$(
        impl PathId for $id {
            const SEGMENT: &'static str = stringify!($segment);
            const RESOURCE: &'static str = $resource;

            fn parse(raw: &str) -> Option<Self> {
                raw.parse().ok()
            }
        }

        #[doc = concat!("The `{", stringify!($segment), "}` of a route's path.")]
        #[derive(Debug, utoipa::IntoParams)]
        #[into_params(parameter_in = Path)]
        pub struct $params {
            #[doc = $doc]
            pub $segment: Uuid,
        }
    )*};
}

path_ids! {
    timetrack_domain::ids::ClientId => ClientPath { id }, "client",
        "Client id (a malformed one is 404, like an unknown one).";
    timetrack_domain::ids::ProjectId => ProjectPath { id }, "project",
        "Project id (a malformed one is 404, like an unknown one).";
    timetrack_domain::ids::TimeEntryId => TimeEntryPath { id }, "time entry",
        "Time entry id (a malformed one is 404, like an unknown one).";
    timetrack_domain::ids::RateId => RatePath { id }, "rate",
        "Rate id (a malformed one is 404, like an unknown one).";
    timetrack_domain::ids::InvoiceId => InvoicePath { id }, "invoice",
        "Invoice id (a malformed one is 404, like an unknown one).";
    timetrack_domain::ids::PaymentId => PaymentPath { payment_id }, "payment",
        "Payment id (a malformed one is 404, like an unknown one).";
    timetrack_domain::ids::ApiKeyId => KeyPath { id }, "api key",
        "Key id (a malformed one is 404, like an unknown one).";
    timetrack_domain::ids::UserId => MemberPath { user_id }, "member",
        "The member's user id (a malformed one is 404, like an unknown one).";
}
