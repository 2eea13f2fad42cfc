-- wrk script: bench/chat.lua's request with a client key (BENCH_KEY).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("BENCH_KEY") or "sk-bench")
wrk.body = '{"model":"chat","max_tokens":16,"messages":[{"role":"user","content":"Say something short about spillways."}]}'
