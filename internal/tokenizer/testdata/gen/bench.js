// Reference encode throughput on the same corpus and documents as
// BenchmarkEncode (tokenizer/bench_test.go): npm tiktoken (Rust tiktoken
// as WASM) and npm tokenizers (Rust Hugging Face tokenizers, N-API).
// Run as vectors.js is run; prints MB/s and tokens/s, best of 3 rounds.
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { get_encoding } = require('tiktoken');
const { Tokenizer } = require('tokenizers');

const testdata = process.argv[2];
const corpus = zlib.gunzipSync(fs.readFileSync(path.join(testdata, 'bench', 'corpus.txt.gz'))).toString('utf8');
const size = Buffer.byteLength(corpus);
const docs = [];
let cur = '';
for (const line of corpus.split(/(?<=\n)/)) {
  cur += line;
  if (Buffer.byteLength(cur) >= 4096) {
    docs.push(cur);
    cur = '';
  }
}
if (cur) docs.push(cur);

function report(name, seconds, tokens, bytes = size) {
  console.log(`${name.padEnd(34)} ${(bytes / seconds / 1e6).toFixed(2).padStart(7)} MB/s ${(tokens / seconds / 1e6).toFixed(2).padStart(6)} Mtokens/s`);
}

async function best(fn) {
  let min = Infinity;
  let tokens = 0;
  for (let r = 0; r < 3; r++) {
    const t0 = process.hrtime.bigint();
    tokens = await fn();
    min = Math.min(min, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return [min, tokens];
}

async function main() {
  for (const enc of ['o200k_base', 'cl100k_base']) {
    const e = get_encoding(enc);
    const [s, n] = await best(() => docs.reduce((acc, d) => acc + e.encode(d, 'all').length, 0));
    report(`tiktoken ${enc}`, s, n);
  }
  for (const model of ['qwen3', 'llama3', 'deepseek_v3', 'gpt4o']) {
    const json = zlib.gunzipSync(fs.readFileSync(path.join(testdata, model, 'tokenizer.json.gz'))).toString('utf8');
    const t0 = process.hrtime.bigint();
    const tok = Tokenizer.fromString(json);
    console.log(`tokenizers ${model} load (from string)   ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0)} ms`);
    const [s, n] = await best(async () => {
      let acc = 0;
      for (const d of docs) acc += (await tok.encode(d, null, { addSpecialTokens: false })).getIds().length;
      return acc;
    });
    report(`tokenizers ${model}`, s, n);
    const [sb, nb] = await best(async () => (await tok.encodeBatch(docs, { addSpecialTokens: false })).reduce((a, e) => a + e.getIds().length, 0));
    report(`tokenizers ${model} encodeBatch (all cores)`, sb, nb);
  }
  const e = get_encoding('o200k_base');
  for (const [name, unit] of [['letters', 'a'], ['digits', '7'], ['spaces', ' ']]) {
    const text = unit.repeat(100000);
    const t0 = process.hrtime.bigint();
    const n = e.encode(text).length;
    report(`tiktoken o200k 100 kB of ${name}`, Number(process.hrtime.bigint() - t0) / 1e9, n, text.length);
  }
}
main();
