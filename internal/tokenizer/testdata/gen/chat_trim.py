"""Writes ../chat/trim_llama3.json: Llama 3's chat template, whose `| trim`
is Python's str.strip(), rendered by Python Jinja2 (chat.py's environment)
over chat rows whose text starts and ends with the code points Python
strips and Go's strings.TrimSpace keeps (U+001C..U+001F), next to ones
both strip (U+0085, U+00A0, U+3000) and ones neither does (U+200B, U+FEFF).
Rows reach the template as chat_hf.py gives them.

    python3 chat_trim.py ..
"""
import json
import os
import sys

from chat import config, environment, special
from chat_hf import message

SEP = "\x1c\x1d\x1e\x1f"
ROWS = [
    {"name": "user_separators", "messages": [{"role": "user", "content": SEP + "What is 2+2?" + SEP[::-1]}]},
    {"name": "system_mixed_space", "messages": [
        {"role": "system", "content": "\x1f \u0085\u00a0Be brief.\u3000\x1c\n"},
        {"role": "user", "content": "\u200bHi\ufeff\x1e"}]},
    {"name": "answer_separators", "messages": [
        {"role": "user", "content": "Capital of France?\x1d"},
        {"role": "assistant", "content": "\x1ePari\x1fs.\x1f"},
        {"role": "user", "content": "\x1c\x1cAnd Japan?"}]},
]


def main(testdata):
    cfg = config(testdata, "llama3")
    tmpl = environment().from_string(cfg["chat_template"])
    extra = {k: special(cfg, k) for k in ["bos_token", "eos_token"] if special(cfg, k)}
    renders = []
    for row in ROWS:
        for gen in [False, True]:
            msgs = [message(m, (False, False, False)) for m in row["messages"]]
            renders.append({"case": row["name"], "add_generation_prompt": gen,
                            "text": tmpl.render(messages=msgs, tools=None, add_generation_prompt=gen, **extra)})
    with open(os.path.join(testdata, "chat", "trim_llama3.json"), "w") as f:
        json.dump({"model": "llama3", "rows": ROWS, "renders": renders}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
