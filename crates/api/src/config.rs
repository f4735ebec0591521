//! Configuration: flags with environment fallbacks, parsed once in `main` and passed down.
//!
//! | flag | environment | default |
//! |---|---|---|
//! | `--database-url` | `DATABASE_URL` | unset: a private cluster under `--data-dir` |
//! | `--database-pooler` | `TIMETRACK_DATABASE_POOLER` | `none` (or `transaction`: `DATABASE_URL` is PgBouncer in transaction mode) |
//! | `--database-direct-url` | `TIMETRACK_DATABASE_DIRECT_URL` | `DATABASE_URL` (required with `--database-pooler transaction`) |
//! | `--data-dir` | `TIMETRACK_DATA_DIR` | `.timetrack` |
//! | `--log` | `TIMETRACK_LOG` | `info` |
//! | `--log-format` | `TIMETRACK_LOG_FORMAT` | `text` (or `json`) |
//! | `serve --bind` | `TIMETRACK_BIND` | `127.0.0.1:8080` |
//! | `serve --metrics-bind` | `TIMETRACK_METRICS_BIND` | `127.0.0.1:9464` (or `off`) |
//! | `serve --db-pool-size` | `TIMETRACK_DB_POOL_SIZE` | `16` |
//! | `serve --http-workers` | `TIMETRACK_HTTP_WORKERS` | CPUs, or CPUs / 2 with a database on this machine |
//! | `serve --database-replica-url` | `TIMETRACK_DATABASE_REPLICA_URL` | unset: every read on the primary |
//! | `serve --replica-max-lag` | `TIMETRACK_REPLICA_MAX_LAG` | `5s` |
//! | `serve --search-concurrency` | `TIMETRACK_SEARCH_CONCURRENCY` | 3 × CPUs |
//! | `serve --auth-cache-seconds` | `TIMETRACK_AUTH_CACHE_SECONDS` | `5` (0 to 30) |
//! | `serve --webhook-allow-private-targets` (a switch) | `TIMETRACK_WEBHOOK_ALLOW_PRIVATE_TARGETS` | off |
//! | `serve --webhook-retry-schedule` | `TIMETRACK_WEBHOOK_RETRY_SCHEDULE` | `5s,5m,30m,2h,5h,10h,14h,20h,24h` |
//! | `serve --webhook-disable-after` | `TIMETRACK_WEBHOOK_DISABLE_AFTER` | `5d` |
//! | `serve --webhook-failing-after` | `TIMETRACK_WEBHOOK_FAILING_AFTER` | `24h` |
//! | `serve --webhook-timeout` | `TIMETRACK_WEBHOOK_TIMEOUT` | `15` (seconds, whole attempt) |
//! | `serve --webhook-root-certs` | `TIMETRACK_WEBHOOK_ROOT_CERTS` | unset (system roots only) |
//! | `serve --webhook-concurrency` | `TIMETRACK_WEBHOOK_CONCURRENCY` | `64` |
//! | `serve --webhook-max-in-flight` | `TIMETRACK_WEBHOOK_MAX_IN_FLIGHT` | `10` (per subscription) |
//! | `serve --webhook-max-in-flight-per-workspace` | `TIMETRACK_WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE` | three quarters of `--webhook-concurrency` |
//! | `serve --webhook-requeue-per-minute` | `TIMETRACK_WEBHOOK_REQUEUE_PER_MINUTE` | `10000` (per member) |
//! | `serve --delivery-retention-days` | `TIMETRACK_DELIVERY_RETENTION_DAYS` | `7` |
//! | `serve --event-retention-days` | `TIMETRACK_EVENT_RETENTION_DAYS` | `30` |
//! | `serve --rate-limit-per-minute` | `TIMETRACK_RATE_LIMIT_PER_MINUTE` | `100` |
//! | `serve --rate-limit-per-second` | `TIMETRACK_RATE_LIMIT_PER_SECOND` | `10` |
//! | `serve --auth-failures-per-minute` | `TIMETRACK_AUTH_FAILURES_PER_MINUTE` | `30` |
//! | `serve --rate-limit-store` | `TIMETRACK_RATE_LIMIT_STORE` | `memory` (or `postgres`) |
//! | `serve --secret-key` | `TIMETRACK_SECRET_KEY` | required with `DATABASE_URL`; else `<data-dir>/secret.key` |
//! | `serve --previous-secret-keys` | `TIMETRACK_PREVIOUS_SECRET_KEYS` | none (during a key rotation) |
//! | `serve --trusted-proxies` | `TIMETRACK_TRUSTED_PROXIES` | none (addresses or CIDR ranges) |
//! | `mcp --base-url` | `TIMETRACK_BASE_URL` | required (the key: `TIMETRACK_API_KEY`, environment only) |
//! | `listen --base-url` | `TIMETRACK_BASE_URL` | the `serve` on `--data-dir` (the key: `TIMETRACK_API_KEY`, else its demo key) |

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use timetrack_domain::delivery::RetrySchedule;
use uuid::Uuid;

