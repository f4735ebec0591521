//! Schemas of request fields that say exactly what the validation accepts: lengths, formats,
//! patterns and enums taken from the rules the domain applies, for `#[schema(schema_with = ...)]`.
//!
//! The patterns read the same in ECMA-262 (what JSON Schema names) and in the other engines tools
//! generate and check values with (Python's `re` among them): `\uXXXX` escapes, classes, groups
//! and lookaheads only, no `\s` or `\w`, whose meaning differs between engines.

use std::sync::LazyLock;

use serde_json::Value;
use timetrack_domain::model::EventType;
use timetrack_domain::model::client::{MAX_ADDRESS_CHARS, MAX_NOTE_CHARS, MAX_PHONE_CHARS};
use timetrack_domain::model::page::MAX_PAGE_SIZE;
use timetrack_domain::net::MAX_URL_LEN;
use timetrack_domain::services::clients::MAX_SEARCH_RESULTS;
use timetrack_domain::values::{Currency, MAX_NAME_CHARS};
use utoipa::openapi::schema::{
    ArrayBuilder, KnownFormat, Object, ObjectBuilder, OneOfBuilder, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Array, Schema};

/// The characters `str::trim` removes (Unicode `White_Space`), as the inside of a regex class.
const WHITESPACE: &str =
    r"\t\n\u000B\u000C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";

/// Text without NUL, which no stored text may hold.
pub const NO_NUL: &str = r"^[^\u0000]*$";

/// Longest e-mail address (after trimming), in characters.
pub const MAX_EMAIL_CHARS: usize = 254;

/// Longest webhook description, in characters.
pub const MAX_WEBHOOK_DESCRIPTION_CHARS: usize =
    timetrack_domain::services::webhooks::MAX_DESCRIPTION_CHARS;

/// Longest time-entry description (after trimming), in characters.
pub const MAX_ENTRY_DESCRIPTION_CHARS: usize =
    timetrack_domain::services::time_entries::MAX_DESCRIPTION_CHARS;

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

fn nullable(types: Type) -> SchemaType {
    SchemaType::from_iter([types, Type::Null])
}

/// A name: something other than whitespace, no NUL, at most 255 characters once trimmed.
fn name_builder() -> ObjectBuilder {
    string()
        .min_length(Some(1))
        .max_length(Some(MAX_NAME_CHARS))
        .pattern(Some(format!(
            r"^[^\u0000]*[^{WHITESPACE}\u0000][^\u0000]*$"
        )))
        .description(Some(
            "1 to 255 characters once surrounding whitespace is trimmed; not blank, no NUL",
        ))
}

/// A required name (creation).
pub fn name() -> Object {
    name_builder().build()
}

/// A name that may be null, meaning "unchanged" (PATCH).
pub fn optional_name() -> Object {
    name_builder().schema_type(nullable(Type::String)).build()
}

/// Optional text of at most `max` characters, without NUL; null, empty or blank leaves it unset.
fn optional_text(max: usize, what: &str) -> Object {
    string()
        .schema_type(nullable(Type::String))
        .max_length(Some(max))
        .pattern(Some(NO_NUL))
        .description(Some(format!(
            "{what}: at most {max} characters once trimmed, no NUL; null or blank means none"
        )))
        .build()
}

/// A client's phone number.
pub fn phone() -> Object {
    optional_text(MAX_PHONE_CHARS, "Phone number with country code")
}

/// A client's address.
pub fn address() -> Object {
    optional_text(MAX_ADDRESS_CHARS, "Business or mailing address")
}

/// A client's note.
pub fn note() -> Object {
    optional_text(MAX_NOTE_CHARS, "Free-text notes")
}

/// A time entry's description (null means empty on creation, unchanged on PATCH).
pub fn entry_description() -> Object {
    optional_text(MAX_ENTRY_DESCRIPTION_CHARS, "What is being done")
}

