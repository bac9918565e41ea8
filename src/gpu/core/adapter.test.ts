import { describe, expect, it } from 'vitest';
import { adapterKey, adapterName, backendOf, checkDeviceSpec, identityOf, isSoftwareAdapter, matchesFilter, requestAdapterFor } from './adapter.js';
import { AdapterNotFoundError, InvalidArgumentError } from '../../errors.js';

const fakeAdapter = (vendor: string, architecture: string, isFallbackAdapter = false) =>
  ({ info: { vendor, architecture, device: '', description: '', isFallbackAdapter } }) as unknown as GPUAdapter;

/** A browser with a discrete GPU (high-performance), an integrated one (default, low-power) and a CPU fallback. */
function fakeGpu(asked: unknown[]): GPU {
  const nvidia = fakeAdapter('nvidia', 'ampere');
  const intel = fakeAdapter('intel', 'gen-12lp');
  const cpu = fakeAdapter('google', 'swiftshader', true);
  return {
    requestAdapter: async (o?: GPURequestAdapterOptions) => {
      asked.push(o ?? 'default');
      if (o?.forceFallbackAdapter) return cpu;
      return o?.powerPreference === 'high-performance' ? nvidia : intel;
    },
  } as unknown as GPU;
}

describe('device specs', () => {
  it('tells a GPU from an adapter that computes on the CPU', () => {
    expect(isSoftwareAdapter(identityOf(fakeAdapter('nvidia', 'ampere')))).toBe(false);
    expect(isSoftwareAdapter(identityOf(fakeAdapter('intel', 'gen-12lp')))).toBe(false);
    expect(isSoftwareAdapter(identityOf(fakeAdapter('google', 'swiftshader', true)))).toBe(true);
    // A software renderer is one even where the browser does not flag it as the fallback.
    expect(isSoftwareAdapter(identityOf(fakeAdapter('google', 'swiftshader')))).toBe(true);
    expect(isSoftwareAdapter(identityOf(fakeAdapter('mesa', 'llvmpipe')))).toBe(true);
    expect(isSoftwareAdapter(identityOf(fakeAdapter('some-vendor', 'gpu', true)))).toBe(true);
    expect([backendOf(undefined), backendOf({ forceFallbackAdapter: true }), backendOf({ cpu: true })]).toEqual(['gpu', 'gpu', 'cpu']);
  });

  it('filters match case-insensitive substrings of every given field', () => {
    const id = identityOf(fakeAdapter('NVIDIA', 'ampere'));
    expect(matchesFilter(id, { vendor: 'nvidia' })).toBe(true);
    expect(matchesFilter(id, { vendor: 'nvi', architecture: 'AMP' })).toBe(true);
    expect(matchesFilter(id, { vendor: 'nvidia', architecture: 'turing' })).toBe(false);
    expect(adapterName(identityOf(fakeAdapter('google', 'swiftshader', true)))).toBe('google / swiftshader (fallback)');
    expect(adapterKey(identityOf(fakeAdapter('google', 'swiftshader', true)))).not.toBe(adapterKey(identityOf(fakeAdapter('google', 'swiftshader'))));
  });

  it('a filter tries every way of asking and takes the first match', async () => {
    const asked: unknown[] = [];
    const a = await requestAdapterFor(fakeGpu(asked), { info: { architecture: 'swiftshader' } });
    expect(a?.info.vendor).toBe('google');
    expect(asked).toEqual(['default', { powerPreference: 'high-performance' }, { powerPreference: 'low-power' }, { forceFallbackAdapter: true }]);
    const b = await requestAdapterFor(fakeGpu([]), { info: { vendor: 'nvidia' } });
    expect(b?.info.architecture).toBe('ampere');
  });

  it('a filter matching nothing names what the browser offered', async () => {
    const e = await requestAdapterFor(fakeGpu([]), { info: { vendor: 'amd' } }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AdapterNotFoundError);
    expect((e as Error).message).toContain('vendor~amd');
    expect((e as AdapterNotFoundError).seen).toEqual(['intel / gen-12lp', 'nvidia / ampere', 'google / swiftshader (fallback)']);
  });

  it('power preference and fallback specs ask the browser directly', async () => {
    const asked: unknown[] = [];
    expect((await requestAdapterFor(fakeGpu(asked), { forceFallbackAdapter: true }))?.info.architecture).toBe('swiftshader');
    expect((await requestAdapterFor(fakeGpu(asked), { powerPreference: 'high-performance' }))?.info.vendor).toBe('nvidia');
    expect(asked).toEqual([{ forceFallbackAdapter: true }, { powerPreference: 'high-performance' }]);
  });

  it('malformed specs are InvalidArgumentErrors', () => {
    for (const bad of [null, {}, { powerPreference: 'fast' }, { forceFallbackAdapter: false }, { info: {} }, { info: { vendor: 1 } }, { powerPreference: 'low-power', forceFallbackAdapter: true }, { cpu: false }, { cpu: true, info: {} }]) {
      expect(() => checkDeviceSpec(bad)).toThrow(InvalidArgumentError);
    }
    expect(checkDeviceSpec({ info: { vendor: 'x' } })).toEqual({ info: { vendor: 'x' } });
    expect(checkDeviceSpec({ cpu: true })).toEqual({ cpu: true });
  });
});
