import { describe, expect, it } from 'vitest';
import { parseWgsl, validate } from 'naga-wasm';
import { checkKvCacheOption, kvCacheAccess, kvCacheWgsl, resolveKvCache, type KvCacheAccess } from './kv-format.js';
import { attentionWgsl, ropeKvWgsl } from './kv-shaders.js';
import { InvalidArgumentError } from '../../errors.js';

/**
 * naga (wgpu's WGSL front end and validator, as WebAssembly) checks every kernel variant that
 * touches the cache, the native f16 ones included, which SwiftShader (no shader-f16) cannot
 * even compile. naga 30 does not parse `enable subgroups;` (it validates the subgroup builtins
 * without it), so that one line is left out of what it sees.
 */
function nagaCheck(src: string): void {
  const m = parseWgsl(src.replace(/^enable subgroups;\n/m, ''));
  try {
    validate(m).free();
  } finally {
    m.free();
  }
}

const ACCESSES: KvCacheAccess[] = ['f32', 'packed', 'native'];

describe('kvCache option', () => {
  it('accepts auto, f16, f32 (undefined is auto); anything else is an InvalidArgumentError naming them', () => {
    expect(checkKvCacheOption(undefined)).toBe('auto');
    for (const v of ['auto', 'f16', 'f32'] as const) expect(checkKvCacheOption(v)).toBe(v);
    for (const bad of ['F16', 'fp16', 'bf16', 16, null, '']) {
      const e = (() => {
        try {
          checkKvCacheOption(bad);
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(e).toBeInstanceOf(InvalidArgumentError);
      expect((e as InvalidArgumentError).code).toBe('INVALID_ARGUMENT');
      expect((e as Error).message).toContain("'auto', 'f16', 'f32'");
    }
  });

  it('auto is f16 only with shader-f16; f16 and f32 are what they say on any device', () => {
    expect(resolveKvCache('auto', true)).toBe('f16');
    expect(resolveKvCache('auto', false)).toBe('f32');
    expect(resolveKvCache('f16', false)).toBe('f16');
    expect(resolveKvCache('f16', true)).toBe('f16');
    expect(resolveKvCache('f32', true)).toBe('f32');
    expect(resolveKvCache('f32', false)).toBe('f32');
  });

  it("auto stays f32 for the runq.c-exact W8A8 run, even with shader-f16; 'f16' is still obeyed", () => {
    expect(resolveKvCache('auto', true, true)).toBe('f32');
    expect(resolveKvCache('auto', false, true)).toBe('f32');
    expect(resolveKvCache('f16', true, true)).toBe('f16');
  });

  it('an f16 cache runs the native kernels with shader-f16, the packed ones without', () => {
    expect(kvCacheAccess('f16', true)).toBe('native');
    expect(kvCacheAccess('f16', false)).toBe('packed');
    expect(kvCacheAccess('f32', true)).toBe('f32');
    expect(kvCacheAccess('f32', false)).toBe('f32');
  });
});

describe('KV cache WGSL, validated by naga', () => {
  it('each variant declares the cache as it stores it', () => {
    const b = { k: 3, v: 4, write: true };
    expect(kvCacheWgsl('f32', b)).toMatch(/var<storage, read_write> KC: array<f32>/);
    const packed = kvCacheWgsl('packed', b);
    expect(packed).toMatch(/KC: array<u32>/);
    expect(packed).toContain('unpack2x16float');
    expect(packed).toContain('pack2x16float(x)');
    expect(packed).not.toContain('enable f16');
    const native = kvCacheWgsl('native', { ...b, write: false });
    expect(native.startsWith('enable f16;')).toBe(true);
    expect(native).toMatch(/var<storage, read> VC: array<f16>/);
    expect(native).not.toContain('Put2');
  });

  for (const access of ACCESSES) {
    it(`${access}: attention (workgroup, subgroup, exact), rope + kv write`, () => {
      const sources = [
        attentionWgsl('workgroup', access), attentionWgsl('subgroup', access), attentionWgsl('exact', access),
        ropeKvWgsl(access),
      ];
      for (const src of sources) {
        expect(src.includes('enable f16;')).toBe(access === 'native');
        expect(() => nagaCheck(src)).not.toThrow();
      }
    });
  }

  it('the validator rejects what is wrong: f16 without its enable, a half stored into an f32 cache', () => {
    const native = attentionWgsl('subgroup', 'native');
    expect(() => nagaCheck(native.replace('enable f16;', ''))).toThrow(/f16/);
    const bad = ropeKvWgsl('f32').replace('KC[i] = x.x;', 'KC[i] = pack2x16float(x);');
    expect(bad).not.toBe(ropeKvWgsl('f32'));
    expect(() => nagaCheck(bad)).toThrow();
  });
});
