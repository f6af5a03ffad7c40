// invoice_view served by the official MCP TypeScript SDK v2 (@modelcontextprotocol/server with
// its Node adapter @modelcontextprotocol/node; speaks 2026-07-28 and 2025-11-25), on plain
// node:http at /mcp.
//
//   node ts-sdk-v2.mjs PORT sessionless   createMcpHandler(factory) wrapped in toNodeHandler: the
//                                         v2 serving entry. 2026-07-28 requests (the _meta
//                                         envelope) are served sessionless by a fresh McpServer
//                                         per request, JSON replies (responseMode 'auto');
//                                         2025-era requests by its stateless legacy fallback
//                                         (a fresh server + transport per request)
//   node ts-sdk-v2.mjs PORT stateful      2025-11-25 sessions (initialize, Mcp-Session-Id): one
//                                         McpServer and NodeStreamableHTTPServerTransport per
//                                         session, SSE replies (the default)
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, isInitializeRequest, McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { args, description, inputShape, jsonBody, outputShape, view } from './invoice.mjs';

const { port, mode } = args(['sessionless', 'stateful']);

function invoiceServer() {
  const server = new McpServer({ name: 'invoice-ts-sdk-v2', version: '0.0.0' });
  server.registerTool(
    'invoice_view',
    { description, inputSchema: z.object(inputShape), outputSchema: z.object(outputShape) },
    async (input) => view(input),
  );
  return server;
}

function reply(res, status, message) {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(
    JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }),
  );
}

const sessions = new Map();

async function stateful(req, res) {
  const id = req.headers['mcp-session-id'];
  if (id !== undefined) {
    const transport = sessions.get(id);
    if (!transport) return reply(res, 404, 'Session not found');
    return transport.handleRequest(req, res);
  }
  if (req.method !== 'POST') return reply(res, 400, 'Bad Request: no session');
  const body = await jsonBody(req);
  if (!isInitializeRequest(body)) return reply(res, 400, 'Bad Request: no session');
  const transport = new NodeStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sid) => sessions.set(sid, transport),
  });
  transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
  await invoiceServer().connect(transport);
  await transport.handleRequest(req, res, body);
}

const handle =
  mode === 'sessionless'
    ? toNodeHandler(createMcpHandler(() => invoiceServer(), { onerror: (error) => console.error(error) }))
    : stateful;
createServer((req, res) => {
  if (!req.url.startsWith('/mcp')) return reply(res, 404, 'Not found');
  handle(req, res).catch((error) => {
    console.error(error);
    if (!res.headersSent) reply(res, 500, 'Internal server error');
  });
}).listen(port, '127.0.0.1', () => console.error(`ts-sdk-v2: serving http://127.0.0.1:${port}/mcp (${mode})`));
