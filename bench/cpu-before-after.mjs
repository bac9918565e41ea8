// CPU ranks before/after in one run: two harnesses, BEFORE's app build (e.g. the base commit's
// `dist/app`, built in a copy of it) and this checkout's, the same cases interleaved round by
// round (order alternating), plus the WebAssembly read roofline. An engine's speed is fixed at
// load and the first loaded is the slow one (bench/NOTES.md, h/f32gap), so every round reloads
// both builds' engines, the build loaded first alternating. After `npm run build`:
//   BEFORE=/tmp/old/dist/app flock /tmp/cpu.lock node bench/cpu-before-after.mjs [rounds] [max-tokens]
// SYNTH: the synth stories110M + tok32000 folder (default /tmp/synth). Raw JSON in $OUT.
import { openHarness, appDir } from '../dist/cli/browser.js';
import { mountInput } from '../dist/cli/generate.js';
import { writeFileSync } from 'node:fs';
const rounds = +(process.argv[2] ?? 3), maxTokens = +(process.argv[3] ?? 32);
const SYNTH = process.env.SYNTH ?? '/tmp/synth';
if (!process.env.BEFORE) throw new Error('set BEFORE to the app build to compare with');
const builds = { before: process.env.BEFORE, after: appDir };
const cases = [{ tp: 1, batch: 1 }, { tp: 2, batch: 1 }, { tp: 1, batch: 8 }, { tp: 2, batch: 8 }];
const hs = {};
for (const [k, root] of Object.entries(builds)) hs[k] = await openHarness({ bench: true, root });
const out = { rounds: [], read: [] };
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
try {
  const opt = {};
  for (const [k, h] of Object.entries(hs)) {
    const model = mountInput(h, 'model', `${SYNTH}/stories110M-synth.bin`);
    const tokenizer = mountInput(h, 'tokenizer', `${SYNTH}/tok32000-synth.bin`);
    opt[k] = (c) => ({ model, tokenizer, tp: c.tp, devices: 'cpu', prompt: 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.', temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, maxBatch: 8, keepEngines: 2, timeoutMs: 600000 });
  }
  const warm = async (order) => {
    for (const k of order) {
      await hs[k].page.evaluate(() => window.tp.engine.disposeAll());
      for (const c of cases.filter((c) => c.batch === 1)) await hs[k].page.evaluate((o) => window.tp.engine.generate({ ...o, maxTokens: 4 }), opt[k](c));
    }
  };
  const run = async (k, c) => {
    const h = hs[k], o = { ...opt[k](c), maxTokens };
    if (c.batch === 1) { const r = await h.page.evaluate((o) => window.tp.engine.generate(o), o); if (r.error) throw new Error(JSON.stringify(r.error)); return { tokps: r.timings.decode_tokens_per_s, breakdown: r.stats.ranks.map((x) => x.breakdown) }; }
    const reqs = Array.from({ length: c.batch }, () => ({ prompt: o.prompt, maxTokens }));
    const r = await h.page.evaluate(([o, q]) => window.tp.engine.timedConcurrent(o, q), [o, reqs]);
    if (r.error) throw new Error(JSON.stringify(r.error));
    return { tokps: r.decodeTokens / (r.decodeMs / 1000), breakdown: r.stats.ranks.map((x) => x.breakdown) };
  };
  const bytes = await hs.after.page.evaluate((b) => window.tp.cpu.openRead(b), 438042624);
  for (let r = 0; r < rounds; r++) {
    await warm(r % 2 ? ['after', 'before'] : ['before', 'after']);
    const row = {};
    for (const c of cases) {
      const order = (r + cases.indexOf(c)) % 2 ? ['after', 'before'] : ['before', 'after'];
      for (const k of order) { row[`${k} tp${c.tp} b${c.batch}`] = await run(k, c); console.error(r, k, c, row[`${k} tp${c.tp} b${c.batch}`].tokps.toFixed(1)); }
    }
    out.read.push(await hs.after.page.evaluate((n) => window.tp.cpu.measureRead(n), 5));
    out.rounds.push(row);
  }
  await hs.after.page.evaluate(() => window.tp.cpu.closeRead());
  out.bytes = bytes;
} finally { for (const h of Object.values(hs)) await h.close(); }
writeFileSync(process.env.OUT ?? '/tmp/cpu-before-after.json', JSON.stringify(out));
// Summary: medians over rounds, ratios per round then median.
const keys = Object.keys(out.rounds[0]);
for (const k of keys) console.log(k.padEnd(18), 'tok/s', med(out.rounds.map((r) => r[k].tokps)).toFixed(1), 'rounds', out.rounds.map((r) => r[k].tokps.toFixed(1)).join('/'), 'allreduce ms', med(out.rounds.map((r) => r[k].breakdown[0].allreduce_ms)).toFixed(2), 'compute ms', med(out.rounds.map((r) => r[k].breakdown[0].compute_ms)).toFixed(2));
const one = med(out.read.flatMap((x) => x.one_ms)), two = med(out.read.flatMap((x) => x.two_ms));
const roof = 1000 / two;
console.log(`read ${out.bytes} B: one thread ${(out.bytes / one / 1e6).toFixed(1)} GB/s, two ${(out.bytes / two / 1e6).toFixed(1)} GB/s (x${(one / two).toFixed(2)}); roofline ${roof.toFixed(1)} tok/s`);
const ratio = (a, b) => med(out.rounds.map((r) => r[a].tokps / r[b].tokps)).toFixed(2);
for (const k of ['before', 'after']) console.log(k, 'tp2/tp1 b1', ratio(`${k} tp2 b1`, `${k} tp1 b1`), 'tp2 b8/b1', ratio(`${k} tp2 b8`, `${k} tp2 b1`), 'tp1 b8/b1', ratio(`${k} tp1 b8`, `${k} tp1 b1`), 'tp2 b1 vs roofline', (med(out.rounds.map((r) => r[`${k} tp2 b1`].tokps)) / roof).toFixed(2));
for (const c of cases) console.log(`after/before tp${c.tp} b${c.batch}`, ratio(`after tp${c.tp} b${c.batch}`, `before tp${c.tp} b${c.batch}`));
