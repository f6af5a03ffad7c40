// invoice_view served by the official MCP TypeScript SDK v1 (@modelcontextprotocol/sdk, which
// speaks 2025-11-25 and earlier), on plain node:http at /mcp.
//
//   node ts-sdk-v1.mjs PORT stateless   a new McpServer + StreamableHTTPServerTransport per
//                                       request (sessionIdGenerator: undefined), JSON replies:
//                                       the SDK's stateless pattern (its docs and
//                                       simpleStatelessStreamableHttp example)
//   node ts-sdk-v1.mjs PORT stateful    sessions (initialize, Mcp-Session-Id), one McpServer and
//                                       transport per session, SSE replies (the default)
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { args, description, inputShape, jsonBody, outputShape, view } from './invoice.mjs';

const { port, mode } = args(['stateless', 'stateful']);

function invoiceServer() {
  const server = new McpServer({ name: 'invoice-ts-sdk-v1', version: '0.0.0' });
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

async function stateless(req, res) {
  if (req.method !== 'POST') return reply(res, 405, 'Method not allowed.');
  const server = invoiceServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res);
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
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sid) => sessions.set(sid, transport),
  });
  transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
  await invoiceServer().connect(transport);
  await transport.handleRequest(req, res, body);
}

const handle = mode === 'stateless' ? stateless : stateful;
createServer((req, res) => {
  if (!req.url.startsWith('/mcp')) return reply(res, 404, 'Not found');
  handle(req, res).catch((error) => {
    console.error(error);
    if (!res.headersSent) reply(res, 500, 'Internal server error');
  });
}).listen(port, '127.0.0.1', () => console.error(`ts-sdk-v1: serving http://127.0.0.1:${port}/mcp (${mode})`));