/// A webhook's description: not trimmed, so the limit counts every character.
pub fn webhook_description() -> Object {
    string()
        .schema_type(nullable(Type::String))
        .max_length(Some(MAX_WEBHOOK_DESCRIPTION_CHARS))
        .pattern(Some(NO_NUL))
        .description(Some(
            "Optional label, at most 255 characters, no NUL; stored and shown in listings",
        ))
        .build()
}

/// An e-mail address by the HTML5 rules (local part at most 64 characters), surrounding
/// whitespace ignored; null, empty or blank means none.
pub fn email() -> Object {
    let label = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?";
    string()
        .schema_type(nullable(Type::String))
        .max_length(Some(MAX_EMAIL_CHARS))
        .pattern(Some(format!(
            r"^[{WHITESPACE}]*(?:[a-zA-Z0-9.!#$%&'*+/=?^_`{{|}}~-]{{1,64}}@{label}(?:\.{label})*)?[{WHITESPACE}]*$"
        )))
        .description(Some(
            "E-mail address (HTML5 rules), at most 254 characters; null or blank means none",
        ))
        .build()
}

/// Every code `Currency::parse` accepts: the active ISO 4217 codes, upper case.
static CURRENCIES: LazyLock<Vec<String>> = LazyLock::new(|| {
    let letters = || b'A'..=b'Z';
    letters()
        .flat_map(|a| letters().flat_map(move |b| letters().map(move |c| [a, b, c])))
        .map(|code| String::from_utf8_lossy(&code).into_owned())
        .filter(|code| Currency::parse(code).is_ok())
        .collect()
});

/// A currency (ISO 4217); null means the default (the workspace's on creation, unchanged on
/// PATCH).
pub fn currency() -> Object {
    enumeration(
        CURRENCIES.iter().map(String::as_str),
        "ISO 4217 code, upper case; null for the default",
    )
}

/// A rate's currency: required, never null.
pub fn rate_currency() -> Object {
    string()
        .enum_values(Some(
            CURRENCIES.iter().map(String::as_str).collect::<Vec<_>>(),
        ))
        .description(Some("ISO 4217 code, upper case"))
        .build()
}

/// A nullable string enum.
fn enumeration<'a>(values: impl IntoIterator<Item = &'a str>, description: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .enum_values(Some(
            values
                .into_iter()
                .map(Value::from)
                .chain([Value::Null])
                .collect::<Vec<_>>(),
        ))
        .description(Some(description))
        .build()
}

/// An IANA time-zone name; null keeps the current one.
pub fn timezone() -> Object {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .min_length(Some(1))
        .max_length(Some(64))
        .pattern(Some(r"^[A-Za-z][A-Za-z0-9_+/-]*$"))
        .description(Some(
            "An IANA time zone name known to the tz database (e.g. Europe/Paris)",
        ))
        .build()
}

/// A membership's role.
pub fn role() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["owner", "admin", "member"]))
        .description(Some("owner, admin or member"))
        .build()
}

/// A rate's kind.
pub fn rate_kind() -> Object {
    // Required and never null in a body (a rate has a kind); absent from a query, no filter.
    string()
        .enum_values(Some(["billable", "cost"]))
        .description(Some("billable or cost"))
        .build()
}

/// A rate's scope.
pub fn rate_scope() -> Object {
    // Required and never null (a rate has a scope), unlike the other enumerations.
    string()
        .enum_values(Some(timetrack_domain::model::RateTarget::LEVELS.to_vec()))
        .description(Some(
            "workspace, member (user_id), client (client_id), project (project_id), task \
             (task_id) or project_member (project_id and user_id)",
        ))
        .build()
}

/// A member's user id in a body.
pub fn member_ref() -> Schema {
    reference("A member of the workspace (its user id), or null; any other id is 400")
}

/// An hourly rate in minor units.
pub fn hourly_minor() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(0))
        .maximum(Some(timetrack_domain::model::MAX_HOURLY_MINOR))
        .description(Some(
            "Minor units of the currency an hour (ISO 4217 exponent: USD 2, JPY 0, BHD 3)",
        ))
        .build()
}