/// timetrack: time tracking with REST hooks for automation platforms.
#[derive(Debug, Parser)]
#[command(
    name = "timetrack",
    version,
    about = "timetrack: a time-tracking API on PostgreSQL that delivers signed webhooks to \
             automation platforms (Zapier-style REST hooks).",
    long_about = None,
    after_help = "Without a command, `serve` runs. Every flag can also be set by the environment \
                  variable shown beside it. Docs: README.md and docs/operations.md."
)]
pub struct Cli {
    /// Settings every command shares.
    #[command(flatten)]
    pub global: GlobalSettings,
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Settings every command shares.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Shared options (every command)")]
pub struct GlobalSettings {
    /// PostgreSQL URL. Without it, a private cluster is started under --data-dir.
    #[arg(long, hide_env_values = true, env = "DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// What DATABASE_URL names: PostgreSQL itself or a pooler in session mode (`none`), or a
    /// pooler in transaction mode such as PgBouncer's `pool_mode = transaction`
    /// (`transaction`: statements are then sent unnamed, one round trip each, and
    /// --database-direct-url is required).
    #[arg(
        long,
        hide_env_values = true,
        env = "TIMETRACK_DATABASE_POOLER",
        value_enum,
        default_value_t = PoolerArg::None,
        global = true
    )]
    pub database_pooler: PoolerArg,
    /// PostgreSQL URL of the database itself (or of a pooler in session mode), for the two
    /// connections that keep a session: the migrations' lock and `serve`'s LISTEN connection.
    /// DATABASE_URL when unset; required with --database-pooler transaction.
    #[arg(
        long,
        hide_env_values = true,
        env = "TIMETRACK_DATABASE_DIRECT_URL",
        global = true
    )]
    pub database_direct_url: Option<String>,
    /// Where the private cluster and the demo key are kept when no DATABASE_URL is set.
    #[arg(
        long,
        hide_env_values = true,
        env = "TIMETRACK_DATA_DIR",
        default_value = ".timetrack",
        global = true
    )]
    pub data_dir: PathBuf,
    /// Log filter, e.g. `info` or `timetrack_api=debug,info`.
    #[arg(
        long,
        hide_env_values = true,
        env = "TIMETRACK_LOG",
        default_value = "info",
        global = true
    )]
    pub log: String,
    /// Log line format.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
}

/// What `DATABASE_URL` names (`--database-pooler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PoolerArg {
    /// PostgreSQL itself, or a pooler in session mode.
    None,
    /// A pooler in transaction mode (PgBouncer's `pool_mode = transaction`).
    Transaction,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API (the default command).
    Serve(Box<ServeSettings>),
    /// Apply pending database migrations and exit.
    Migrate,
    /// Create workspaces, users and API keys; revoke keys. Each prints one JSON object.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Serve the MCP tools over stdio for a desktop assistant, relaying each call to the `/mcp`
    /// endpoint of a running timetrack with the key in `TIMETRACK_API_KEY`.
    Mcp(McpSettings),
    /// Receive a running local timetrack's deliveries here: subscribe a webhook for the events
    /// asked, verify and print each delivery, optionally forward it to your own handler, and
    /// delete the webhook when stopped (Ctrl-C).
    Listen(ListenSettings),
}

