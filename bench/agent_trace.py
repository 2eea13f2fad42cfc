#!/usr/bin/env python3
"""What a coding agent sends: the request bodies of one multi-turn conversation.

Every turn resends the whole conversation so far (a system prompt of about
6 KB and the agent's tools: 16 with about 26 KB of descriptions and schemas, as Claude
Code sends them, or 6 (10 KB) and the hosted web search in the Responses shape, as
Codex does; then per turn: the user's message, the assistant's tool call, the tool's
result: a source file or a command's output) and adds one turn. Bodies run
from about 20-40 KB (turn 1) to about 400 KB (turn 50). Deterministic from the
seed; no personal data, unless --plant asks for it.

  bench/agent_trace.py --out DIR [--seed 7] [--turns 50] [--only 2,10,50]
                       [--shape openai|anthropic|claude|responses] [--stream] [--plant TURN]

writes DIR/turn_NNN.json for each turn (or the --only ones) and prints
"turn bytes new_bytes path" per file (new_bytes: what the turn added to the
previous one's messages).

--shape openai: a chat-completions body (messages, tool_calls, role "tool");
anthropic: a Messages body (system, tool_use and tool_result blocks); claude: the same
with extended thinking on, as Claude Code sends it ("thinking" enabled and the
context_management edit that goes with it, each assistant turn starting with its
thinking block and signature); responses: a Responses body
(instructions, message, function_call and function_call_output items, as Codex sends
them).
--stream adds "stream": true.
--plant TURN: from that turn's body on, the first user message's copy has one
byte changed so that it holds an e-mail address ("...#..." becomes
"...@..."): the case a scan-verdict cache must not miss."""
import argparse
import json
import os
import random

WORDS = ("the build fails after the refactor of the parser so we check each caller and "
         "update the tests before the release branch is cut while keeping the public "
         "interface stable for every client that links the library today and tomorrow "
         "error handling paths return early when the buffer is full or the input ends").split()
IDENT = ("buf len cap off node tree walk scan span item next prev head tail count total "
         "state ctx err out src dst key val map list pool slot").split()


def prose(rng, n_words):
    out = []
    for i in range(n_words):
        w = rng.choice(WORDS)
        out.append(w.capitalize() if i == 0 or out[-1].endswith(".") else w)
        if rng.random() < 0.08:
            out[-1] += "."
    return " ".join(out) + "."


def code_file(rng, n_funcs):
    lines = ["/* generated module: no personal data */", "#include <stddef.h>", ""]
    for f in range(n_funcs):
        a, b, c = rng.sample(IDENT, 3)
        lines += [
            f"static int {a}_{b}_{f}(struct {c} *{a}, size_t {b})",
            "{",
            f"    if (!{a} || {b} == 0)",
            "        return -1;",
            f"    for (size_t i = 0; i < {b}; i++)",
            f"        {a}->{c} += i % {rng.randint(2, 9)};",
            f"    return {a}->{c} > {rng.randint(10, 99)} ? 1 : 0;",
            "}",
            "",
        ]
    return "\n".join(lines)


def system_prompt(rng):
    rules = [f"Rule {i + 1}: {prose(rng, 40)}" for i in range(12)]
    return "You are a coding agent working in a repository.\n" + "\n".join(rules)


def turn_parts(rng, t):
    user = f"Turn {t}: {prose(rng, rng.randint(60, 160))}"
    if t == 1:
        user += " Send the report to build.lead#corp-mail.example when done."
    call_id = f"call_{t:04d}"
    path = f"src/mod_{t:03d}.c"
    result = code_file(rng, rng.randint(25, 50)) if t % 3 else \
        "\n".join(f"test_{rng.choice(IDENT)}_{i} ... {'ok' if rng.random() < .9 else 'FAILED'}"
                  for i in range(rng.randint(90, 180)))
    return user, call_id, path, result


def openai_messages(system, turns):
    msgs = [{"role": "system", "content": system}]
    for user, call_id, path, result in turns:
        msgs.append({"role": "user", "content": user})
        msgs.append({"role": "assistant", "content": None,
                     "tool_calls": [{"id": call_id, "type": "function",
                                     "function": {"name": "read_file",
                                                  "arguments": json.dumps({"path": path})}}]})
        msgs.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return msgs


def thinking_block(user, path):
    """The model's reasoning before its tool call, made of the turn's own words (so the
    other shapes' bodies do not change), and a signature of the length Anthropic's have."""
    text = f"The user asks: {user[:400]} I should read {path} first and check its callers."
    sig = "".join("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[
        (ord(c) * 7 + i) % 64] for i, c in enumerate((path * 40)[:344]))
    return {"type": "thinking", "thinking": text, "signature": sig}