/// A calendar date.
pub fn date() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)))
        .description(Some("YYYY-MM-DD"))
        .build()
}

/// A rounding direction; null keeps the current one.
pub fn rounding_mode() -> Object {
    enumeration(["up", "down", "nearest"], "up, down or nearest")
}

/// An invoice number pattern; null keeps the current one.
pub fn invoice_number_pattern() -> Object {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .min_length(Some(1))
        .max_length(Some(
            timetrack_domain::model::InvoiceNumberPattern::MAX_CHARS,
        ))
        // The domain's grammar (`InvoiceNumberPattern::parse`): text without braces or control
        // characters, the three date tokens, and one `{SEQ:n}` (n as Rust reads a number: an
        // optional `+` and leading zeros).
        .pattern(Some(concat!(
            r"^(?:[^{}\u0000-\u001F\u007F-\u009F]|\{(?:YYYY|YY|MM)\})*",
            r"\{SEQ:\+?0*(?:[1-9]|1[0-2])\}",
            r"(?:[^{}\u0000-\u001F\u007F-\u009F]|\{(?:YYYY|YY|MM)\})*$"
        )))
        .description(Some(
            "Text with {YYYY}, {YY}, {MM} and exactly one {SEQ:n} (n from 1 to 12), no control \
             characters, at most 64 characters",
        ))
        .build()
}

/// A calendar date, or null to clear it.
pub fn nullable_date() -> Object {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)))
        .description(Some("YYYY-MM-DD, or null for none"))
        .build()
}

/// A client's type; null means the default (`company` on creation, unchanged on PATCH).
pub fn client_type() -> Object {
    enumeration(["company", "individual"], "company or individual")
}

/// A client's status; null means the default (`active` on creation, unchanged on PATCH).
pub fn client_status() -> Object {
    enumeration(["active", "inactive"], "active or inactive")
}

/// `schema` or null, spelled `oneOf` rather than with a list of types: a `format` beside
/// `type: [string, null]` is easily read as applying to null too, or dropped (Schemathesis' coverage
/// phase then sends `""` as a valid UUID).
fn or_null(schema: Object) -> Schema {
    Schema::OneOf(
        OneOfBuilder::new()
            .item(schema)
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .build(),
    )
}

/// The id of a resource of the caller's workspace, or null for none.
fn reference(description: &str) -> Schema {
    let mut schema = or_null(uuid());
    if let Schema::OneOf(one_of) = &mut schema {
        one_of.description = Some(description.to_owned());
    }
    schema
}

/// A project's client.
pub fn client_ref() -> Schema {
    reference("A client of the workspace, or null for none; any other id is 400")
}

/// An entry's project.
pub fn project_ref() -> Schema {
    reference("A project of the workspace, or null for none; any other id is 400")
}

/// An entry's task.
pub fn task_ref() -> Schema {
    reference(
        "A task of the workspace (of `project_id` when both are given; it implies its project), \
         or null for none; any other id is 400",
    )
}

/// A UUID.
fn uuid() -> Object {
    string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
        .build()
}

/// The `user_id` filter of the entry list.
pub fn member() -> Object {
    string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
        .description(Some("Entries of this member only"))
        .build()
}

/// The workspace of a client search.
pub fn search_workspace() -> Object {
    string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
        .description(Some("The key's workspace; another one is 403"))
        .build()
}

fn uuid_array() -> ArrayBuilder {
    ArrayBuilder::new().items(uuid())
}

/// Tag ids: an array (not null) of UUIDs.
pub fn tag_ids() -> Array {
    uuid_array()
        .description(Some(
            "Tags of the workspace (duplicates collapse); any other id is 400",
        ))
        .build()
}

/// Tag ids that may be null, meaning "unchanged" (PATCH).
pub fn optional_tag_ids() -> Array {
    uuid_array()
        .schema_type(nullable(Type::Array))
        .description(Some(
            "Tags of the workspace, replacing the old ones (any other id is 400); null leaves \
             them unchanged",
        ))
        .build()
}