/// Settings of `listen`.
#[derive(Debug, Clone, Args)]
pub struct ListenSettings {
    /// Event types to receive, comma-separated (`CLIENT_CREATED,TIMER_STARTED`); all the
    /// subscribable ones by default.
    #[arg(long, value_delimiter = ',')]
    pub events: Vec<String>,
    /// Also POST each delivery, with its original headers, to this URL of your own handler
    /// (http or https), such as `http://localhost:3000/webhooks`; its answer is the delivery's.
    #[arg(long)]
    pub forward_to: Option<String>,
    /// The timetrack to listen to; by default the `serve` running on --data-dir.
    #[arg(long, env = "TIMETRACK_BASE_URL", hide_env_values = true)]
    pub base_url: Option<String>,
}

/// Settings of `mcp`.
#[derive(Debug, Clone, Args)]
pub struct McpSettings {
    /// Address of the timetrack whose tools are served, such as `https://timetrack.example.com`
    /// (the key is read from `TIMETRACK_API_KEY`, never from the command line, which other users
    /// of the machine can see).
    #[arg(long, env = "TIMETRACK_BASE_URL", hide_env_values = true)]
    pub base_url: String,
}

/// Settings of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeSettings {
    /// Address the API listens on.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_BIND", default_value = "127.0.0.1:8080", value_parser = parse_listen_address)]
    pub bind: String,
    /// Address of the Prometheus metrics listener (`GET /metrics`), or `off` for none. Kept apart
    /// from the API's address so metrics are never public by accident.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_METRICS_BIND", default_value = "127.0.0.1:9464", value_parser = parse_metrics_address)]
    pub metrics_bind: String,
    /// HTTP worker threads. Default: one per CPU, or one per two CPUs (at least one) when the
    /// database runs on this machine (the private cluster, or a URL naming only loopback hosts
    /// or Unix sockets), as PostgreSQL then needs the other half.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_HTTP_WORKERS", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub http_workers: Option<u16>,
    /// Most database connections of the API, divided among its worker threads (background tasks
    /// have four more, the delivery worker two, and the notification listener one).
    #[arg(long, hide_env_values = true, env = "TIMETRACK_DB_POOL_SIZE", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub db_pool_size: u16,
    /// PostgreSQL URL of a replica (several hosts allowed, as in DATABASE_URL) that serves the
    /// reads that tolerate lag: the catch-up feed, searches, reports and their CSV, the delivery
    /// log. Writes and the reads that decide them stay on DATABASE_URL's primary.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_DATABASE_REPLICA_URL")]
    pub database_replica_url: Option<String>,
    /// Longest a replica may be behind the primary and still serve reads, e.g. `5s`, `500ms`
    /// (units ms, s, m, h, d); also how long after a write its key's reads wait for the replica
    /// to have the write.
    #[arg(
        long,
        hide_env_values = true,
        env = "TIMETRACK_REPLICA_MAX_LAG",
        default_value = "5s",
        value_parser = parse_positive_duration
    )]
    pub replica_max_lag: time::Duration,
    /// Most client searches running on the database at once, divided among the worker threads
    /// like `--db-pool-size`; more wait their turn in arrival order. Default: three per CPU.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_SEARCH_CONCURRENCY", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub search_concurrency: Option<u16>,
    /// Key that encrypts webhook secrets at rest: 32 bytes in base64 or 64 hex digits (`openssl
    /// rand -base64 32`). Required with `DATABASE_URL`; without it, the private cluster's key is
    /// generated once and kept in `<data-dir>/secret.key`.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_SECRET_KEY", value_parser = parse_secret_key)]
    pub secret_key: Option<timetrack_adapters::SecretKey>,
    /// Earlier secret keys, comma-separated, still accepted for reading during a rotation; every
    /// stored secret is sealed again under the current key at start.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_PREVIOUS_SECRET_KEYS", value_delimiter = ',', value_parser = parse_secret_key)]
    pub previous_secret_keys: Vec<timetrack_adapters::SecretKey>,
    /// Seconds a verified API key is trusted before the database is asked again (0 to 30).
    #[arg(long, hide_env_values = true, env = "TIMETRACK_AUTH_CACHE_SECONDS", default_value_t = 5, value_parser = clap::value_parser!(u8).range(0..=30))]
    pub auth_cache_seconds: u8,
    /// Let webhooks target loopback and private addresses (tests and development only). The
    /// environment variable takes `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`).
    #[arg(long, hide_env_values = true, env = "TIMETRACK_WEBHOOK_ALLOW_PRIVATE_TARGETS", action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new())]
    pub webhook_allow_private_targets: bool,
    /// Waits between delivery attempts, e.g. `1s,2s,4s` (units ms, s, m, h).
    #[arg(
        long,
        hide_env_values = true,
        env = "TIMETRACK_WEBHOOK_RETRY_SCHEDULE",
        default_value = "5s,5m,30m,2h,5h,10h,14h,20h,24h",
        value_parser = parse_retry_schedule
    )]
    pub webhook_retry_schedule: RetrySchedule,
    /// Disable a webhook whose deliveries have all failed for this long, e.g. `5d`, `12h`, `3s`
    /// (units ms, s, m, h, d).
    #[arg(
        long,
        hide_env_values = true,
        env = "TIMETRACK_WEBHOOK_DISABLE_AFTER",
        default_value = "5d",
        value_parser = parse_positive_duration
    )]
    pub webhook_disable_after: time::Duration,
    /// Tell the webhook's owner (`WEBHOOK_FAILING`) once its deliveries have all failed for this
    /// long, e.g. `24h`, `3s` (units ms, s, m, h, d).
    #[arg(
        long,
        hide_env_values = true,
        env = "TIMETRACK_WEBHOOK_FAILING_AFTER",
        default_value = "24h",
        value_parser = parse_positive_duration
    )]
    pub webhook_failing_after: time::Duration,
    /// Longest delivery attempt, in seconds (connect within 5 s of it).
    #[arg(long, hide_env_values = true, env = "TIMETRACK_WEBHOOK_TIMEOUT", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub webhook_timeout: u64,
    /// A PEM file of extra roots trusted for webhook TLS (private CAs, tests).
    #[arg(long, hide_env_values = true, env = "TIMETRACK_WEBHOOK_ROOT_CERTS")]
    pub webhook_root_certs: Option<PathBuf>,
    /// Most deliveries in flight in this process.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_WEBHOOK_CONCURRENCY", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub webhook_concurrency: u32,
    /// Most deliveries in flight to one subscription, across every process.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_WEBHOOK_MAX_IN_FLIGHT", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub webhook_max_in_flight: u32,
    /// Most deliveries of one workspace in flight in this process (default: three quarters of
    /// --webhook-concurrency), so that no workspace's hanging endpoints take the slots the others
    /// need; a workspace whose endpoints answer quickly takes past it the slots nobody else wants.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub webhook_max_in_flight_per_workspace: Option<u32>,
    /// Most deliveries one member may queue again (replays, an enable's replay, resends, tests)
    /// in any 60 s.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_WEBHOOK_REQUEUE_PER_MINUTE", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub webhook_requeue_per_minute: u32,
    /// Days delivery attempts are kept (the delivery log's reach).
    #[arg(long, hide_env_values = true, env = "TIMETRACK_DELIVERY_RETENTION_DAYS", default_value_t = 7, value_parser = clap::value_parser!(u16).range(1..=3650))]
    pub delivery_retention_days: u16,
    /// Days events and their deliveries are kept once final (the catch-up feed's and a replay's
    /// reach; never less than the delivery retention).
    #[arg(long, hide_env_values = true, env = "TIMETRACK_EVENT_RETENTION_DAYS", default_value_t = 30, value_parser = clap::value_parser!(u16).range(1..=3650))]
    pub event_retention_days: u16,
    /// Requests per API key per rolling 60 s.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_RATE_LIMIT_PER_MINUTE", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_per_minute: u32,
    /// Requests per API key per rolling second.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_RATE_LIMIT_PER_SECOND", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_per_second: u32,
    /// Failed authentications per client address per rolling 60 s; past it, 429.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_AUTH_FAILURES_PER_MINUTE", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    pub auth_failures_per_minute: u32,
    /// Where rate-limit counts live: this process, or PostgreSQL (shared by instances).
    #[arg(long, hide_env_values = true, env = "TIMETRACK_RATE_LIMIT_STORE", value_enum, default_value_t = RateLimitStoreArg::Memory)]
    pub rate_limit_store: RateLimitStoreArg,
    /// Proxies whose `X-Forwarded-For`/`Forwarded` headers name the client (comma-separated
    /// addresses or CIDR ranges); the client address is used by the failed-authentication limit
    /// and the access log. Default: none, the socket's peer is the client.
    #[arg(long, hide_env_values = true, env = "TIMETRACK_TRUSTED_PROXIES", default_value = "", hide_default_value = true, value_parser = parse_trusted_proxies)]
    pub trusted_proxies: crate::client_ip::TrustedProxies,
}

