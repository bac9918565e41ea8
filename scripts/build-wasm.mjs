// Compiles each WAT module below into a TS file beside it holding the bytes as base64
// (src/collective/simd-sum.wat → simd-sum-wasm.ts, src/cpu/kernels.wat → kernels-wasm.ts), so the
// library needs no WebAssembly toolchain at build or run time. Each module's unit test recompiles
// its WAT and fails if the committed bytes have drifted.
//
// A WAT source may use a few macros, expanded before wabt parses it (`expandWat`):
// - `;;@include name.wat` on a line of its own: that file (beside the source), inlined.
// - `(MADD a b c)`: a·b + c on f32x4, `f32x4.relaxed_madd` in the relaxed variant, mul then add in
//   the plain SIMD128 one; so one source gives both modules.
// - `;;@each-dtype` … `;;@end`: the lines between, once for f32 and once for f16 weights, with
//   `@DT@` the dtype's name, `@WB8@`/`@WB1@` the bytes of 8 / 1 weights,
//   `(WLOAD8 $lo $hi ptr)` eight weights at ptr into two f32x4 locals (halves widened; the
//   function declares $hv $hl $hh as v128 scratch) and `(WLOAD1 ptr)` one weight as an f32.
// - `(IDOT a b c d)`: the products a·b and c·d of int8 lanes (b's and d's each 0..63), summed into
//   i32x4 lanes: relaxed SIMD's i8 × i7 dot (i16 pair sums, exact for such b and d) in the relaxed
//   variant, i16 dot products in the plain one; the lanes' total is the same.
// - `(IDOT1 a b)`: the same for the one product a·b.
// - `(IDOT16 a b c d)`: IDOT's products summed into i16x8 lanes instead, four a lane (relaxed:
//   the two i8 × i7 dots added; plain: the i16 products of the low and high halves added).
// - `;;@relaxed-only` … `;;@end-relaxed`: the lines between, in the relaxed variant only.
// - `;;@simd-only` … `;;@end-simd`: the lines between, in the plain SIMD128 variant only.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import wabtInit from 'wabt';

/** The module variants a source with MADD compiles to. */
export const VARIANTS = ['simd', 'relaxed'];

/** Replaces every `(NAME args…)` in s by f(args), args split at the top level of parentheses. */
function expandCalls(s, name, f) {
  const open = `(${name} `;
  let out = '';
  for (let at = s.indexOf(open); at >= 0; at = s.indexOf(open)) {
    out += s.slice(0, at);
    let depth = 0;
    let end = at;
    for (; end < s.length; end++) {
      if (s[end] === '(') depth++;
      else if (s[end] === ')' && --depth === 0) break;
    }
    const args = [];
    let cur = '';
    depth = 0;
    for (const ch of s.slice(at + open.length, end)) {
      if (ch === '(') depth++;
      if (ch === ')') depth--;
      if (depth === 0 && /\s/.test(ch)) {
        if (cur) args.push(cur);
        cur = '';
      } else cur += ch;
    }
    if (cur) args.push(cur);
    out += f(args.map((a) => expandCalls(a, name, f)));
    s = s.slice(end + 1);
  }
  return out + s;
}

const splat = (type, v) => `(v128.const ${type} ${Array(type === 'i16x8' ? 8 : 4).fill(v).join(' ')})`;

/**
 * Eight halves at ptr as two f32x4 (low four, high four). Each half h becomes the f32 bits
 * sign | (h & 0x7fff) << 13, built in i16 lanes (high word: h >>s 3 with the sign's copies cleared;
 * low word: h << 13) and interleaved, then scaled by 2^112: exact for every finite half,
 * subnormals included. Inf and NaN (never a weight) come out finite.
 */
