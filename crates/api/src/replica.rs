//! Reads from a replica with read-your-writes (`--database-replica-url`).
//!
//! A handler whose read tolerates lag runs it through [`crate::read_lagging`], which picks the replica's services when [`Routing::serves`] says the replica is recent enough for
//! the caller, and the primary's otherwise (or when the replica fails the read). A successful
//! write's response carries `X-Commit-Position`, the primary's WAL position after it committed;
//! the position is also kept per API key for `--replica-max-lag`, so that the key's next reads
//! wait for the replica to have it. A client of several processes behind one address may send
//! the position back in the same header, for the process that did not see the write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpRequest, web};
use timetrack_adapters::postgres::{CommitPosition, ReplicaWatch, commit_position};
use timetrack_domain::ids::ApiKeyId;
use timetrack_domain::model::Principal;

use crate::error::ApiError;
use crate::state::AppState;

/// `$body` (an expression of `$s: &AppState` whose value is a `DomainResult`) on the replica's
/// services when the replica may serve `$caller` now ([`AppState::replica_for`]), else, or when
/// the replica answers `Unavailable` (unreachable, or the read cancelled for replication), on
/// `$state`'s own; and when those answer `Unavailable` (the primary went away before the watch
/// noticed), on the replica's after all if it answers. Only for reads whose answer may lag by `--replica-max-lag`: never a read that
/// decides a write. A macro rather than a function taking a closure: the body borrows the
/// request's values across its awaits, which a closure's future cannot promise to be `Send`
/// for every lifetime.
#[macro_export]
macro_rules! read_lagging {
    ($state:expr, $caller:expr, $after:expr, |$s:ident| $body:expr) => {{
        let primary: &$crate::state::AppState = &$state;
        match primary.replica_for($caller, $after) {
            Some($s) => match $body {
                Err(timetrack_domain::DomainError::Unavailable(_)) => {
                    let $s = primary;
                    $body
                }
                answered => answered,
            },
            None => {
                let answered = {
                    let $s = primary;
                    $body
                };
                match (answered, primary.replica_without_primary($caller, $after)) {
                    (Err(timetrack_domain::DomainError::Unavailable(_)), Some($s)) => $body,
                    (answered, _) => answered,
                }
            }
        }
    }};
}

/// The header of a commit's position: set on the response to a write, read on a read.
pub const COMMIT_POSITION: HeaderName = HeaderName::from_static("x-commit-position");

/// Keys whose last write is this recent are remembered at most; past it, the oldest go.
const MAX_MARKS: usize = 100_000;

/// How a process decides where a read runs: the replica's lag, and each key's last commit.
#[derive(Clone, Debug)]
pub struct Routing {
    watch: ReplicaWatch,
    marks: Arc<Mutex<HashMap<ApiKeyId, (Instant, CommitPosition)>>>,
}

impl Routing {
    /// Routing by `watch`, shared by every worker of the process.
    pub fn new(watch: ReplicaWatch) -> Self {
        Self {
            watch,
            marks: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Whether the replica may serve `caller`'s read now: within the lag bound, and past the
    /// caller's last commit (of the last `--replica-max-lag`) and `at_least`.
    pub fn serves(&self, caller: &Principal, at_least: Option<CommitPosition>) -> bool {
        self.watch.serves(self.needed(caller, at_least))
    }

    /// The position `caller`'s read must see: its last commit of the last `--replica-max-lag`,
    /// or `at_least` if that is later.
    fn needed(
        &self,
        caller: &Principal,
        at_least: Option<CommitPosition>,
    ) -> Option<CommitPosition> {
        let marks = self.marks.lock().unwrap_or_else(PoisonError::into_inner);
        let mark = marks
            .get(&caller.api_key_id)
            .filter(|(at, _)| at.elapsed() <= self.watch.max_lag())
            .map(|(_, position)| *position);
        mark.max(at_least)
    }

    /// Whether the replica may answer `caller`'s read that the primary could not: see
    /// [`ReplicaWatch::serves_without_primary`].
    pub fn serves_without_primary(
        &self,
        caller: &Principal,
        at_least: Option<CommitPosition>,
    ) -> bool {
        self.watch
            .serves_without_primary(self.needed(caller, at_least))
    }

    /// Whether the primary answered the watch's last sample.
    pub fn primary_answers(&self) -> bool {
        self.watch.primary_answers()
    }

    /// Notes that `key`'s write committed at or before `position`.
    fn note(&self, key: ApiKeyId, position: CommitPosition) {
        let now = Instant::now();
        let mut marks = self.marks.lock().unwrap_or_else(PoisonError::into_inner);
        if marks.len() >= MAX_MARKS && !marks.contains_key(&key) {
            let max_lag = self.watch.max_lag();
            marks.retain(|_, (at, _)| now.duration_since(*at) <= max_lag);
            if marks.len() >= MAX_MARKS {
                marks.clear();
            }
        }
        let entry = marks.entry(key).or_insert((now, position));
        *entry = (now, entry.1.max(position));
    }
}

/// The POST endpoints that only read (the platforms' searches): no commit to wait for.
const READ_ONLY_POSTS: &[&str] = &[
    "/api/integrations/automation/triggers/clients/find",
    "/api/integrations/automation/triggers/projects/find",
];

/// Whether `path` is one of the `POST`s that only read (their answers carry no position).
pub(crate) fn is_read_only_post(path: &str) -> bool {
    READ_ONLY_POSTS.contains(&path)
}

/// After a successful write by an admitted caller, with a replica configured: reads the
/// primary's position, keeps it for the caller's key and sends it in `X-Commit-Position`. When
/// the position cannot be read (the primary went away after the commit), the key's reads stay
/// on the primary for `--replica-max-lag`.
pub(crate) async fn note_commits(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let writes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
        && !is_read_only_post(req.path());
    let replica = writes
        .then(|| req.app_data::<web::Data<AppState>>())
        .flatten()
        .and_then(|state| state.replica_routing());
    let mut res = next.call(req).await?;
    let Some((routing, primary)) = replica else {
        return Ok(res);
    };
    if !res.status().is_success() {
        return Ok(res);
    }
    let Some(caller) = crate::extract::admitted(res.request()) else {
        return Ok(res);
    };
    match commit_position(&primary).await {
        Ok(position) => {
            routing.note(caller.api_key_id, position);
            if let Ok(value) = HeaderValue::from_str(&position.to_string()) {
                res.headers_mut().insert(COMMIT_POSITION, value);
            }
        }
        Err(_) => routing.note(caller.api_key_id, CommitPosition(u64::MAX)),
    }
    Ok(res)
}

/// The position a read must see, from `X-Commit-Position` (absent: none); a malformed one is
/// 400 `Invalid X-Commit-Position header`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadAfter(pub Option<CommitPosition>);

impl FromRequest for ReadAfter {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let parsed = match req.headers().get(COMMIT_POSITION) {
            None => Ok(Self(None)),
            Some(value) => value
                .to_str()
                .ok()
                .and_then(|text| text.trim().parse().ok())
                .map(|position| Self(Some(position)))
                .ok_or_else(|| ApiError::bad_request("Invalid X-Commit-Position header")),
        };
        std::future::ready(parsed)
    }
}
