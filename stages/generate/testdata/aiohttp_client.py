"""The Python baseline for BenchmarkGenerate_RequestsPerSecond: an asyncio +
aiohttp client sending the same chat requests with 1,000 in flight to the
same simulated server and appending each answer to a JSONL file (the usual
hand-written script). Run with Debian's python3-aiohttp:

    eaglet sim-server -addr 127.0.0.1:30000 &
    /usr/bin/python3 stages/generate/testdata/aiohttp_client.py http://127.0.0.1:30000/v1 20000
"""
import asyncio
import json
import sys
import time

import aiohttp


async def main(base, n, inflight=1000):
    sem = asyncio.Semaphore(inflight)
    out = open("/tmp/aiohttp_out.jsonl", "w")
    conn = aiohttp.TCPConnector(limit=inflight)
    async with aiohttp.ClientSession(connector=conn) as session:
        async def one(i):
            body = {"model": "sim", "max_tokens": 256, "messages": [
                {"role": "user", "content": f"Question number {i}: explain idea {i * 7} in detail."}]}
            async with sem:
                for _ in range(5):
                    try:
                        async with session.post(base + "/chat/completions", json=body) as r:
                            if r.status == 200:
                                data = await r.json()
                                out.write(json.dumps({"i": i, "answer": data["choices"][0]["message"]}) + "\n")
                                return
                    except aiohttp.ClientError:
                        pass
        start = time.time()
        await asyncio.gather(*(one(i) for i in range(n)))
        took = time.time() - start
    out.close()
    print(f"{n} requests in {took:.1f}s: {n / took:.0f} requests/s")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
