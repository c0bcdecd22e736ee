// Writes ../variants/variants.json.gz: the conformance texts encoded by the
// Rust Hugging Face tokenizers (npm "tokenizers") with real vocabularies
// but other components swapped in, to cover normalizers, pre-tokenizers,
// added-token flags, post-processors and decoders no shipped model uses
// together. Each variant names its base model and the top-level fields it
// replaces; the Go test applies the same patch. Run as vectors.js is run.
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Tokenizer } = require('tokenizers');
const { texts } = require('./texts.js');

const qwenSplit = {
  type: 'Split',
  pattern: { Regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  behavior: 'Isolated',
  invert: false,
};
const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };

function template(bos, eos) {
  return {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: eos, type_id: 0 } }],
    pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { [bos]: { id: bos, ids: [], tokens: [bos] }, [eos]: { id: eos, ids: [], tokens: [eos] } },
  };
}

const variants = [
  {
    name: 'metaspace_first', base: 'llama2',
    patch: { normalizer: null, pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false } },
  },
  {
    name: 'metaspace_always_split', base: 'llama2',
    patch: {
      normalizer: null,
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
      decoder: { type: 'Sequence', decoders: [{ type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true }, { type: 'ByteFallback' }, { type: 'Fuse' }] },
    },
  },
  {
    name: 'digits_nfkc', base: 'qwen3',
    patch: {
      normalizer: { type: 'NFKC' },
      pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: false }, qwenSplit, byteLevel] },
      post_processor: template('<|im_start|>', '<|im_end|>'),
    },
  },
  {
    name: 'gpt2_style_lowercase', base: 'qwen3',
    patch: {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'Lowercase' }, { type: 'Replace', pattern: { Regex: '\\t+' }, content: ' ' }, { type: 'Strip', strip_left: false, strip_right: true }] },
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    },
    added: { '<|im_start|>': { lstrip: true, rstrip: true }, '<think>': { single_word: true }, '</think>': { normalized: true, special: false } },
  },
  {
    name: 'split_behaviors', base: 'qwen3',
    patch: {
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
        { type: 'Split', pattern: { Regex: '[0-9]' }, behavior: 'MergedWithNext', invert: false },
        { type: 'Split', pattern: { Regex: '[.,!?]' }, behavior: 'Contiguous', invert: false },
        { type: 'Split', pattern: { String: '\n' }, behavior: 'Removed', invert: false },
        byteLevel] },
    },
  },
];

function patched(base, v) {
  const json = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(process.argv[2], base, 'tokenizer.json.gz'))).toString('utf8'));
  Object.assign(json, v.patch);
  for (const t of json.added_tokens) Object.assign(t, (v.added || {})[t.content] || {});
  const st = (json.post_processor || {}).special_tokens || {};
  for (const [content, s] of Object.entries(st)) s.ids = json.added_tokens.filter((t) => t.content === content).map((t) => t.id);
  return json;
}

async function main() {
  const out = [];
  for (const v of variants) {
    const tok = Tokenizer.fromString(JSON.stringify(patched(v.base, v)));
    const vectors = [];
    for (const buf of texts) {
      const text = buf.toString('utf8');
      const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      const special = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
      vectors.push({ text: buf.toString('base64'), ids, ids_special: special, decoded: await tok.decode(ids, false) });
    }
    out.push({ name: v.name, base: v.base, patch: v.patch, added: v.added || {}, vectors });
    console.log(v.name, vectors.length);
  }
  fs.mkdirSync(path.join(process.argv[2], 'variants'), { recursive: true });
  fs.writeFileSync(path.join(process.argv[2], 'variants', 'variants.json.gz'), zlib.gzipSync(JSON.stringify(out), { level: 9 }));
}
main();
