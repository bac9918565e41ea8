import { describe, expect, it } from 'vitest';
import { NagaError, parseWgsl, validate } from 'naga-wasm';
import { f16EmbedWgsl, f16KernelsFor, f16MatmulWgsl, type F16Kernels } from './f16-shaders.js';

/**
 * The f16 gate. SwiftShader, this repo's only adapter, has no shader-f16, so the native kernels
 * cannot even be compiled in its browser tests: their WGSL is checked here by naga (wgpu's
 * shader compiler, as WebAssembly), which implements `enable f16`.
 */
function check(code: string): void {
  const module = parseWgsl(code);
  try {
    validate(module).free();
  } finally {
    module.free();
  }
}

function errorOf(code: string): string {
  try {
    check(code);
  } catch (e) {
    if (e instanceof NagaError) return e.message;
    throw e;
  }
  return '';
}

describe('f16 kernel selection', () => {
  it('native kernels exactly when the device has shader-f16', () => {
    expect(f16KernelsFor(new Set(['shader-f16', 'subgroups', 'timestamp-query']))).toBe('native');
    expect(f16KernelsFor(new Set(['shader-f16']))).toBe('native');
    expect(f16KernelsFor(new Set(['subgroups', 'timestamp-query']))).toBe('packed');
    expect(f16KernelsFor(new Set())).toBe('packed');
  });
});

describe('f16 kernels\' WGSL, validated by naga', () => {
  const kinds: F16Kernels[] = ['packed', 'native'];

  it('matmul and embedding modules of both variants are valid (x read as vec4 or as floats)', () => {
    for (const kind of kinds) {
      for (const vec4X of [true, false]) check(f16MatmulWgsl(kind, vec4X));
      check(f16EmbedWgsl(kind));
    }
  });

  it('only the native modules say `enable f16`, as their first line, and declare f16 storage', () => {
    for (const kind of kinds) {
      for (const code of [f16MatmulWgsl(kind, true), f16EmbedWgsl(kind)]) {
        expect(code.split('\n')[0] === 'enable f16;', kind).toBe(kind === 'native');
        expect(/array<(vec4<)?f16>?>/.test(code), kind).toBe(kind === 'native');
      }
    }
  });

  it('the validator is no rubber stamp: it rejects f16 without `enable f16`, and a type error', () => {
    const native = f16MatmulWgsl('native', true);
    expect(errorOf(native.replace('enable f16;', ''))).toMatch(/f16/);
    // f16 into an f32 sum without a conversion
    expect(errorOf(native.replace('return vec4<f32>(W[i]);', 'return W[i];'))).not.toBe('');
    expect(errorOf(f16MatmulWgsl('packed', true).replace('unpack2x16float(v.y)', 'v.y'))).not.toBe('');
  });
});
