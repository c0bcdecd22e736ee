"""Renders the conformance vectors in ../chat/hf/ for chat rows as users
give them to transformers' apply_chat_template and to OpenAI-compatible
servers (../chat/hf_cases.json: content a string, null or a list of text
parts; reasoning_content, reasoning or thinking; tools wrapped or flat;
tool-call arguments a string or an object), with Python Jinja2 set up as
transformers sets it up (chat.py's environment: sandboxed, trim_blocks,
lstrip_blocks, loopcontrols, tojson with ensure_ascii=False,
raise_exception, strftime_now pinned to 2026-03-14 15:09:26).

Each row reaches the template as eaglet's contract says (internal/tokenizer/
README.md), written here from that description, not from the Go code:
- reasoning under any of its three names is given as both
  reasoning_content and thinking;
- content null is None for templates that test content against none
  (`message['content'] is none`, DeepSeek-V3) and "" for the others,
  which would fail on None (`'</think>' in content`), as vLLM gives them;
  a list of several text parts stays a list for
  templates that iterate content (`for x in message['content']`, Gemma 3)
  and is joined with "\\n" for the others, as vLLM does; one part is its
  text;
- tool-call arguments are an object, except for templates that concatenate
  them as a string (DeepSeek-V3), which get the text as given (or the
  compact JSON of an object);
- tools are {"type": "function", "function": {name, description, parameters}}.

    python3 chat_hf.py ..          # writes ../chat/hf/<template>.json (text only)
    NODE_PATH=... node chat_ids.js .. chat/hf   # adds the reference token ids
"""
import json
import os
import re
import sys

from chat import NOW, config, environment, special

ITERATES_CONTENT = re.compile(r"""for\s+\w+\s+in\s+\w+(\.content|\[\s*['"]content['"]\s*\])""")
TESTS_NONE = re.compile(r"""(\.|\[['"])content['"]?\]?\s+is\s+(not\s+)?none""")
CONCATS_ARGS = re.compile(r"""\+\s*[\w.\[\]'"]*\barguments\b['"]?\]?\s*[+}]|\barguments\b['"]?\]?\s*\+""")

# template name -> (tokenizer dir, source file or None for the config's, kwargs sets)
TEMPLATES = {
    "qwen3": ("qwen3", None, [{}, {"enable_thinking": False}, {"enable_thinking": True}]),
    "llama3": ("llama3", None, [{}]),
    "deepseek_v3": ("deepseek_v3", None, [{}]),
    # Gemma 3's template over Llama 2's tokenizer, whose <s> stands in for
    # Gemma's BOS (its 5.4 MB tokenizer is not committed).
    "gemma3": ("llama2", "gemma3.jinja", [{}]),
    "gpt_oss": ("gpt_oss", "gpt_oss.jinja", [{}, {"reasoning_effort": "high"}, {"reasoning_effort": "low", "model_identity": "You are a careful assistant."}]),
}


def content(raw, parts_list, none):
    if raw is None:
        return None if none else ""
    if isinstance(raw, str):
        return raw
    texts = [p if isinstance(p, str) else p.get("text", "") for p in raw]
    if len(texts) == 1:
        return texts[0]
    if parts_list:
        return [{"type": "text", "text": t} for t in texts]
    return "\n".join(texts)


def arguments(raw, as_text):
    if as_text:
        return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, separators=(",", ":"))
    return json.loads(raw) if isinstance(raw, str) else raw


def message(m, form):
    parts_list, args_text, none = form
    d = {"role": m["role"], "content": content(m.get("content"), parts_list, none)}
    reasoning = m.get("reasoning_content") or m.get("reasoning") or m.get("thinking")
    if reasoning:
        d["reasoning_content"] = reasoning
        d["thinking"] = reasoning
    if m.get("tool_calls"):
        calls = []
        for c in m["tool_calls"]:
            fn = c.get("function", c)
            call = {}
            if c.get("id"):
                call["id"] = c["id"]
            call["type"] = "function"
            call["function"] = {"name": fn["name"], "arguments": arguments(fn.get("arguments", {}), args_text)}
            calls.append(call)
        d["tool_calls"] = calls
    for k in ["tool_call_id", "name"]:
        if m.get(k):
            d[k] = m[k]
    return d


def tool(t):
    f = t.get("function", t)
    fn = {"name": f["name"]}
    if f.get("description"):
        fn["description"] = f["description"]
    if "parameters" in f:
        fn["parameters"] = f["parameters"]
    return {"type": "function", "function": fn}


def main(testdata):
    with open(os.path.join(testdata, "chat", "hf_cases.json")) as f:
        cases = json.load(f)
    os.makedirs(os.path.join(testdata, "chat", "hf"), exist_ok=True)
    for name, (model, file, kwargs_sets) in TEMPLATES.items():
        cfg = config(testdata, model)
        source = cfg.get("chat_template")
        if file:
            with open(os.path.join(testdata, "chat", file)) as f:
                source = f.read()
        form = bool(ITERATES_CONTENT.search(source)), bool(CONCATS_ARGS.search(source)), bool(TESTS_NONE.search(source))
        tmpl = environment().from_string(source)
        extra = {k: special(cfg, k) for k in ["bos_token", "eos_token", "pad_token", "unk_token"] if special(cfg, k)}
        out = []
        for kwargs in kwargs_sets:
            for case in cases:
                for gen in [False, True]:
                    msgs = [message(m, form) for m in case["messages"]]
                    tools = [tool(t) for t in case.get("tools", [])] or None
                    entry = {"case": case["name"], "add_generation_prompt": gen, "kwargs": kwargs}
                    try:
                        entry["text"] = tmpl.render(messages=msgs, tools=tools, add_generation_prompt=gen, **extra, **kwargs)
                    except Exception as e:
                        entry["error"] = "%s: %s" % (type(e).__name__, e)
                    out.append(entry)
        with open(os.path.join(testdata, "chat", "hf", name + ".json"), "w") as f:
            json.dump({"model": model, "template": name, "now": NOW.isoformat(),
                       "form": dict(zip(["parts_list", "args_text", "none"], form)), "renders": out}, f, ensure_ascii=False, indent=1)
        print(name, len(out), sum("error" in r for r in out), "errors")


if __name__ == "__main__":
    main(sys.argv[1])
