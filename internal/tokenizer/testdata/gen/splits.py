"""Writes ../pretok/splits.json.gz: how Python's regex module (a
backtracking engine with lookahead and, in V1 mode, class intersection)
splits the conformance texts with each pre-tokenizer pattern the package
scans by hand, matches and the gaps between them in order. This is the only
reference for Kimi-K2's pattern, whose rank file no npm package ships.

    python3 splits.py ..
"""
import base64
import gzip
import json
import os
import sys

import regex

PATTERNS = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "cl100k": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "o200k": r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "kimi_k2": r"""[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "deepseek_cjk": "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "deepseek_main": "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
}


def isolated(rx, text):
    pieces, at = [], 0
    for m in rx.finditer(text):
        if m.start() > at:
            pieces.append(text[at:m.start()])
        if m.end() > m.start():
            pieces.append(m.group())
        at = m.end()
    if at < len(text):
        pieces.append(text[at:])
    return pieces


def main(testdata):
    with gzip.open(os.path.join(testdata, "o200k", "vectors.json.gz"), "rt") as f:
        texts = [base64.b64decode(v["text"]).decode("utf-8", "replace") for v in json.load(f)]
    texts += ["ǅungla ǅUNGLA Ǆx", "ſ 'ſ 'S x'ſ", "中文ABCdef中文ghi", "ÀBCdéf ÂB́Cdé", "1234567", "\u0301\u0301a", "a\u0301\u0301B"]
    out = {"texts": texts, "splits": {}}
    for name, pat in PATTERNS.items():
        rx = regex.compile(pat, regex.V1 if "&&" in pat else regex.V0)
        out["splits"][name] = [isolated(rx, t) for t in texts]
    os.makedirs(os.path.join(testdata, "pretok"), exist_ok=True)
    with gzip.open(os.path.join(testdata, "pretok", "splits.json.gz"), "wt", compresslevel=9) as f:
        json.dump(out, f, ensure_ascii=False)
    print(len(texts), "texts")


main(sys.argv[1])
