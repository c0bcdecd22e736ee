"""Writes ../chat/answer_args.json: a server's tool-call answer rendered
as transformers renders the row handoff writes for it, by Python Jinja2
(chat.py's environment). The server's arguments text is given as that
string to templates that print a string as it is (Qwen3 tests
`arguments is string`) or concatenate it (DeepSeek-V3), and as the object
json.loads makes of it to the others (gpt-oss, which prints `|tojson`).

    python3 chat_answer.py ..
"""
import json
import os
import re
import sys

from chat import config, environment, special, NOW

TESTS_STRING = re.compile(r"""\barguments\b['"]?\]?\s+is\s+string\b""")
CONCATS_ARGS = re.compile(r"""\+\s*[\w.\[\]'"]*\barguments\b['"]?\]?\s*[+}]|\barguments\b['"]?\]?\s*\+""")

TEMPLATES = {"qwen3": ("qwen3", None), "deepseek_v3": ("deepseek_v3", None), "gpt_oss": ("gpt_oss", "gpt_oss.jinja")}

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
         {"type": "function", "function": {"name": "search", "description": "Search the web.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]

# The servers' arguments text: compact (ollama), spaced (vLLM's json.dumps),
# with HTML characters and non-ASCII, as an OpenAI-compatible server sends it.
CASES = [
    {"name": "compact", "calls": [["get_weather", '{"city":"Zürich","days":2}']]},
    {"name": "spaced", "calls": [["get_weather", '{"city": "Paris", "days": 1}']]},
    {"name": "html_and_two_calls", "calls": [["search", '{"q":"a<b && c>d"}'], ["get_weather", '{"days":3,"city":"Oslo"}']]},
]


def main(testdata):
    out = {"now": NOW.isoformat(), "tools": TOOLS, "cases": CASES, "renders": []}
    for name, (model, file) in TEMPLATES.items():
        cfg = config(testdata, model)
        source = cfg.get("chat_template")
        if file:
            with open(os.path.join(testdata, "chat", file)) as f:
                source = f.read()
        as_text = bool(TESTS_STRING.search(source) or CONCATS_ARGS.search(source))
        tmpl = environment().from_string(source)
        extra = {k: special(cfg, k) for k in ["bos_token", "eos_token"] if special(cfg, k)}
        for case in CASES:
            calls = [{"id": "call_%d" % i, "type": "function",
                      "function": {"name": n, "arguments": a if as_text else json.loads(a)}}
                     for i, (n, a) in enumerate(case["calls"])]
            msgs = [{"role": "user", "content": "Weather in the cities I asked about?"},
                    {"role": "assistant", "content": None if "content'] is none" in source else "", "tool_calls": calls}]
            out["renders"].append({"template": name, "model": model, "case": case["name"], "args_text": as_text,
                                   "prompt": tmpl.render(messages=msgs[:1], tools=TOOLS, add_generation_prompt=True, **extra),
                                   "text": tmpl.render(messages=msgs, tools=TOOLS, add_generation_prompt=False, **extra)})
    with open(os.path.join(testdata, "chat", "answer_args.json"), "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
