-- tools/call invoice_view {"id":"INV-1","domain":"invoice"}, one request per call, as
-- benches/peers/peers.sh drives every server. The environment picks the protocol:
--   MCP_PROTOCOL=2026-07-28  sessionless: the version and capabilities travel in _meta, with the
--                            Mcp-Method / Mcp-Name headers (toolgate --stateless, SDK v2, FastMCP)
--   MCP_PROTOCOL=2025-11-25  the 2025 shape: no _meta envelope; with MCP_SESSION_ID set, over that
--                            session (stateful), else without one (the SDKs' stateless modes)
-- A unique JSON-RPC id per request (all connections may share one session, where duplicate
-- in-flight ids would collide). Every response that is not a successful tool result of the
-- invoice is counted as bad: a status other than 200, or a body (JSON, or an SSE stream,
-- searched whole) without both "isError":false and the structured result.
local counter, tid, threads = 0, 0, {}
function setup(thread) thread:set("tid", #threads + 1); table.insert(threads, thread) end
function init(args) tid = tonumber(wrk.thread:get("tid")) or 0; bad = 0 end

local protocol = os.getenv("MCP_PROTOCOL") or "2026-07-28"
local session = os.getenv("MCP_SESSION_ID") or ""
local envelope = ""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = protocol
if protocol == "2026-07-28" then
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = "invoice_view"
  envelope = ',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
end
if session ~= "" then wrk.headers["Mcp-Session-Id"] = session end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"invoice_view","arguments":{"id":"INV-1","domain":"invoice"}%s}}',
    tid * 1000000000 + counter, envelope))
end

function response(status, headers, body)
  if status ~= 200
    or not body:find('"isError":false', 1, true)
    or not body:find('"structuredContent":{"id":"INV-1","amount":{"amount":"101.00","currency":"EUR"},"outcome":"viewed"', 1, true)
  then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("bad") or 0) end
  io.write(string.format("bad=%d\n", total))
end