/// A `host:port` to listen on; the port is required (`0` picks a free one).
fn parse_listen_address(text: &str) -> Result<String, String> {
    let example = "e.g. 127.0.0.1:8080 (this machine only) or 0.0.0.0:8080 (every interface)";
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("expected host:port, {example}"));
    };
    if host.is_empty() {
        return Err(format!(
            "the host is missing: expected host:port, {example}"
        ));
    }
    port.parse::<u16>()
        .map_err(|_| format!("{port:?} is not a port (0-65535): expected host:port, {example}"))?;
    Ok(text.to_owned())
}

/// `off`, or a `host:port` to listen on.
fn parse_metrics_address(text: &str) -> Result<String, String> {
    if text.eq_ignore_ascii_case("off") {
        return Ok("off".to_owned());
    }
    parse_listen_address(text).map_err(|e| format!("{e}; or `off` for no metrics listener"))
}

fn parse_positive_duration(text: &str) -> Result<time::Duration, String> {
    timetrack_domain::delivery::parse_duration(text).map_err(|e| e.to_string())
}

fn parse_retry_schedule(text: &str) -> Result<RetrySchedule, String> {
    RetrySchedule::parse(text).map_err(|e| e.to_string())
}

fn parse_secret_key(text: &str) -> Result<timetrack_adapters::SecretKey, String> {
    timetrack_adapters::SecretKey::parse(text).map_err(|e| format!("{e:#}"))
}

