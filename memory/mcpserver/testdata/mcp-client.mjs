// A real MCP client for glyphoxa's tests: the official TypeScript SDK.
//
// Usage: node mcp-client.mjs http <url> <token>
//        node mcp-client.mjs stdio <command> [args…]
// Standard input: a JSON array of calls [{"tool": "ping", "args": {}}, …].
// Standard output: a JSON array with, per call, {"ok": true, "result": …}
// (structured content) or {"ok": false, "error": "…"}; then, for stdio,
// the tool list.
// NODE_PEERS must point at the directory holding node_modules.
import { createRequire } from 'node:module';

const require = createRequire(process.env.NODE_PEERS + '/');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  const calls = await readStdin();
  let transport;
  if (mode === 'http') {
    const [url, token] = rest;
    transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
  } else {
    const [command, ...args] = rest;
    transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
  }
  const client = new Client({ name: process.env.MCP_CLIENT_NAME || 'ts-test-client', version: '1.0.0' });
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const out = [];
  for (const call of calls) {
    try {
      const r = await client.callTool({ name: call.tool, arguments: call.args || {} });
      if (r.isError) {
        out.push({ ok: false, error: r.content.map((c) => c.text).join(' ') });
      } else {
        out.push({ ok: true, result: r.structuredContent ?? null });
      }
    } catch (e) {
      out.push({ ok: false, error: String(e && e.message ? e.message : e) });
    }
  }
  await client.close();
  process.stdout.write(JSON.stringify({ tools, results: out }));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