def anthropic_messages(turns, thinking=False):
    msgs = []
    for user, call_id, path, result in turns:
        tid = "toolu_" + call_id[5:]
        if msgs:    # after a tool result: the user's next words in the same message
            msgs[-1]["content"].append({"type": "text", "text": user})
        else:
            msgs.append({"role": "user", "content": [{"type": "text", "text": user}]})
        msgs.append({"role": "assistant", "content": ([thinking_block(user, path)] if thinking else []) + [
            {"type": "tool_use", "id": tid, "name": "read_file", "input": {"path": path}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": result}]})
    return msgs


def responses_input(turns):
    items = []
    for user, call_id, path, result in turns:
        items.append({"role": "user", "content": [{"type": "input_text", "text": user}]})
        items.append({"type": "function_call", "call_id": call_id, "name": "read_file",
                      "arguments": json.dumps({"path": path})})
        items.append({"type": "function_call_output", "call_id": call_id, "output": result})
    return items


# A coding agent's tools, sent whole with every turn: Claude Code sends about 16 with
# descriptions of up to a few KB (about 26 KB in all), Codex about 6. Their own seed, so
# the conversation is the same with or without them.
TOOL_NAMES = ("read_file", "run_shell", "edit_file", "write_file", "grep", "glob", "list_dir",
              "todo_write", "web_fetch", "task", "notebook_edit", "multi_edit", "exit_plan",
              "web_search", "todo_read", "notebook_read")
CODEX_TOOLS = 6


def agent_tools(seed):
    rng = random.Random(seed * 1000 + 17)
    tools = []
    for name in TOOL_NAMES:
        props = {"path": {"type": "string", "description": prose(rng, rng.randint(8, 20))}}
        for k in rng.sample(IDENT, rng.randint(1, 4)):
            props[k] = {"type": rng.choice(("string", "integer", "boolean")),
                        "description": prose(rng, rng.randint(8, 30))}
        desc = "\n\n".join(prose(rng, rng.randint(30, 90)) for _ in range(rng.randint(1, 5)))
        tools.append({"name": name, "description": desc,
                      "schema": {"type": "object", "properties": props, "required": ["path"],
                                 "additionalProperties": False}})
    return tools


def tools_for(shape, tools):
    if shape == "openai":
        return [{"type": "function", "function": {
            "name": t["name"], "description": t["description"], "parameters": t["schema"]}}
            for t in tools]
    if shape == "responses":    # and the hosted web search Codex asks for
        return [{"type": "function", "name": t["name"], "description": t["description"],
                 "parameters": t["schema"], "strict": False}
                for t in tools[:CODEX_TOOLS]] + [{"type": "web_search"}]
    return [{"name": t["name"], "description": t["description"], "input_schema": t["schema"]}
            for t in tools]


def body(shape, system, turns, stream, tools):
    if shape == "openai":
        b = {"model": "chat", "messages": openai_messages(system, turns),
             "tools": tools_for(shape, tools), "max_tokens": 1024}
    elif shape == "responses":
        b = {"model": "chat", "instructions": system, "input": responses_input(turns),
             "tools": tools_for(shape, tools), "max_output_tokens": 1024}
    else:
        b = {"model": "chat", "system": system,
             "messages": anthropic_messages(turns, shape == "claude"),
             "tools": tools_for(shape, tools), "max_tokens": 1024}
        if shape == "claude":   # and the thinking edits Claude Code asks for with it
            b["thinking"] = {"type": "enabled", "budget_tokens": 4096}
            b["context_management"] = {"edits": [{"type": "clear_thinking_20251015",
                                                   "keep": "all"}]}
    if stream:
        b["stream"] = True
    return json.dumps(b, separators=(",", ":"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--only", default="")
    ap.add_argument("--shape", choices=("openai", "anthropic", "claude", "responses"),
                    default="openai")
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--plant", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    system = system_prompt(rng)
    tools = agent_tools(a.seed)
    only = {int(x) for x in a.only.split(",") if x}
    os.makedirs(a.out, exist_ok=True)
    turns, prev = [], 0
    for t in range(1, a.turns + 1):
        turns.append(turn_parts(rng, t))
        use = list(turns)
        if a.plant and t >= a.plant:
            u = use[0]
            use[0] = (u[0].replace("build.lead#corp-mail", "build.lead@corp-mail"),) + u[1:]
        text = body(a.shape, system, use, a.stream, tools)
        added = len(text) - prev
        prev = len(text)
        if only and t not in only:
            continue
        path = os.path.join(a.out, f"turn_{t:03d}.json")
        with open(path, "w") as f:
            f.write(text)
        print(t, len(text), added, path)


if __name__ == "__main__":
    main()
