-- wrk script: `tools/call echo` in a loop over pre-initialized sessions (SESSIONS, comma
-- separated, or SESSIONS_FILE, a file of them, for more than an environment variable holds;
-- empty for servers without sessions) on PATH. BODY replaces the request and CHECK the text a
-- reply must hold. Replies are sampled for that text; the summary is one JSON line on stdout.
local path = os.getenv("BENCH_PATH") or "/mcp"
local listed = os.getenv("SESSIONS") or ""
local file = os.getenv("SESSIONS_FILE")
if file then
  local f = io.open(file, "r")
  listed = f:read("*a")
  f:close()
end
local sessions = {}
for id in string.gmatch(listed, "[^,%s]+") do sessions[#sessions + 1] = id end
local body = os.getenv("BODY") or '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench-echo"}}}'
local check = os.getenv("CHECK") or '"message":"bench-echo"'
-- EXTRA_HEADERS: `Name: value` lines sent with every request (a caller's Authorization).
local extra = {}
for line in string.gmatch(os.getenv("EXTRA_HEADERS") or "", "[^\n]+") do
  local name, value = string.match(line, "^([^:]+):%s*(.*)$")
  if name then extra[name] = value end
end
local threads = {}
local counter = 0
mismatches = 0
seen = 0

function setup(thread)
  thread:set("offset", #threads)
  table.insert(threads, thread)
end

function request()
  counter = counter + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2025-06-18",
  }
  for name, value in pairs(extra) do headers[name] = value end
  if #sessions > 0 then
    headers["Mcp-Session-Id"] = sessions[((counter * 7 + (offset or 0)) % #sessions) + 1]
  end
  return wrk.format("POST", path, headers, body)
end

function response(status, headers, reply)
  -- Every 16th reply is checked for the echoed text.
  seen = seen + 1
  if seen % 16 == 0 and (status ~= 200 or not string.find(reply, check, 1, true)) then
    mismatches = mismatches + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do bad = bad + (thread:get("mismatches") or 0) end
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d,"non2xx":%d,"socket_errors":%d,"mismatches":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, bad))
end