function load8h(lo, hi, ptr) {
  const words = (pattern) => `(i8x16.shuffle ${pattern} (local.get $hl) (local.get $hh))`;
  const scale = (v) => `(f32x4.mul ${v} ${splat('f32x4', '0x1p112')})`;
  return `(local.set $hv (v128.load ${ptr}))
      (local.set $hl (i16x8.shl (local.get $hv) (i32.const 13)))
      (local.set $hh (v128.and (i16x8.shr_s (local.get $hv) (i32.const 3)) ${splat('i16x8', '0x8fff')}))
      (local.set ${lo} ${scale(words('0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23'))})
      (local.set ${hi} ${scale(words('8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31'))})`;
}

const DTYPES = {
  f32: {
    WB8: 32, WB1: 4,
    load8: (lo, hi, ptr) => `(local.set ${lo} (v128.load ${ptr})) (local.set ${hi} (v128.load offset=16 ${ptr}))`,
    load1: (ptr) => `(f32.load ${ptr})`,
  },
  f16: { WB8: 16, WB1: 2, load8: load8h, load1: (ptr) => `(call $h2f ${ptr})` },
};

/** The WAT of `variant` ('simd' or 'relaxed') with the macros above expanded. */
export function expandWat(source, variant = 'simd') {
  const each = /;;@each-dtype\n([\s\S]*?);;@end\n/g;
  source = source.replace(/;;@relaxed-only\n([\s\S]*?);;@end-relaxed\n/g, (_, body) => (variant === 'relaxed' ? body : ''));
  source = source.replace(/;;@simd-only\n([\s\S]*?);;@end-simd\n/g, (_, body) => (variant === 'relaxed' ? '' : body));
  let s = source.replace(each, (_, body) => Object.entries(DTYPES).map(([dt, d]) => {
    let b = body.replaceAll('@DT@', dt).replaceAll('@WB8@', String(d.WB8)).replaceAll('@WB1@', String(d.WB1));
    b = expandCalls(b, 'WLOAD8', ([lo, hi, ptr]) => d.load8(lo, hi, ptr));
    return expandCalls(b, 'WLOAD1', ([ptr]) => d.load1(ptr));
  }).join(''));
  const dot16 = (half, a, b) => `(i32x4.dot_i16x8_s (i16x8.extend_${half}_i8x16_s ${a}) (i16x8.extend_${half}_i8x16_s ${b}))`;
  s = expandCalls(s, 'IDOT', ([a, b, c, d]) => (variant === 'relaxed'
    ? `(i32x4.extadd_pairwise_i16x8_s (i16x8.add (i16x8.relaxed_dot_i8x16_i7x16_s ${a} ${b}) (i16x8.relaxed_dot_i8x16_i7x16_s ${c} ${d})))`
    : `(i32x4.add (i32x4.add ${dot16('low', a, b)} ${dot16('high', a, b)}) (i32x4.add ${dot16('low', c, d)} ${dot16('high', c, d)}))`));
  const mul16 = (a, b) => `(i16x8.add (i16x8.extmul_low_i8x16_s ${a} ${b}) (i16x8.extmul_high_i8x16_s ${a} ${b}))`;
  s = expandCalls(s, 'IDOT16', ([a, b, c, d]) => (variant === 'relaxed'
    ? `(i16x8.add (i16x8.relaxed_dot_i8x16_i7x16_s ${a} ${b}) (i16x8.relaxed_dot_i8x16_i7x16_s ${c} ${d}))`
    : `(i16x8.add ${mul16(a, b)} ${mul16(c, d)})`));
  s = expandCalls(s, 'IDOT1', ([a, b]) => (variant === 'relaxed'
    ? `(i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s ${a} ${b}))`
    : `(i32x4.add ${dot16('low', a, b)} ${dot16('high', a, b)})`));
  s = expandCalls(s, 'MADD', ([a, b, c]) => (variant === 'relaxed' ? `(f32x4.relaxed_madd ${a} ${b} ${c})` : `(f32x4.add (f32x4.mul ${a} ${b}) ${c})`));
  return s;
}

