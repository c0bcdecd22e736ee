"""The issue's baseline: load -> cap -> filter -> merge as a short script.

Reads a messages-shaped JSONL file, keys each record by a hash of its
content, keeps the max_samples best by a seeded hash of the key, keeps those
whose prompt is longer than 40 characters, shuffles by another seeded hash
and writes JSONL. Everything is held in memory; nothing is checkpointed.
BenchmarkPipeline_LoadCapFilterMerge runs it on the same file.

    python3 pipeline_baseline.py IN.jsonl OUT.jsonl MAX_SAMPLES
"""
import hashlib, json, sys

def h(seed, key):
    return hashlib.blake2b(b"%d\0%s" % (seed, key.encode()), digest_size=8).digest()

src, dst, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
recs = {}
with open(src) as f:
    for line in f:
        msgs = json.loads(line)["messages"]
        key = hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()[:32]
        recs.setdefault(key, {"key": key, "dataset": "d", "messages": msgs})
kept = sorted(recs, key=lambda k: h(1, k))[:cap]
kept = [k for k in kept if sum(len(m["content"]) for m in recs[k]["messages"] if m["role"] == "user") > 40]
with open(dst, "w") as f:
    for k in sorted(kept, key=lambda k: h(2, k)):
        f.write(json.dumps(recs[k]) + "\n")
