-- One transition per request, each on an invoice of its own: invoice_submit (draft -> review)
-- on ids no request used before. Sessionless (MCP 2026-07-28). Counts non-successes as bad.
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
