"""The Python baseline for BenchmarkGenerate_RequestsPerSecond: an asyncio +
aiohttp client sending the same prompts with 1,000 in flight to the same
simulated server and appending each answer to a JSONL file (the usual
hand-written script), on each path the benchmark measures: chat, chat
streaming, SGLang's /generate and /generate streaming. The benchmark runs it
after eaglet on each case; by hand, with Debian's python3-aiohttp:

    eaglet sim-server -addr 127.0.0.1:30000 -mean-tokens 50 &
    /usr/bin/python3 stages/generate/testdata/aiohttp_client.py http://127.0.0.1:30000 20000 openai /tmp/out.jsonl

It prints one JSON line: requests answered, wall seconds, and the CPU
seconds (user and system) the process used while sending them.
"""
import asyncio
import json
import os
import sys
import time

import aiohttp


def prompt(i):
    return f"Question number {i}: explain idea {i * 7} in detail."


async def sse(r):
    """Yields the JSON events of a server-sent-event stream until [DONE]."""
    async for line in r.content:
        if not line.startswith(b"data: "):
            continue
        payload = line[6:].strip()
        if payload == b"[DONE]":
            break
        yield json.loads(payload)


async def chat(session, base, i, stream):
    body = {"model": "sim", "max_tokens": 256, "messages": [{"role": "user", "content": prompt(i)}]}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    async with session.post(base + "/v1/chat/completions", json=body) as r:
        if r.status != 200:
            return None
        if not stream:
            data = await r.json()
            return data["choices"][0]["message"]
        content, finish, usage = [], None, None
        async for event in sse(r):
            for ch in event.get("choices") or []:
                content.append((ch.get("delta") or {}).get("content") or "")
                finish = ch.get("finish_reason") or finish
            usage = event.get("usage") or usage
        return {"content": "".join(content), "finish_reason": finish, "usage": usage}


async def sglang(session, base, i, stream):
    body = {"text": prompt(i), "sampling_params": {"max_new_tokens": 256}}
    if stream:
        body["stream"] = True
    async with session.post(base + "/generate", json=body) as r:
        if r.status != 200:
            return None
        if not stream:
            return await r.json()
        last = None
        async for last in sse(r):  # SGLang streams the text so far
            pass
        return last


async def main(base, n, mode, out_path, inflight=1000):
    ask = {"openai": (chat, False), "openai-stream": (chat, True),
           "sglang": (sglang, False), "sglang-stream": (sglang, True)}[mode]
    sem = asyncio.Semaphore(inflight)
    out = open(out_path, "w")
    conn = aiohttp.TCPConnector(limit=inflight)
    done = 0
    async with aiohttp.ClientSession(connector=conn) as session:
        async def one(i):
            nonlocal done
            async with sem:
                for _ in range(5):
                    try:
                        answer = await ask[0](session, base, i, ask[1])
                        if answer is not None:
                            out.write(json.dumps({"i": i, "answer": answer}) + "\n")
                            done += 1
                            return
                    except aiohttp.ClientError:
                        pass
        cpu0, start = time.process_time(), time.time()
        await asyncio.gather(*(one(i) for i in range(n)))
        took, cpu = time.time() - start, time.process_time() - cpu0
    out.close()
    print(json.dumps({"requests": done, "seconds": took, "cpu_seconds": cpu}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1].rstrip("/"), int(sys.argv[2]), sys.argv[3], sys.argv[4]))