fn parse_trusted_proxies(text: &str) -> Result<crate::client_ip::TrustedProxies, String> {
    crate::client_ip::TrustedProxies::parse(text)
}

/// `--rate-limit-store` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RateLimitStoreArg {
    /// In this process.
    Memory,
    /// In PostgreSQL, shared by every instance on the database.
    Postgres,
}

/// The `admin` commands.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a workspace.
    CreateWorkspace {
        /// Display name.
        #[arg(long)]
        name: String,
        /// IANA time zone.
        #[arg(long, default_value = "UTC")]
        timezone: String,
        /// ISO 4217 currency.
        #[arg(long, default_value = "USD")]
        currency: String,
    },
    /// Create a user in a workspace (an existing e-mail joins the workspace instead).
    CreateUser {
        /// Workspace id.
        #[arg(long)]
        workspace: Uuid,
        /// Display name.
        #[arg(long)]
        name: String,
        /// E-mail address.
        #[arg(long)]
        email: String,
        /// Role in the workspace: owner, admin or member (the workspace's first member is its
        /// owner whatever this says).
        #[arg(long, default_value = "member")]
        role: String,
    },
    /// Change a member's role (a workspace keeps at least one owner).
    SetRole {
        /// Workspace id.
        #[arg(long)]
        workspace: Uuid,
        /// User id.
        #[arg(long)]
        user: Uuid,
        /// New role: owner, admin or member.
        #[arg(long)]
        role: String,
    },
    /// Issue an API key for a user in a workspace; the key is printed once.
    CreateApiKey {
        /// User id.
        #[arg(long)]
        user: Uuid,
        /// Workspace id.
        #[arg(long)]
        workspace: Uuid,
        /// Optional label.
        #[arg(long)]
        name: Option<String>,
    },
    /// Revoke an API key; its webhook subscriptions are disabled.
    RevokeApiKey {
        /// API key id.
        #[arg(long)]
        id: Uuid,
    },
}

