// Writes ../o200k/o200k_base.tiktoken.gz, the standard tiktoken rank file
// (base64 token, space, rank per line) rebuilt from npm tiktoken's compact
// encoder, and ../o200k/vectors.json.gz: reference ids from npm tiktoken
// (the Rust tiktoken as WASM) with every special token allowed, over the
// texts of vectors.js. Run as vectors.js is run.
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { get_encoding } = require('tiktoken');
const { texts } = require('./texts.js');

const out = path.join(process.argv[2], 'o200k');
fs.mkdirSync(out, { recursive: true });

const data = require('tiktoken/encoders/o200k_base.json');
const lines = [];
for (const line of data.bpe_ranks.split('\n')) {
  const parts = line.split(' ');
  const offset = Number(parts[1]);
  for (let i = 2; i < parts.length; i++) lines.push(`${parts[i]} ${offset + i - 2}`);
}
fs.writeFileSync(path.join(out, 'o200k_base.tiktoken.gz'), zlib.gzipSync(lines.join('\n') + '\n', { level: 9 }));

const enc = get_encoding('o200k_base');
const td = new TextDecoder();
const vectors = texts.map((buf) => {
  const text = buf.toString('utf8');
  const ids = Array.from(enc.encode(text, 'all'));
  return { text: buf.toString('base64'), ids, ids_special: ids, decoded: td.decode(enc.decode(Uint32Array.from(ids))) };
});
fs.writeFileSync(path.join(out, 'vectors.json.gz'), zlib.gzipSync(JSON.stringify(vectors), { level: 9 }));
console.log('o200k', lines.length, vectors.length);