/// An RFC 3339 timestamp.
fn date_time(description: &str) -> Object {
    string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .description(Some(description))
        .build()
}

/// Subscription filters (`events.md` section 3).
pub fn filters() -> Object {
    let ids = |what: &str| {
        ArrayBuilder::new()
            .min_items(Some(1))
            .max_items(Some(timetrack_domain::model::webhook::MAX_FILTER_IDS))
            .items(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))),
            )
            .description(Some(what))
            .build()
    };
    ObjectBuilder::new()
        .schema_type(nullable(Type::Object))
        .property(
            "project_ids",
            ids("Time entries of these projects of the workspace (time-entry events only)"),
        )
        .property(
            "client_ids",
            ids("Clients with these ids, and time entries of their projects"),
        )
        .property(
            "user_ids",
            ids("Time entries of these members of the workspace (time-entry events only)"),
        )
        .property(
            "billable",
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .description(Some(
                    "Billable (or not) time entries (time-entry events only)",
                )),
        )
        .additional_properties(Some(
            utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
        ))
        .description(Some(
            "An event is delivered only when every given filter matches; an event without a \
             value for a filter does not match it; `{}` or null: no filter. A filter that cannot \
             match a listed event type, an id outside the workspace, or an unknown filter is 400 \
             `Invalid filter: ...`",
        ))
        .build()
}

/// A webhook's custom headers: `{name: value}`, as `CustomHeaders::parse` checks them.
pub fn webhook_headers() -> Object {
    use timetrack_domain::model::custom_headers::{MAX_HEADERS, MAX_VALUE_BYTES};
    ObjectBuilder::new()
        .schema_type(nullable(Type::Object))
        .max_properties(Some(MAX_HEADERS))
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(MAX_VALUE_BYTES))
                .pattern(Some(r"^(?:[^\u0000-\u0008\u000A-\u001F\u007F-\u009F \t](?:[^\u0000-\u0008\u000A-\u001F\u007F-\u009F]*[^\u0000-\u0008\u000A-\u001F\u007F-\u009F \t])?)?$")),
        ))
        .description(Some(format!(
            "Headers sent with every delivery (a test's too), at most {MAX_HEADERS}: names are \
             HTTP tokens of at most 256 bytes, each once in any case; values at most \
             {MAX_VALUE_BYTES} bytes (UTF-8), no control characters but tab, no leading or \
             trailing whitespace. `webhook-*`, `x-webhook-*`, `content-*`, `host` and hop-by-hop \
             names are refused; a `User-Agent` replaces the default one. Stored sealed and shown \
             only masked. Anything else is 400 `Invalid headers`; `{{}}` or null: none"
        )))
        .build()
}

/// An event's body as delivered: one of the catalog's payloads, each a component of this
/// document (which one goes with which type, `GET .../event-types` says). `anyOf` rather than
/// `oneOf`: two payloads may both accept a body, and the body is still exactly one of them.
pub fn event_payload() -> Schema {
    let payloads = [
        "TimeEntryPayload",
        "ClientPayload",
        "ProjectPayload",
        "InvoicePayload",
        "WebhookNoticePayload",
        "WebhookTestPayload",
    ];
    let any = payloads
        .into_iter()
        .fold(utoipa::openapi::schema::AnyOfBuilder::new(), |any, name| {
            any.item(utoipa::openapi::Ref::from_schema_name(name))
        });
    Schema::AnyOf(
        any.description(Some(
            "The delivered body, byte for byte: the payload of its type (the catalog, \
             `GET .../event-types`, gives each type's schema and sample)",
        ))
        .build(),
    )
}

/// The start of a replay's window.
pub fn replay_since() -> Object {
    date_time(
        "Replay the events recorded at or after this time (RFC 3339); older than the retained \
         events: 400",
    )
}

/// The end of a replay's window.
pub fn replay_until() -> Object {
    date_time("...and before this time (RFC 3339); now when absent; must be after `since`")
}