impl Cli {
    /// Parses `args` (program name first); with no command, parses them as `serve`'s.
    pub fn parse_args<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let first = Self::try_parse_from(&args);
        let names_a_command = {
            let command = <Self as clap::CommandFactory>::command();
            let names: Vec<String> = command
                .get_subcommands()
                .map(|c| c.get_name().to_owned())
                .chain(["help".to_owned()])
                .collect();
            args.iter()
                .skip(1)
                .any(|arg| names.iter().any(|name| arg == name.as_str()))
        };
        match &first {
            Ok(cli) if cli.command.is_some() => return first,
            Err(err)
                if names_a_command
                    || matches!(
                        err.kind(),
                        clap::error::ErrorKind::DisplayHelp
                            | clap::error::ErrorKind::DisplayVersion
                            | clap::error::ErrorKind::InvalidSubcommand
                    ) =>
            {
                return first;
            }
            _ => {}
        }
        // Serve's flags without the word `serve`: parsed as `serve`'s, so that a misspelled or
        // misused flag is reported by the command that knows every flag (and suggests the one
        // meant).
        let mut with_serve = args;
        with_serve.insert(1.min(with_serve.len()), OsString::from("serve"));
        Self::try_parse_from(with_serve)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_command_means_serve_with_its_flags() {
        let cli = Cli::parse_args(["timetrack", "--bind", "127.0.0.1:9000"]).unwrap();
        match cli.command {
            Some(Command::Serve(s)) => assert_eq!(s.bind, "127.0.0.1:9000"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_commands_report_the_original_error() {
        let err = Cli::parse_args(["timetrack", "frobnicate"]).unwrap_err();
        assert!(err.to_string().contains("frobnicate"), "{err}");
        assert!(Cli::parse_args(["timetrack"]).unwrap().command.is_some());
    }

    #[test]
    fn misspelled_serve_flags_get_a_suggestion_without_the_word_serve() {
        for args in [
            &["timetrack", "--bnd", "127.0.0.1:1"][..],
            &["timetrack", "serve", "--bnd", "127.0.0.1:1"][..],
        ] {
            let err = Cli::parse_args(args).unwrap_err().to_string();
            assert!(err.contains("--bind"), "{args:?}: {err}");
        }
    }

    #[test]
    fn switches_take_no_value_and_their_variable_takes_a_boolean() {
        let on = ["timetrack", "--webhook-allow-private-targets"];
        match Cli::parse_args(on).unwrap().command {
            Some(Command::Serve(s)) => assert!(s.webhook_allow_private_targets),
            other => panic!("{other:?}"),
        }
        match Cli::parse_args(["timetrack"]).unwrap().command {
            Some(Command::Serve(s)) => assert!(!s.webhook_allow_private_targets),
            other => panic!("{other:?}"),
        }
        let with_value = ["timetrack", "--webhook-allow-private-targets", "true"];
        assert!(Cli::parse_args(with_value).is_err());
    }

    #[test]
    fn listen_addresses_need_a_port_and_bad_values_name_the_flag() {
        for bad in [
            "localhost",
            "127.0.0.1",
            ":8080",
            "localhost:http",
            "h:70000",
        ] {
            let err = Cli::parse_args(["timetrack", "--bind", bad])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("--bind") && err.contains("host:port"),
                "{bad}: {err}"
            );
            let err = Cli::parse_args(["timetrack", "--metrics-bind", bad])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("--metrics-bind") && err.contains("off"),
                "{bad}: {err}"
            );
        }
        for good in ["localhost:8080", "0.0.0.0:0", "[::1]:9000"] {
            assert!(
                Cli::parse_args(["timetrack", "--bind", good]).is_ok(),
                "{good}"
            );
        }
        let err = Cli::parse_args(["timetrack", "--webhook-retry-schedule", "5x"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--webhook-retry-schedule"), "{err}");
    }

    #[test]
    fn global_flags_go_before_or_after_the_command() {
        let cli = Cli::parse_args(["timetrack", "--log", "debug", "migrate"]).unwrap();
        assert_eq!(cli.global.log, "debug");
        let cli = Cli::parse_args(["timetrack", "migrate", "--log-format", "json"]).unwrap();
        assert_eq!(cli.global.log_format, LogFormat::Json);
    }

    #[test]
    fn out_of_range_settings_are_refused() {
        assert!(Cli::parse_args(["timetrack", "serve", "--auth-cache-seconds", "31"]).is_err());
        assert!(Cli::parse_args(["timetrack", "serve", "--db-pool-size", "0"]).is_err());
        assert!(
            Cli::parse_args([
                "timetrack",
                "admin",
                "create-user",
                "--workspace",
                "x",
                "--name",
                "a",
                "--email",
                "b"
            ])
            .is_err()
        );
    }
}
