-- wrk script for bench/proxy.sh: POST the chat request in $BENCH_BODY
-- (default bench/chat-1k.json), non-streaming, on keep-alive connections.
local f = assert(io.open(os.getenv("BENCH_BODY") or "bench/chat-1k.json", "rb"))
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = f:read("*a")
f:close()
