// Adds to each render in ../chat/<template>.json (or, given a second
// argument such as chat/hf, in that folder's files) the token ids the Rust
// Hugging Face tokenizers (npm "tokenizers") gives its text, special
// tokens not added (templates hold them). See chat.py and chat_hf.py.
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Tokenizer } = require('tokenizers');

async function main(testdata, sub) {
  const dir = path.join(testdata, sub || 'chat');
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.json') && !f.endsWith('cases.json'))) {
    const file = path.join(dir, f);
    const v = JSON.parse(fs.readFileSync(file, 'utf8'));
    const json = zlib.gunzipSync(fs.readFileSync(path.join(testdata, v.model, 'tokenizer.json.gz'))).toString('utf8');
    const tok = Tokenizer.fromString(json);
    for (const r of v.renders) {
      if (r.text !== undefined) r.ids = (await tok.encode(r.text, null, { addSpecialTokens: false })).getIds();
    }
    fs.writeFileSync(file, JSON.stringify(v, null, 1));
    console.log(f, v.renders.length);
  }
}
main(process.argv[2], process.argv[3]);