/// The `replay_since` of an enable.
pub fn enable_replay_since() -> Object {
    ObjectBuilder::new()
        .schema_type(nullable(Type::String))
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .description(Some(
            "Also replay what the webhook missed (failed, cancelled or never queued) since this \
             time (RFC 3339); absent or null: no replay",
        ))
        .build()
}

/// The `from` filter of the entry list.
pub fn range_from() -> Object {
    date_time("Entries starting at or after this time (RFC 3339)")
}

/// The `to` filter of the entry list.
pub fn range_to() -> Object {
    date_time("Entries starting before this time (RFC 3339); must be after `from` (else 400)")
}

/// The start of a manual entry.
pub fn manual_start() -> Object {
    date_time("Start (RFC 3339), truncated to whole seconds")
}

/// The end of a manual entry.
pub fn manual_end() -> Object {
    date_time("End (RFC 3339), truncated to whole seconds; must be after `start` (else 400)")
}

/// A new start of an entry (PATCH).
pub fn new_start() -> Schema {
    or_null(date_time(
        "New start (RFC 3339); null leaves it unchanged. A running timer cannot start in the \
         future, a finished entry must still end after it (else 400)",
    ))
}

/// A new end of a finished entry (PATCH).
pub fn new_end() -> Schema {
    or_null(date_time(
        "New end (RFC 3339) of a finished entry; null leaves it unchanged. It must be after the \
         start, and a running timer has none (else 400)",
    ))
}

/// A boolean that may be null (the default: false on creation, unchanged on PATCH).
pub fn optional_bool() -> Object {
    ObjectBuilder::new()
        .schema_type(nullable(Type::Boolean))
        .description(Some(
            "Billable; null or absent means false on creation, unchanged on PATCH",
        ))
        .build()
}

/// The find request's name: 1 to 255 characters, matched as a literal substring (not trimmed).
pub fn search_name() -> Object {
    string()
        .min_length(Some(1))
        .max_length(Some(MAX_NAME_CHARS))
        .description(Some(
            "1 to 255 characters; case-insensitive literal substring of the name",
        ))
        .build()
}

/// The find request's optional result limit.
pub fn search_limit() -> Object {
    ObjectBuilder::new()
        .schema_type(nullable(Type::Integer))
        .minimum(Some(1))
        .maximum(Some(MAX_SEARCH_RESULTS))
        .description(Some("1 to 100; 100 when null or absent"))
        .build()
}

/// A page size: 1 to 200.
pub fn page_limit() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(1))
        .maximum(Some(MAX_PAGE_SIZE))
        .description(Some("Items per page, 1 to 200; 50 when absent"))
        .build()
}

/// `?q=` of the catalog's lists.
pub fn list_q() -> Object {
    string()
        .max_length(Some(timetrack_domain::model::page::MAX_QUERY_CHARS))
        .pattern(Some(NO_NUL))
        .description(Some(
            "Only items whose name contains this text, ignoring case (as the client search \
             matches; members: the name or the e-mail). Blank means every item",
        ))
        .build()
}

/// `?updated_since=` of the catalog's lists.
pub fn updated_since() -> Object {
    string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .description(Some(
            "Only items created or changed at or after this instant (RFC 3339, inclusive); the \
             order stays the list's own",
        ))
        .build()
}

/// A page cursor: the opaque `next_cursor` of the previous page.
pub fn page_cursor() -> Object {
    string()
        .pattern(Some("^[A-Za-z0-9_-]*$"))
        .description(Some(
            "The `next_cursor` of the previous page (opaque; URL-safe base64 without padding). \
             Empty means the first page; a value that does not decode as a cursor is 400 \
             `invalid cursor`",
        ))
        .build()
}

