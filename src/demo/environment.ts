/** What this browser offers (WebGPU, cross-origin isolation, an adapter) and whether the default model is served. */
import { WebGpuUnavailableError, NotIsolatedError, type WebGpuTpError } from '../index.js';
import { el } from './dom.js';
import { formatBytes } from './format.js';
import { session, syncControls } from './session.js';
import { DEFAULT_MODEL } from './source.js';
import { describe, missingModel, probe, setStatus, showError } from './status.js';

export async function checkEnvironment(): Promise<void> {
  const isolated = typeof crossOriginIsolated !== 'undefined' && crossOriginIsolated && typeof SharedArrayBuffer !== 'undefined';
  el.envIsolated.textContent = isolated ? 'Cross-origin isolated' : 'Not isolated';
  el.envIsolated.className = `pill ${isolated ? 'ok' : 'bad'}`;

  let gpuError: WebGpuTpError | undefined;
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  if (!gpu) {
    gpuError = new WebGpuUnavailableError('navigator.gpu is missing: this browser does not expose WebGPU');
  } else {
    try {
      const adapter = await gpu.requestAdapter();
      if (!adapter) gpuError = new WebGpuUnavailableError('navigator.gpu gave no adapter (WebGPU is blocked or no GPU is usable)');
      else {
        const i = adapter.info;
        const name = [i.vendor, i.architecture, i.description].filter(Boolean).join(' · ') || 'unnamed adapter';
        el.envAdapter.textContent = name;
        el.envAdapter.title = `GPU adapter: ${name}`;
      }
    } catch (e) {
      gpuError = new WebGpuUnavailableError(`requestAdapter failed: ${(e as Error).message}`);
    }
  }
  el.envWebgpu.textContent = gpuError ? 'No WebGPU' : 'WebGPU';
  el.envWebgpu.className = `pill ${gpuError ? 'bad' : 'ok'}`;
  if (gpuError) el.envAdapter.textContent = 'no adapter';

  session.environmentOk = isolated && !gpuError;
  if (!isolated) showError(describe(new NotIsolatedError()));
  else if (gpuError) showError(describe(gpuError));
  if (!session.environmentOk) {
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
