// What the flow scripts share: the official TypeScript SDK client, pinned in
// tests/typescript/package.json in both of its lines —
//
//   v1: `@modelcontextprotocol/sdk` 1.x, which speaks only the initialize era (2025-11-25);
//   v2: `@modelcontextprotocol/client` 2.x, which speaks 2025-11-25 by default and
//       2026-07-28 when asked (`versionNegotiation: { mode: { pin: "2026-07-28" } }`), and
//       opens `subscriptions/listen` streams (`client.listen`) on 2026-07-28 connections —
//
// connected to a toolgate example over stdio or Streamable HTTP, with checks that fail
// clearly.
//
// Every script takes `SDK PROTOCOL SERVER …`: SDK is `v1` or `v2`; PROTOCOL is `2025-11-25`
// or `2026-07-28`; SERVER is the endpoint's URL, or `stdio:` followed by a JSON object
// `{"command": PATH, "args": [...], "stderr": LOG}` naming the server to launch and the file
// its stderr goes to (the server's own log is not the client's output).
//
// Output: `ok: …` lines and a final `PASS` on stdout, and nothing else anywhere. A failed
// check prints `FAIL: …` on stderr and exits 1. The Rust side fails a run that prints any
// other line, so a warning either SDK prints (console.warn, console.error, a Node process
// warning) fails the run.
import { createWriteStream } from "node:fs";

export const LEGACY = "2025-11-25";
export const MODERN = "2026-07-28";

/// How long to wait for a notification a step caused.
const PATIENCE_MS = 10_000;

/// Errors the client may report (to `onerror`, which prints nothing) without failing a run.
/// v2's `McpSubscription.close()` aborts the listen stream — the cancellation on Streamable
/// HTTP at 2026-07-28 — and also POSTs `notifications/cancelled` without an `Mcp-Method`
/// header; rmcp 3.11's server validates the SEP-2243 headers on notification POSTs too and
/// answers 400 (-32020), which the spec allows for a notification it does not accept (it
/// defines no client notifications over HTTP at 2026-07-28, nor their headers).
const TOLERATED_ERRORS = ['"code":-32020,"message":"missing required Mcp-Method header"'];

export class Failed extends Error {}

export function check(condition, message) {
  if (!condition) throw new Failed(message);
}

export const show = (value) => JSON.stringify(value);

export function passed(step) {
  console.log(`ok: ${step}`);
}