/// A webhook URL as the service reads it (WHATWG URL parsing, then its own rules): `https://`
/// (any case), a host name of ASCII labels (empty labels allowed) whose last label is not a number
/// (else it would be read as an IPv4 address), neither `localhost` nor under it, no `xn--` label,
/// an optional port up to 65535, then anything without whitespace, control characters or
/// backslashes (parsers disagree on them); surrounding whitespace is ignored.
///
/// The service also takes IP literals of public addresses and internationalised host names; the
/// pattern leaves those out rather than describe IDNA. What no schema can say: a host that
/// resolves to a blocked address is refused too (SSRF guard).
pub fn webhook_url() -> Object {
    // The characters of a host label: ASCII other than the WHATWG forbidden domain code points.
    let host = r#"-A-Za-z0-9!"$&'()*+,;=_`{}~"#;
    let end = format!(r"(?:[:/?#{WHITESPACE}]|$)");
    let label = format!("(?![Xx][Nn]--)[{host}]+");
    let number = "(?:[0-9]+|0[Xx][0-9A-Fa-f]*)";
    let localhost = "[Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]";
    let port =
        "(?:[0-9]{0,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
    // No `format: uri`: WHATWG parsing admits characters RFC 3986 does not (a backtick, `^`,
    // non-ASCII text in the path); the pattern is the whole rule.
    string()
        .max_length(Some(MAX_URL_LEN))
        .pattern(Some(format!(
            r"^[{WHITESPACE}]*[Hh][Tt][Tt][Pp][Ss]://(?!(?:[{host}.]*\.)?{localhost}\.?{end})(?:(?:{label})?\.)*(?!{number}\.?{end}){label}\.?(?::{port})?(?:[/?#][^{WHITESPACE}\\\u0000-\u001F\u007F-\u009F]*)?[{WHITESPACE}]*$"
        )))
        .description(Some(
            "Absolute https URL with a host name (no user:password, no backslash), at most 2048 \
             bytes once trimmed; a host that is, or resolves to, a loopback, private or otherwise \
             non-public address is refused with 400 `Invalid URL format`",
        ))
        .build()
}

/// The events of a subscription: at least one of the known names; duplicates collapse.
pub fn events() -> Array {
    ArrayBuilder::new()
        .min_items(Some(1))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(EventType::subscribable().map(EventType::as_str))),
        )
        .description(Some(
            "At least one of TIMER_STARTED, TIMER_STOPPED, TIME_ENTRY_CREATED, CLIENT_CREATED, \
             WEBHOOK_FAILING, WEBHOOK_DISABLED, WEBHOOK_RECOVERED (WEBHOOK_TEST is not \
             subscribable); duplicates collapse. Missing, not an array, or empty: 400 `URL and \
             events array are required`",
        ))
        .build()
}

/// The type a test is sent as: any of the catalog's types; empty or null for `WEBHOOK_TEST`.
pub fn test_event_type() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(
            EventType::ALL
                .into_iter()
                .map(|t| Value::from(t.as_str()))
                .chain([Value::from(""), Value::Null]),
        ))
        .description(Some(
            "Send the test as this type of the catalog: its body is the type's `sample` from \
             `GET .../event-types`, exactly, and `X-Webhook-Event` names the type; the \
             delivery's kind is `test`. Absent, null, empty or `WEBHOOK_TEST`: a `WEBHOOK_TEST` \
             naming the webhook. Another name: 400 `Invalid event type: X`; an invoice type \
             from a member: 403",
        ))
        .build()
}

/// A percentage: 0 to 100 with at most 3 decimals, as a number or a decimal string.
pub fn percent() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([
            Type::String,
            Type::Number,
            Type::Null,
        ]))
        .pattern(Some(r"^(100(\.0{1,3})?|[0-9]{1,2}(\.[0-9]{1,3})?)$"))
        .minimum(Some(0))
        .maximum(Some(100))
        .description(Some(
            "0 to 100 with at most 3 decimals, a number or a decimal string; 0 when absent",
        ))
        .build()
}