export async function compileWat(path, variant = 'simd') {
  const wabt = await wabtInit();
  const source = readFileSync(path, 'utf8').replace(/^;;@include (\S+)$/gm, (_, name) => readFileSync(resolve(dirname(path), name), 'utf8'));
  const wat = expandWat(source, variant);
  const mod = wabt.parseWat(path, wat, { simd: true, relaxed_simd: variant === 'relaxed', threads: true, bulk_memory: true, multi_value: true });
  // WebAssembly.Module validates the bytes (the test instantiates them); wabt's own validator
  // does not take the threads feature from parseWat and rejects the shared memory.
  try {
    return Buffer.from(mod.toBinary({}).buffer);
  } finally {
    mod.destroy();
  }
}

/** Each module: its WAT, the generated TS file and, per variant it is built in, its exported base64 constant. */
const MODULES = [
  { wat: '../src/collective/simd-sum.wat', out: '../src/collective/simd-sum-wasm.ts', names: { simd: 'SIMD_SUM_WASM_BASE64' } },
  {
    wat: '../src/cpu/kernels.wat', out: '../src/cpu/kernels-wasm.ts',
    names: { simd: 'CPU_KERNELS_WASM_BASE64', relaxed: 'CPU_KERNELS_RELAXED_WASM_BASE64' },
  },
  { wat: '../src/cli/page/wasm-read.wat', out: '../src/cli/page/wasm-read-wasm.ts', names: { simd: 'WASM_READ_BASE64' } },
  { wat: '../src/cpu/quant.wat', out: '../src/cpu/quant-wasm.ts', names: { simd: 'CPU_QUANT_WASM_BASE64', relaxed: 'CPU_QUANT_RELAXED_WASM_BASE64' } },
  { wat: '../src/cpu/w8a8.wat', out: '../src/cpu/w8a8-wasm.ts', names: { simd: 'W8A8_WASM_BASE64' } },
  {
    wat: '../src/cpu/gemm.wat', out: '../src/cpu/gemm-wasm.ts',
    names: { simd: 'CPU_GEMM_WASM_BASE64', relaxed: 'CPU_GEMM_RELAXED_WASM_BASE64' },
  },
  {
    wat: '../src/cli/page/fma-peak.wat', out: '../src/cli/page/fma-peak-wasm.ts',
    names: { simd: 'FMA_PEAK_WASM_BASE64', relaxed: 'FMA_PEAK_RELAXED_WASM_BASE64' },
  },
  {
    wat: '../src/cpu/qgemm.wat', out: '../src/cpu/qgemm-wasm.ts',
    names: { simd: 'CPU_QGEMM_WASM_BASE64', relaxed: 'CPU_QGEMM_RELAXED_WASM_BASE64' },
  },
  {
    wat: '../src/cli/page/dot-peak.wat', out: '../src/cli/page/dot-peak-wasm.ts',
    names: { simd: 'DOT_PEAK_WASM_BASE64', relaxed: 'DOT_PEAK_RELAXED_WASM_BASE64' },
  },
  { wat: '../src/cpu/kquant.wat', out: '../src/cpu/kquant-wasm.ts', names: { simd: 'CPU_KQUANT_WASM_BASE64', relaxed: 'CPU_KQUANT_RELAXED_WASM_BASE64' } },
  { wat: '../src/cpu/panel.wat', out: '../src/cpu/panel-wasm.ts', names: { simd: 'CPU_PANEL_WASM_BASE64', relaxed: 'CPU_PANEL_RELAXED_WASM_BASE64' } },
];

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const m of MODULES) {
    const wat = fileURLToPath(new URL(m.wat, import.meta.url));
    const out = fileURLToPath(new URL(m.out, import.meta.url));
    const source = m.wat.slice(m.wat.lastIndexOf('/') + 1);
    let ts = `// Generated by scripts/build-wasm.mjs from ${source} (npm run build:wasm); do not edit.\n`;
    for (const [variant, name] of Object.entries(m.names)) {
      const bytes = await compileWat(wat, variant);
      ts += `export const ${name} =\n  '${bytes.toString('base64')}';\n`;
      console.log(`${out} (${variant}): ${bytes.length} bytes`);
    }
    writeFileSync(out, ts);
  }
}
