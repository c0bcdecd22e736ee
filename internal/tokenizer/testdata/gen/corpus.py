"""Builds ../bench/corpus.txt.gz, the mixed benchmark corpus (1 MiB): English
prose (the GPL-3 and Apache-2.0 texts from /usr/share/common-licenses), Go
source with tabs (GOROOT/src/strings, BSD), Chinese and Spanish prose with
code from Rust by Example's translations (MIT/Apache-2.0, in a rustup
toolchain's docs), and the conformance texts (Arabic, emoji, digits,
whitespace). Each part is about a quarter of the bytes.

    python3 corpus.py ..   (GOROOT and RBE set to their directories)
"""
import glob
import gzip
import html
import os
import re
import sys

QUARTER = 1 << 18


def take(texts, n):
    out, size = [], 0
    for t in texts:
        if size >= n:
            break
        b = t.encode()[: n - size].decode("utf-8", "ignore")
        out.append(b)
        size += len(b.encode())
    return "".join(out)


def html_text(path):
    s = open(path, encoding="utf-8").read()
    s = re.sub(r"(?s)<(script|style|nav|head).*?</\1>", "", s)
    s = re.sub(r"<[^>]+>", "", s)
    return html.unescape(re.sub(r"\n\s*\n+", "\n\n", s))


def main(testdata):
    english = [open(f"/usr/share/common-licenses/{n}").read() for n in ["GPL-3", "Apache-2.0", "GPL-2", "LGPL-3"]]
    code = [open(f).read() for f in sorted(glob.glob(os.path.join(os.environ["GOROOT"], "src", "strings", "*.go")))]
    rbe = os.environ["RBE"]
    zh = [html_text(f) for f in sorted(glob.glob(os.path.join(rbe, "zh", "**", "*.html"), recursive=True))]
    es = [html_text(f) for f in sorted(glob.glob(os.path.join(rbe, "es", "**", "*.html"), recursive=True))]
    fixed = open(os.path.join(testdata, "gen", "vectors.js"), encoding="utf-8").read()
    fixed = fixed[fixed.index("const fixed"): fixed.index("const invalid")]
    corpus = take(english * 4, QUARTER) + take(code, QUARTER) + take(zh, QUARTER // 2) + take(es, QUARTER // 2)
    corpus += take([fixed] * 200, (1 << 20) - len(corpus.encode()))
    with gzip.open(os.path.join(testdata, "bench", "corpus.txt.gz"), "wt", encoding="utf-8", compresslevel=9) as f:
        f.write(corpus)
    print(len(corpus.encode()))


main(sys.argv[1])
