-- wrk script: POST one streamed /v1/messages request whose user message is a
-- 1 KB JSON object (llmsim --reply echo streams it back). BENCH_TOOL=1 forces
-- a tool with an input_schema (the output contract judges the streamed tool
-- input); otherwise the same text streams back as a text block (not judged).
local tool = os.getenv("BENCH_TOOL") == "1"
local answer = '{\\"name\\":\\"' .. string.rep("a", 1000) .. '\\",\\"age\\":36}'
wrk.method = "POST"
wrk.path = "/v1/messages"
wrk.headers["Content-Type"] = "application/json"
local tools = ""
if tool then
  tools = '"tools":[{"name":"record_person","input_schema":{"type":"object",' ..
    '"properties":{"name":{"type":"string","minLength":1},"age":{"type":"integer","minimum":0}},' ..
    '"required":["name","age"],"additionalProperties":false}}],' ..
    '"tool_choice":{"type":"tool","name":"record_person"},'
end
wrk.body = '{"model":"m","max_tokens":1000,"stream":true,' .. tools ..
  '"messages":[{"role":"user","content":"' .. answer .. '"}]}'
