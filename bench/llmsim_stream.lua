-- wrk script for bench/llmsim_scale.sh: every connection posts streaming chat
-- completions back to back (keep-alive). MAX_TOKENS comes from the environment.
local n = os.getenv("MAX_TOKENS") or "64"
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"bench","stream":true,"max_tokens":' .. n ..
           ',"messages":[{"role":"user","content":"Benchmark the simulator, please."}]}'

local bad = 0
function response(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end

function done(summary, latency, requests)
  io.write(string.format("wrk: streams=%d errors(connect=%d read=%d write=%d status=%d timeout=%d) " ..
    "duration_p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n",
    summary.requests, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.status, summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
