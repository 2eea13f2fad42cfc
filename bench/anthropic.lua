-- wrk script: POST one small non-streamed chat request in the API BENCH_API says
-- ("openai": /v1/chat/completions, "anthropic": /v1/messages) for model BENCH_MODEL.
local api = os.getenv("BENCH_API") or "openai"
local model = os.getenv("BENCH_MODEL") or "chat"
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"' .. model .. '","max_tokens":16,"system":"You are brief.",' ..
  '"messages":[{"role":"user","content":"Say something short about spillways."}]}'
if api == "openai" then
  wrk.path = "/v1/chat/completions"
  wrk.body = '{"model":"' .. model .. '","max_tokens":16,"messages":[{"role":"system","content":"You are brief."},' ..
    '{"role":"user","content":"Say something short about spillways."}]}'
else
  wrk.path = "/v1/messages"
end
