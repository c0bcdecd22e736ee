"""Writes ../chat/pystr.json.gz: how Python and Jinja2, set up as
transformers sets it up (chat.py's environment), treat every code point
in the string filters and methods chat templates use.

- space: every code point for which str.isspace() is true (what strip(),
  split() and Jinja2's trim remove or split at);
- assigned: ranges [first, last] of the code points assigned in this
  Python's Unicode version, so the Go test compares case mappings only
  where both know the character;
- upper, lower, title, capitalize: for every code point whose str method
  changes it, the result (full mappings: "ß".upper() is "SS");
- renders: for each expression of EXPRS, the template's render over each
  input: each whitespace or control code point c around words
  (c + "a" + c + "b c" + c), and strings where case depends on context
  (final sigma, titlecase digraphs, ligatures).

    python3 pystr.py ..
"""
import gzip
import json
import os
import sys
import unicodedata

from chat import environment

EXPRS = [
    "{{ s | trim }}",
    "{{ s | trim('a') }}",
    "{{ s.strip() }}",
    "{{ s.lstrip() }}",
    "{{ s.rstrip() }}",
    "{{ s.split() | join('|') }}",
    "{{ s.split(none, 1) | join('|') }}",
    "{{ s.isspace() }}",
    "{{ s | upper }}",
    "{{ s | lower }}",
    "{{ s | title }}",
    "{{ s | capitalize }}",
    "{{ s.upper() }}",
    "{{ s.lower() }}",
    "{{ s.title() }}",
    "{{ s.capitalize() }}",
    "{% filter trim %}{{ s }}{% endfilter %}",
    "{% filter upper %}{{ s }}{% endfilter %}",
]

# The whitespace and control ranges, code point by code point.
RANGES = [(0x00, 0x40), (0x7F, 0xA0), (0x1680, 0x1680), (0x180E, 0x180E), (0x2000, 0x2030),
          (0x205F, 0x2060), (0x3000, 0x3000), (0xFEFF, 0xFEFF)]

CONTEXT = [
    "ΟΔΟΣ", "ΟΔΟΣ ΟΔΟΣ.", "Σ", "ΑΣ", "ΑΣ'Α", "ΑΣ.", "Α.Σ", "ΑΣ\u0301", "ΑΣ\u0301Β", "Α\u0301Σ", "ΣΑ",
    "strasse STRASSE Straße", "ǆemal ǅemal Ǆemal", "ﬁnd ﬂow ﬃ", "İstanbul", "ŉ ǰ ΐ ΰ և ẖ ẗ ẘ ẙ ẚ",
    "ᾳ ῃ ῳ ᾀ", "hello-world (foo) [bar] {baz} <qux>", "o'neil mcdonald 3rd x2y", "ⓐⓑ ⓒ", "ǈ ǋ ǲ",
    "a\u00a0b\u2003c\u3000d", "\u1e9e", "ABC def", "", " ", "x\u0345y",
]


def main(testdata):
    env = environment()
    templates = [env.from_string(e) for e in EXPRS]
    inputs = []
    for lo, hi in RANGES:
        for c in range(lo, hi + 1):
            ch = chr(c)
            inputs.append(ch + "a" + ch + "b c" + ch)
    inputs += CONTEXT
    renders = [{"expr": e, "out": [t.render(s=s) for s in inputs]} for e, t in zip(EXPRS, templates)]
    space, assigned, maps = [], [], {k: {} for k in ["upper", "lower", "title", "capitalize"]}
    for c in range(0x110000):
        ch = chr(c)
        if ch.isspace():
            space.append(c)
        if unicodedata.category(ch) != "Cn":
            if assigned and assigned[-1][1] == c - 1:
                assigned[-1][1] = c
            else:
                assigned.append([c, c])
        if 0xD800 <= c <= 0xDFFF:
            continue
        for k, m in maps.items():
            out = getattr(ch, k)()
            if out != ch:
                m[str(c)] = out
    out = {"python": sys.version.split()[0], "unicode": unicodedata.unidata_version, "space": space,
           "assigned": assigned, **maps, "inputs": inputs, "renders": renders}
    # mtime=0 so the same vectors make the same bytes.
    with open(os.path.join(testdata, "chat", "pystr.json.gz"), "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps(out, ensure_ascii=False).encode())
    print(len(space), "spaces;", {k: len(m) for k, m in maps.items()}, len(inputs), "inputs")


if __name__ == "__main__":
    main(sys.argv[1])
