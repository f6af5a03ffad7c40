-- One hot instance: invoice_submit and invoice_reject in turn on the same invoice, each a
-- transition (draft -> review -> draft ...). Run with one connection: every request is a
-- transition that the previous one made possible (the tool alternates on each success).
local counter, threads, submit_next = 0, {}, true
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0; id = args[1] or "INV-7" end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
function request()
  counter = counter + 1
  local tool = submit_next and "invoice_submit" or "invoice_reject"
  wrk.headers["Mcp-Name"] = tool
  return wrk.format(nil, nil, nil, string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"id":"%s","domain":"invoice"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}',
    counter, tool, id))
end
function response(status, headers, body)
  if status ~= 200 or not body:find('"isError":false', 1, true) then
    bad = bad + 1
  else
    -- The transition happened: the other one is possible now.
    submit_next = not submit_next
  end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("bad") or 0) end
  io.write(string.format("bad=%d\n", total))
end
