// An MCP client on the official TypeScript SDK (`@modelcontextprotocol/sdk` from npm), for the
// end-to-end tests: the same case and answer as `mcp_client.py`.
//
// Reads {"url", "key", "calls": [[tool, arguments], ...]} on stdin, connects over Streamable
// HTTP with the key as a bearer token, lists the tools, calls each in turn (the SDK checks each
// structured result against the tool's output schema) and prints
// {"server", "tools": {name: input schema}, "output_schemas", "annotations", "descriptions",
//  "results": [{"tool", "is_error", "structured", "text"}]}
// as JSON; a connection or a check that fails prints {"failed": "<why>"}.

const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

async function main(c) {
  const client = new Client({ name: 'timetrack-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(c.url), {
    requestInit: { headers: { Authorization: `Bearer ${c.key}` } },
  });
  await client.connect(transport);
  const listed = await client.listTools();
  const out = {
    server: client.getServerVersion().name,
    tools: {},
    output_schemas: {},
    annotations: {},
    descriptions: {},
    results: [],
  };
  for (const t of listed.tools) {
    out.tools[t.name] = t.inputSchema;
    out.output_schemas[t.name] = t.outputSchema ?? null;
    out.annotations[t.name] = t.annotations ?? null;
    out.descriptions[t.name] = t.description;
  }
  for (const [tool, args] of c.calls) {
    const result = await client.callTool({ name: tool, arguments: args });
    out.results.push({
      tool,
      is_error: Boolean(result.isError),
      structured: result.structuredContent ?? null,
      text: (result.content || []).filter((x) => x.type === 'text').map((x) => x.text),
    });
  }
  await client.close();
  return out;
}

let input = '';
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  main(JSON.parse(input))
    .then((out) => { console.log(JSON.stringify(out)); })
    .catch((e) => { console.log(JSON.stringify({ failed: `${e.name}: ${e.message}` })); });
});
