//! `timetrack mcp`: the MCP tools over stdio, for a desktop assistant that starts its servers as
//! child processes. The official SDK (rmcp) speaks the protocol on stdin and stdout; each tool
//! listing and call is relayed to the `/mcp` endpoint of a running timetrack (`--base-url`) with
//! the key in `TIMETRACK_API_KEY`, so the tools, their permissions, limits and events are the
//! server's, and nothing here touches a database. Logs go to stderr, which assistants show.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use timetrack_adapters::http::{McpRelay, RelayError};

use crate::config::McpSettings;

/// The protocol version the relay's own `initialize` names.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// Runs the stdio server until the assistant closes stdin.
pub async fn run(settings: &McpSettings) -> Result<()> {
    let key = std::env::var("TIMETRACK_API_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty())
        .context(
            "TIMETRACK_API_KEY is not set: give the key the tools act with in the environment \
             (the assistant's configuration has an `env` entry for it)",
        )?;
    let relay = Relayed::new(McpRelay::new(&settings.base_url, &key)?);
    // Fail at once, with the reason, when the server cannot be reached or refuses the key,
    // rather than on the assistant's first call.
    relay
        .request::<Value>(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "timetrack-mcp-stdio", "version": env!("CARGO_PKG_VERSION")},
            }),
        )
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.message))
        .with_context(|| format!("checking {} with TIMETRACK_API_KEY", relay.relay.endpoint()))?;
    tracing::info!(
        endpoint = relay.relay.endpoint(),
        "serving the MCP tools over stdio"
    );
    let service = relay
        .serve(rmcp::transport::stdio())
        .await
        .context("starting the MCP session on stdio")?;
    service
        .waiting()
        .await
        .context("the MCP session on stdio")?;
    Ok(())
}

/// The stdio server: the remote's tools, relayed.
struct Relayed {
    relay: McpRelay,
    next_id: AtomicU64,
}

impl Relayed {
    fn new(relay: McpRelay) -> Self {
        Self {
            relay,
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends the request `method` with `params`; answers its result, or the JSON-RPC error the
    /// remote answered, or an internal error saying why there was no answer.
    async fn request<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, McpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = self
            .relay
            .send(&message)
            .await
            .map_err(|e| McpError::internal_error(refusal(&e), None))?
            .ok_or_else(|| {
                McpError::internal_error(format!("{method}: the server answered nothing"), None)
            })?;
        if let Some(error) = answer.get("error") {
            let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("error")
                .to_owned();
            return Err(McpError::new(
                ErrorCode(i32::try_from(code).unwrap_or(-32603)),
                message,
                error.get("data").cloned(),
            ));
        }
        let result = answer.get("result").cloned().ok_or_else(|| {
            McpError::internal_error(format!("{method}: the answer holds no result"), None)
        })?;
        serde_json::from_value(result).map_err(|e| {
            McpError::internal_error(
                format!("{method}: an answer of an unexpected shape: {e}"),
                None,
            )
        })
    }
}

/// What a relay failure says: the server's own message for an HTTP refusal (401, 429, 413).
fn refusal(error: &RelayError) -> String {
    match error {
        RelayError::Refused {
            status, message, ..
        } => format!("{message} (HTTP {status})"),
        RelayError::Unreachable(_) => error.to_string(),
    }
}

fn params<T: serde::Serialize>(value: &T) -> Result<Value, McpError> {
    serde_json::to_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))
}

impl ServerHandler for Relayed {
    fn get_info(&self) -> ServerConfig {
        crate::mcp::server_config()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let params = request.map_or(Ok(json!({})), |r| params(&r))?;
        self.request("tools/list", params).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let params = params(&request)?;
        match self.request::<CallToolResult>("tools/call", params).await {
            Ok(result) => Ok(result.into()),
            // A refused or failed relay (a key revoked meanwhile, the rate limit, the server
            // gone) is a tool error the assistant can read, as the server's own failures are.
            Err(err) if err.code == ErrorCode::INTERNAL_ERROR => {
                Ok(crate::mcp::tool_error(&json!({"error": err.message})).into())
            }
            Err(err) => Err(err),
        }
    }
}
