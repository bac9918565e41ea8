// Decode tokens/s of an f32 llama2.c model and of its q4_0 layout (test-support/model/q4-layout.ts), both
// through window.tp.q4engine (same plan, worker group and scheduler), taking turns for `rounds`
// rounds at TP 1. Needs `npm run build`. Usage:
//   node scripts/q4-decode.mjs MODEL.bin TOKENIZER.bin [rounds=3] [tokens=64]
import { openHarness } from '../dist/cli/browser.js';

const [modelPath, tokPath, rounds = '3', tokens = '64'] = process.argv.slice(2);
if (!modelPath || !tokPath) {
  console.error('usage: node scripts/q4-decode.mjs MODEL.bin TOKENIZER.bin [rounds] [tokens]');
  process.exit(2);
}
const h = await openHarness({ bench: true, path: '/test-support/page/index.html' });
try {
  const model = h.server.mountFile('/files/q4-decode/model.bin', modelPath);
  const tokenizer = h.server.mountFile('/files/q4-decode/tok.bin', tokPath);
  const rates = { f32: [], q4_0: [] };
  for (let r = 0; r < Number(rounds); r++) {
    for (const [kind, keepF32] of [['f32', 'all'], ['q4_0', []]]) {
      const out = await h.page.evaluate((o) => window.tp.q4engine.greedy(o), { model, tokenizer, tp: 1, maxTokens: Number(tokens), ignoreEos: true, keepF32 });
      if ('error' in out) throw new Error(JSON.stringify(out.error));
      rates[kind].push(+out.decodeTokensPerS.toFixed(2));
    }
  }
  const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
  console.log(JSON.stringify({ rates, median: { f32: median(rates.f32), q4_0: median(rates.q4_0) }, ratio: +(median(rates.q4_0) / median(rates.f32)).toFixed(2) }));
} finally {
  await h.close();
}
