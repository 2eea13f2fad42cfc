-- wrk script: POST a small non-streaming chat completion.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"MODEL","max_tokens":16,"messages":[{"role":"user","content":"Say something short about spillways."}]}'
wrk.body = wrk.body:gsub("MODEL", os.getenv("BENCH_MODEL") or "chat")
