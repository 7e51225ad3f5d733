// A real MCP client for glyphoxa's tests: the official TypeScript SDK.
//
// Usage: node mcp-client.mjs
// One Node.js process serves every run of a test binary (loading the SDK
// is most of a run's CPU time). Standard input: one request per line,
// {"id": n, "name": "client name", "mode": "http", "args": [url, token],
// "calls": [{"tool": "ping", "args": {}}, …]} ("mode": "stdio", "args":
// [command, args…] runs a server over stdio). Each request is a client of
// its own (its own connection, session and name); requests run side by
// side. Standard output: one line per request, as each ends:
// {"id": n, "tools": [names…], "results": [per call {"ok": true, "result":
// …} (structured content) or {"ok": false, "error": "…"}]}, or {"id": n,
// "error": "…"} when the client could not connect.
// NODE_PEERS must point at the directory holding node_modules.
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

const require = createRequire(process.env.NODE_PEERS + '/');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const message = (e) => String(e && e.message ? e.message : e);

async function run(req) {
  let transport;
  if (req.mode === 'http') {
    const [url, token] = req.args;
    transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
  } else if (req.mode === 'stdio') {
    const [command, ...args] = req.args;
    transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
  } else {
    throw new Error(`unknown mode ${JSON.stringify(req.mode)}`);
  }
  const client = new Client({ name: req.name || 'ts-test-client', version: '1.0.0' });
  try {
    await client.connect(transport);
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    const results = [];
    for (const call of req.calls || []) {
      try {
        const r = await client.callTool({ name: call.tool, arguments: call.args || {} });
        if (r.isError) {
          results.push({ ok: false, error: r.content.map((c) => c.text).join(' ') });
        } else {
          results.push({ ok: true, result: r.structuredContent ?? null });
        }
      } catch (e) {
        results.push({ ok: false, error: message(e) });
      }
    }
    return { tools, results };
  } finally {
    await client.close().catch(() => {});
  }
}

const pending = new Set();
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    process.stderr.write(`a request is not JSON: ${message(e)}\n`);
    process.exitCode = 1;
    return;
  }
  const p = run(req)
    .then((r) => ({ id: req.id, ...r }), (e) => ({ id: req.id, error: message(e) }))
    .then((r) => process.stdout.write(JSON.stringify(r) + '\n'));
  pending.add(p);
  p.finally(() => pending.delete(p));
});
// Standard input closed: finish the runs under way, then exit.
lines.on('close', async () => {
  await Promise.allSettled([...pending]);
  process.exit(process.exitCode ?? 0);
});
