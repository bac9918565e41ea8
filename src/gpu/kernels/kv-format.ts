/**
 * The KV cache's number format, and the WGSL through which every kernel that touches the cache
 * reads or writes it. Pure (no GPU calls), so the selection and the generated WGSL are
 * unit-tested in Node (kv-format.test.ts, with a real WGSL validator).
 *
 * An f16 cache halves the cache's bytes and the bandwidth attention spends reading it. Its
 * values are always halves, two per 32-bit word, low half first (the same bytes as WGSL's
 * `array<f16>`), whichever kernel variant runs:
 * - `packed`: the words are `u32`, written with `pack2x16float` and read with `unpack2x16float`
 *   (core WGSL): runs on every adapter, SwiftShader included.
 * - `native`: `enable f16;` and an `array<f16>` binding; only on a device with `shader-f16`.
 * Arithmetic stays f32 in both: attention loads a half and computes in f32, as with an f32 cache.
 */
import { InvalidArgumentError } from '../../errors.js';

/** The engine option: `auto` is f16 where the device has `shader-f16`, f32 elsewhere. */
export type KvCacheOption = 'auto' | 'f16' | 'f32';
export const KV_CACHE_OPTIONS: readonly KvCacheOption[] = ['auto', 'f16', 'f32'];

/** What the cache stores. */
export type KvCacheDtype = 'f16' | 'f32';

/** How kernels reach the cache: f32 values, f16 halves in u32 words, or native f16. */
export type KvCacheAccess = 'f32' | 'packed' | 'native';

/** The option as given, or an InvalidArgumentError naming the valid values. */
export function checkKvCacheOption(v: unknown): KvCacheOption {
  if (v === undefined) return 'auto';
  if (typeof v === 'string' && (KV_CACHE_OPTIONS as readonly string[]).includes(v)) return v as KvCacheOption;
  throw new InvalidArgumentError(
    `kvCache must be one of ${KV_CACHE_OPTIONS.map((o) => `'${o}'`).join(', ')}, got ${JSON.stringify(v)}`,
    "Pass kvCache: 'auto' (f16 where the device has shader-f16), 'f16' or 'f32'",
  );
}

/**
 * `auto` stores f16 only where the device can also compute on it natively (`shader-f16`), so a
 * device without it keeps the f32 cache and bit-for-bit f32 results by default; `f16` forces
 * the packed halves anywhere. `exact` (the runq.c-exact W8A8 run, whose point is runq.c's floats
 * bit for bit, with its f32 cache) keeps `auto` at f32 everywhere.
 */
export function resolveKvCache(option: KvCacheOption, shaderF16: boolean, exact = false): KvCacheDtype {
  return option === 'auto' ? (shaderF16 && !exact ? 'f16' : 'f32') : option;
}

/** The kernel variant for a cache of `dtype` on a device with or without `shader-f16`. */
export function kvCacheAccess(dtype: KvCacheDtype, shaderF16: boolean): KvCacheAccess {
  if (dtype === 'f32') return 'f32';
  return shaderF16 ? 'native' : 'packed';
}

export function kvBytesPerValue(dtype: KvCacheDtype): number {
  return dtype === 'f16' ? 2 : 4;
}

export interface KvCacheBindings {
  /** Binding numbers (group 0) of the K and V caches in the kernel. */
  k: number;
  v: number;
  /** Writers (`read_write`, with kPut2/vPut2) or readers (`read`). */
  write: boolean;
}

/**
 * The bindings `KC`, `VC` and their accessors for one variant. Readers call `kAt(i)`/`vAt(i)`
 * (value i of the layer's cache, as f32) or `kAt2(i)`/`vAt2(i)` (values i and i + 1, i even: one
 * unpack for both in a packed cache); writers call `kPut2(i, x)`/`vPut2(i, x)`, which store
 * values i and i + 1 (i even: one word of a packed cache, so invocations never share a word).
 */
export function kvCacheWgsl(access: KvCacheAccess, b: KvCacheBindings): string {
  const mode = b.write ? 'read_write' : 'read';
  const decl = (name: string, binding: number, elem: string) => `@group(0) @binding(${binding}) var<storage, ${mode}> ${name}: array<${elem}>;`;
  const elem = access === 'f32' ? 'f32' : access === 'packed' ? 'u32' : 'f16';
  const lines = [
    ...(access === 'native' ? ['enable f16;'] : []),
    `// KV cache (${access === 'f32' ? 'f32' : access === 'packed' ? 'f16 halves packed two per u32' : 'native f16'}), from src/gpu/kernels/kv-format.ts.`,
    decl('KC', b.k, elem),
    decl('VC', b.v, elem),
  ];
  for (const [c, X] of [['k', 'KC'], ['v', 'VC']] as const) {
    if (access === 'f32') {
      lines.push(`fn ${c}At(i: u32) -> f32 { return ${X}[i]; }`);
      lines.push(`fn ${c}At2(i: u32) -> vec2<f32> { return vec2<f32>(${X}[i], ${X}[i + 1u]); }`);
    } else if (access === 'packed') {
      lines.push(`fn ${c}At(i: u32) -> f32 { return unpack2x16float(${X}[i >> 1u])[i & 1u]; }`);
      lines.push(`fn ${c}At2(i: u32) -> vec2<f32> { return unpack2x16float(${X}[i >> 1u]); }`);
    } else {
      lines.push(`fn ${c}At(i: u32) -> f32 { return f32(${X}[i]); }`);
      lines.push(`fn ${c}At2(i: u32) -> vec2<f32> { return vec2<f32>(f32(${X}[i]), f32(${X}[i + 1u])); }`);
    }
    if (!b.write) continue;
    if (access === 'f32') lines.push(`fn ${c}Put2(i: u32, x: vec2<f32>) { ${X}[i] = x.x; ${X}[i + 1u] = x.y; }`);
    else if (access === 'packed') lines.push(`fn ${c}Put2(i: u32, x: vec2<f32>) { ${X}[i >> 1u] = pack2x16float(x); }`);
    else lines.push(`fn ${c}Put2(i: u32, x: vec2<f32>) { ${X}[i] = f16(x.x); ${X}[i + 1u] = f16(x.y); }`);
  }
  return lines.join('\n') + '\n';
}
