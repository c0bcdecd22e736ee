// The conformance texts every generator encodes: the cases the issue
// lists, invalid UTF-8, and a seeded mix of every character class the
// pre-tokenizer regexes tell apart, to exercise each alternative.
const fixed = [
  '',
  'Hello, world! This is a plain English sentence.',
  "I'm sure they'll say it's fine; we've DONE it, HE'S here, you'D know.",
  'func main() {\n\tfmt.Println("hi")   \n\t\treturn\n}\n\n\n',
  'def f(x):\n    return x  \n  \n\tpass\t\t\n',
  '1234567890123456789012345678901234567890 and 3.14159 and 1,000,000',
  '我爱自然语言处理。今天天气很好，我们去公园吧！',
  'ひらがなとカタカナ、そして漢字。한국어 문장도 있습니다.',
  'مرحبا بالعالم، هذه جملة عربية.',
  'Family: 👨‍👩‍👧‍👦, flags 🇫🇷🇩🇪, skin 👍🏽, heart ❤️‍🔥.',
  'Combining: e\u0301 a\u0300 n\u0303 \u0041\u030A o\u0308\u0304 and precomposed é.',
  '   ',
  '\n\n\n',
  ' \t \n \r\n  \t',
  'x   ',
  '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nok<|im_end|>',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>',
  '<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>ok<｜end▁of▁sentence｜>',
  '<s>[INST] hi [/INST] ok</s><unk>',
  '<|endoftext|> text <|endofprompt|>',
  'Ünïcödé ÀÉÎÕÜ straße ǅ ǈ Σίσυφος ΣΊΣΥΦΟΣ',
  'URL: https://example.com/a/b?c=d&e=f#g; path C:\\Users\\x\\file.txt',
  '    indented    with    many     spaces    between   ',
  'a'.repeat(300) + ' ' + '9'.repeat(100) + ' ' + '!'.repeat(50),
  'CamelCaseWordsAndUPPERCASEWordsMixedWithlowercase XMLHttpRequest',
  'tab\tseparated\tvalues\t\t\nline2\t\n',
  '\u00a0non-breaking\u2003em space\u3000ideographic space',
  'math: ∑ᵢ xᵢ² ≤ ∞, ½ ⅓ ², ①②③, ٣٤٥, १२३',
];
const invalid = [
  Buffer.from([0x61, 0xff, 0x62]),
  Buffer.from([0xe2, 0x82, 0x20, 0xc3]),
  Buffer.from([0xf0, 0x9f, 0x98, 0x20, 0xed, 0xa0, 0x80, 0x41]),
  Buffer.from([0xc0, 0xaf, 0xe0, 0x80, 0xbf, 0xf4, 0x90, 0x80, 0x80, 0x7a]),
];

let seed = 12345;
function rand(n) { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; }
const atoms = [' ', ' ', ' ', '  ', '\t', '\n', '\r\n', '\r', '\u00a0', 'a', 'b', 'Z', 'Q', 'x', 'É', 'é', 'ß',
  "'s", "'S", "'ll", "'LL", "'d", "'", 'ǅ', 'ʰ', '0', '7', '42', '٣', '½', '²', '.', ',', '!', '?', '-', '_', '/', '//',
  '(', ')', '{', '}', '$', '€', '^', '`', '"', '中', '文', '字', 'ひ', 'カ', 'ー', '한', 'ا', 'ب', '\u0301', '\u0308',
  '\u200d', '😀', '👍🏽', '🇫', '\u3000', 'ｱ', '𝔸', '\u0903', 'ा', '\u2028', '\x0b', '\x0c', '\x85', '<|im_start|>',
  '<|endoftext|>', '<s>', '</s>', '<|eot_id|>', '<｜User｜>', '▁', 'hello', 'World', ' the', 'ing'];
const random = [];
for (let i = 0; i < 300; i++) {
  let s = '';
  const n = 1 + rand(24);
  for (let j = 0; j < n; j++) s += atoms[rand(atoms.length)];
  random.push(s);
}

const texts = [...fixed.map((s) => Buffer.from(s, 'utf8')), ...invalid, ...random.map((s) => Buffer.from(s, 'utf8'))];

module.exports = { texts };