/// A quantity of an extra line: 0 to 1,000,000 with at most 3 decimals.
pub fn quantity() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Number]))
        .pattern(Some(r"^[0-9]{1,7}(\.[0-9]{1,3})?$"))
        .minimum(Some(0))
        .maximum(Some(1_000_000))
        .description(Some(
            "0 to 1000000 with at most 3 decimals, a number or a decimal string",
        ))
        .build()
}

/// Minor units of an extra line's unit price: 0 to 10^9.
pub fn unit_price_minor() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(0))
        .maximum(Some(timetrack_domain::model::invoice::MAX_UNIT_PRICE_MINOR))
        .description(Some("Minor units of the invoice's currency per unit"))
        .build()
}

/// A payment's amount: 1 to the invoice's balance, in minor units.
pub fn payment_amount() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(1))
        .description(Some("Minor units, 1 to the invoice's balance"))
        .build()
}

/// Free text of an invoice of at most `max` characters, no NUL; blank is none.
pub fn invoice_text(max: usize) -> Object {
    string()
        .max_length(Some(max))
        .pattern(Some(NO_NUL))
        .description(Some(format!(
            "At most {max} characters, no NUL; blank is none"
        )))
        .build()
}

/// Invoice notes (null clears them on PATCH).
pub fn invoice_notes() -> Object {
    invoice_text(timetrack_domain::model::invoice::MAX_NOTES_CHARS)
}

/// The description of an extra line.
pub fn line_description() -> Object {
    string()
        .min_length(Some(1))
        .max_length(Some(
            timetrack_domain::model::invoice::MAX_LINE_DESCRIPTION_CHARS,
        ))
        .pattern(Some(NO_NUL))
        .description(Some("1 to 500 characters once trimmed, no NUL"))
        .build()
}

/// A void's reason.
pub fn void_reason() -> Object {
    let max = timetrack_domain::model::invoice::MAX_REASON_CHARS;
    string()
        .max_length(Some(max))
        .min_length(Some(1))
        // Something besides white space, and no NUL anywhere.
        .pattern(Some(r"^[^\u0000]*[^\s\u0000][^\u0000]*$"))
        .description(Some(format!(
            "Required: at most {max} characters with something besides white space, no NUL"
        )))
        .build()
}

/// A payment's note.
pub fn payment_note() -> Object {
    invoice_text(timetrack_domain::model::invoice::MAX_PAYMENT_NOTE_CHARS)
}

/// The groupings of invoice lines.
pub fn line_groups() -> Array {
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(
                    ["project", "task", "user", "day"]
                        .into_iter()
                        .map(Value::from)
                        .collect::<Vec<_>>(),
                )),
        )
        .max_items(Some(4))
        .unique_items(true)
        .description(Some(
            "In order, each at most once; none: one line per unit price",
        ))
        .build()
}

/// The project ids an invoice is limited to.
pub fn project_ids() -> Array {
    ArrayBuilder::new()
        .items(uuid())
        .description(Some("Only these projects of the client; none: all"))
        .build()
}

/// An invoice status filter.
pub fn invoice_status() -> Object {
    enumeration(["draft", "issued", "void"], "draft, issued or void")
}

/// A payment status filter.
pub fn payment_status() -> Object {
    enumeration(
        ["unpaid", "partially_paid", "paid", "overdue"],
        "unpaid, partially_paid, paid or overdue",
    )
}

/// A client id filter.
pub fn client_filter() -> Object {
    string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
        .description(Some("Invoices of this client only"))
        .build()
}

/// The format of an invoice's answer.
pub fn invoice_format() -> Object {
    enumeration(["json", "pdf"], "json (default) or pdf")
}

/// A delivery's status, as the delivery log filters by it (empty: no filter).
pub fn delivery_status() -> Object {
    string()
        .enum_values(Some(["PENDING", "DELIVERED", "FAILED", "CANCELLED", ""]))
        .build()
}

/// The client an invoice bills: required, never null.
pub fn billed_client() -> Object {
    let mut schema = uuid();
    schema.description = Some("A client of the workspace; any other id is 400".to_owned());
    schema
}