/// Waits until `condition()` holds, polling; fails with `what` after PATIENCE_MS.
export async function waitFor(condition, what) {
  const deadline = Date.now() + PATIENCE_MS;
  while (!condition()) {
    check(Date.now() < deadline, `${what}: nothing after ${PATIENCE_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/// The SDK line's client, transports and notification registration.
async function load(sdk) {
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const types = await import("@modelcontextprotocol/sdk/types.js");
    // v1 registers a handler by the notification's zod schema.
    const schemas = {
      "notifications/tools/list_changed": types.ToolListChangedNotificationSchema,
      "notifications/resources/updated": types.ResourceUpdatedNotificationSchema,
    };
    const on = (client, method, handler) => client.setNotificationHandler(schemas[method], handler);
    return { Client, StreamableHTTPClientTransport, StdioClientTransport, on };
  }
  if (sdk === "v2") {
    const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
    const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
    // v2 registers a handler by the notification's method.
    const on = (client, method, handler) => client.setNotificationHandler(method, handler);
    return { Client, StreamableHTTPClientTransport, StdioClientTransport, on };
  }
  throw new Failed(`unknown SDK line ${sdk}: v1 or v2`);
}

/// A connection: the SDK's client, plus what the server told it.
export class Connection {
  constructor(client, sdk) {
    this.client = client;
    this.sdk = sdk;
    /// The revision the client settled on.
    this.negotiatedVersion = undefined;
    /// How many `notifications/tools/list_changed` arrived.
    this.toolsChanged = 0;
    /// The `notifications/resources/updated` params that arrived, in order.
    this.updates = [];
    /// Errors the client reported (`onerror`): each fails the run at `close`.
    this.errors = [];
  }

  async ok(name, args) {
    const content = await this.#call(name, args);
    check(!content.isError, `${name} ${show(args)} should succeed, got isError: ${show(content.structured)}`);
    return content.structured;
  }

  async refused(name, args, code) {
    const content = await this.#call(name, args);
    check(content.isError, `${name} ${show(args)} should fail with ${code}, but succeeded: ${show(content.structured)}`);
    check(content.structured.code === code, `${name} ${show(args)}: expected code ${code}, got ${show(content.structured)}`);
    return content.structured;
  }

  /// A tool result (never a JSON-RPC error), which carries a structuredContent object.
  async #call(name, args) {
    let result;
    try {
      result = await this.client.callTool({ name, arguments: args });
    } catch (error) {
      throw new Failed(`${name} ${show(args)} threw instead of returning a result: ${error}`);
    }
    const structured = result.structuredContent;
    check(
      structured !== null && typeof structured === "object",
      `${name} ${show(args)}: no structuredContent object in ${show(result)}`,
    );
    return { structured, isError: result.isError === true };
  }

  /// The names of the listed tools, asked of the server (not a cache).
  async toolNames() {
    const options = this.sdk === "v2" ? { cacheMode: "refresh" } : undefined;
    const listed = await this.client.listTools(undefined, options);
    return listed.tools.map((tool) => tool.name);
  }

  /// Opens a `subscriptions/listen` stream (v2, 2026-07-28) with `filter`.
  async listen(filter) {
    return this.client.listen(filter);
  }

  async close() {
    await this.client.close();
    const errors = this.errors.filter((error) => !TOLERATED_ERRORS.some((known) => error.includes(known)));
    check(errors.length === 0, `the client reported errors: ${errors.join(" | ")}`);
  }
}

/// Connects the `sdk` line's client to `server` at `protocol`; `token`, if given, is the
/// HTTP bearer token.
export async function connect(sdk, protocol, server, token) {
  check(protocol === LEGACY || protocol === MODERN, `unknown protocol ${protocol}`);
  check(!(sdk === "v1" && protocol === MODERN), "the v1 line speaks only the initialize era");
  const { Client, StreamableHTTPClientTransport, StdioClientTransport, on } = await load(sdk);
  // v2 speaks 2025-11-25 unless told; pinned, it connects at 2026-07-28 or fails.
  const options = protocol === MODERN ? { versionNegotiation: { mode: { pin: MODERN } } } : {};
  const client = new Client({ name: "toolgate-flow-test", version: "0.0.0" }, options);
  let transport;
  if (server.startsWith("stdio:")) {
    const { command, args, stderr } = JSON.parse(server.slice("stdio:".length));
    transport = new StdioClientTransport({ command, args, stderr: "pipe" });
    transport.stderr.pipe(createWriteStream(stderr, { flags: "a" }));
  } else {
    const init = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : undefined;
    transport = new StreamableHTTPClientTransport(new URL(server), init);
  }
  // v1 does not say which revision it negotiated; its transports are told it.
  let negotiated;
  if (sdk === "v1") {
    const told = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (version) => {
      negotiated = version;
      told?.(version);
    };
  }
  const connection = new Connection(client, sdk);
  on(client, "notifications/tools/list_changed", () => {
    connection.toolsChanged += 1;
  });
  on(client, "notifications/resources/updated", (notification) => {
    connection.updates.push(notification.params);
  });
  client.onerror = (error) => connection.errors.push(String(error));
  await client.connect(transport);
  connection.negotiatedVersion = sdk === "v2" ? client.getNegotiatedProtocolVersion() : negotiated;
  check(
    connection.negotiatedVersion === protocol,
    `negotiated ${connection.negotiatedVersion}, expected ${protocol}`,
  );
  passed(`${sdk} negotiated ${protocol}`);
  return connection;
}

/// Runs `flow(...args)` with the command line's arguments after `SDK PROTOCOL SERVER`
/// checked; prints PASS, or FAIL and exits 1.
export async function run(flow, usage, min, max) {
  const args = process.argv.slice(2);
  if (args.length < min || args.length > max) {
    process.stderr.write(`usage: ${usage}\n`);
    process.exit(2);
  }
  try {
    await flow(...args);
  } catch (error) {
    process.stderr.write(`FAIL: ${error instanceof Failed ? error.message : error.stack}\n`);
    process.exit(1);
  }
  console.log("PASS");
}
