-- tools/call invoice_submit without a session (MCP 2026-07-28), each request on an invoice id no request
-- used before: against toolgate a keyed transition (draft -> review) on a fresh instance, against plain
-- rmcp an echo. The request differs from call_sessionless.lua's only in the tool name and the invoice id.
-- (A copy of benches/wrk/submit_many.lua.) `-- BASE` offsets the ids, so that several wrk runs against
-- one server never reuse one. Counts every response that is not a successful tool result as bad.
local counter, threads = 0, {}
function setup(thread) thread:set("tid", #threads + 1); table.insert(threads, thread) end
function init(args) tid = tonumber(wrk.thread:get("tid")) or 0; bad = 0; base = tonumber(args[1] or "0") end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "invoice_submit"
function request()
  counter = counter + 1
  local id = base + tid * 100000000 + counter
  return wrk.format(nil, nil, nil, string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"invoice_submit","arguments":{"id":"INV-%d","domain":"invoice"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}',
    counter, id))
end
function response(status, headers, body)
  if status ~= 200 or not body:find('"isError":false', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("bad") or 0) end
  io.write(string.format("bad=%d\n", total))
end
