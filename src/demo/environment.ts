/** What this browser offers (cross-origin isolation, WebGPU and what its adapter is) and whether the default model is served. */
import { NotIsolatedError } from '../index.js';
import { gpuKindOf } from './devices.js';
import { el } from './dom.js';
import { formatBytes } from './format.js';
import { session, syncControls } from './session.js';
import { DEFAULT_MODEL } from './source.js';
import { describe, missingModel, probe, setStatus, showError } from './status.js';

/**
 * Isolation is required (the all-reduce is over SharedArrayBuffer); WebGPU is not, since CPU ranks
 * run without it. A missing WebGPU only narrows the choice: auto picks CPU ranks, and an
 * explicit GPU choice fails with the engine's typed error and its remedy.
 */
export async function checkEnvironment(): Promise<void> {
  const isolated = typeof crossOriginIsolated !== 'undefined' && crossOriginIsolated && typeof SharedArrayBuffer !== 'undefined';
  el.envIsolated.textContent = isolated ? 'Cross-origin isolated' : 'Not isolated';
  el.envIsolated.className = `pill ${isolated ? 'ok' : 'bad'}`;

  let gpuError: string | undefined;
  let info: GPUAdapterInfo | undefined;
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  if (!gpu) {
    gpuError = 'navigator.gpu is missing: this browser does not expose WebGPU';
  } else {
    try {
      // The best adapter there is: when even it is a CPU fallback, auto runs CPU ranks.
      const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
      if (!adapter) gpuError = 'navigator.gpu gave no adapter (WebGPU is blocked or no GPU is usable)';
      else info = adapter.info;
    } catch (e) {
      gpuError = `requestAdapter failed: ${(e as Error).message}`;
    }
  }
  session.gpu = gpuKindOf(info);
  const name = info ? [info.vendor, info.architecture, info.description].filter(Boolean).join(' · ') || 'unnamed adapter' : 'no adapter';
  session.adapterName = name;
  el.envWebgpu.textContent = gpuError ? 'No WebGPU' : 'WebGPU';
  el.envWebgpu.className = `pill ${gpuError ? 'bad' : 'ok'}`;
  el.envWebgpu.title = gpuError ? `${gpuError}. CPU ranks (WebAssembly SIMD) still run; GPU ranks cannot.` : 'navigator.gpu and an adapter';
  el.envAdapter.textContent = session.gpu === 'fallback' ? `${name} (CPU fallback)` : name;
  el.envAdapter.title = session.gpu === 'gpu' ? `GPU adapter: ${name}` : session.gpu === 'fallback' ? `${name} is WebGPU on the CPU: auto runs CPU ranks instead` : 'No GPU adapter: auto runs CPU ranks';

  session.environmentOk = isolated;
  if (!isolated) {
    showError(describe(new NotIsolatedError()));
    el.generate.title = 'This browser cannot run webgpu-tp: see the message above';
    setStatus('error', 'Unsupported');
  }
  syncControls();
}

export async function checkDefaultModel(): Promise<void> {
  const p = await probe(DEFAULT_MODEL);
  el.defaultStatus.replaceChildren();
  const mark = document.createElement('span');
  if (p.state === 'ok') {
    mark.className = 'status-ok';
    mark.textContent = `✓ Available on this server${p.size ? ` (${formatBytes(p.size)})` : ''}`;
  } else if (p.state === 'missing') {
    mark.className = 'status-bad';
    mark.textContent = '✗ Not found on this server: see how to get it above';
    if (session.environmentOk && el.errorPanel.hidden) showError(missingModel(DEFAULT_MODEL, p.status));
  } else {
    mark.textContent = `Could not check ${DEFAULT_MODEL}${p.status ? ` (HTTP ${p.status})` : ''}`;
  }
  el.defaultStatus.append(mark);
}
