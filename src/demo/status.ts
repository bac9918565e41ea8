/** The run status line and the error panel: typed errors shown with their code and remedy. */
import { WebGpuTpError } from '../index.js';
import { el } from './dom.js';

export type RunState = 'idle' | 'loading' | 'generating' | 'done' | 'stopped' | 'error';

export function setStatus(state: RunState, text: string): void {
  el.runStatus.dataset.state = state;
  el.runStatus.textContent = text;
  // Screen readers read the story once it is complete, not token by token (aria-live alone would).
  el.output.setAttribute('aria-busy', String(state === 'loading' || state === 'generating'));
  document.body.dataset.state = state;
}

/**
 * Codes of a failed rank. The engine rebuilds it in the background, and if that fails refuses
 * every later request; the demo drops the engine at once, so the next Generate loads a fresh one
 * (from the shard cache) instead of possibly failing the same way.
 */
export const BROKEN = new Set(['WORKER_FAILED', 'DEVICE_LOST', 'COLLECTIVE_TIMEOUT']);

const TITLES: Partial<Record<string, string>> = {
  NO_WEBGPU: 'WebGPU is not available',
  NOT_ISOLATED: 'This page is not cross-origin isolated',
  MODEL_FORMAT: 'The model file could not be used',
  MODEL_FETCH: 'The model could not be downloaded',
  NO_ADAPTER: 'No GPU adapter',
  TAB_JOIN_TIMEOUT: 'No tab joined',
  TOKENIZER_FORMAT: 'The tokenizer file could not be used',
  PLAN: 'This split does not fit the model',
  COLLECTIVE_TIMEOUT: 'A worker stopped answering',
  DEVICE_LOST: 'A GPU device was lost',
  WORKER_FAILED: 'A worker failed',
  INVALID_ARGUMENT: 'Check the settings',
  DISPOSED: 'The engine was closed',
};

export interface Shown {
  title: string;
  code: string;
  message: string;
  remedy: string;
  modelHelp?: boolean;
}

/** A typed error's message without the remedy its constructor appended (shown on its own line). */
export function describe(e: unknown): Shown {
  if (e instanceof WebGpuTpError || (e instanceof Error && typeof (e as { code?: unknown }).code === 'string')) {
    const err = e as WebGpuTpError;
    const remedy = err.remedy ?? '';
    let message = err.message;
    if (remedy && message.endsWith(`. ${remedy}`)) message = message.slice(0, -remedy.length - 2);
    return { title: TITLES[err.code] ?? 'Something went wrong', code: err.code, message, remedy };
  }
  const message = e instanceof Error ? e.message : String(e);
  return { title: 'Something went wrong', code: e instanceof Error ? e.name : 'Error', message, remedy: 'Reload the page and try again' };
}

export function showError(s: Shown): void {
  el.errorTitle.textContent = s.title;
  el.errorCode.textContent = s.code;
  el.errorMessage.textContent = s.message;
  el.errorRemedy.textContent = s.remedy;
  el.modelHelp.hidden = !s.modelHelp;
  el.errorPanel.dataset.code = s.code;
  el.errorPanel.hidden = false;
}

export function hideError(): void {
  el.errorPanel.hidden = true;
  delete el.errorPanel.dataset.code;
}

/** Whether a model URL answers with model bytes: 'missing' on 404 or an HTML fallback page. One byte at most. */
export async function probe(url: string): Promise<{ state: 'ok' | 'missing' | 'unknown'; size?: number; status?: number }> {
  try {
    const r = await fetch(url, { headers: { Range: 'bytes=0-0' }, cache: 'no-store' });
    await r.body?.cancel().catch(() => {});
    const html = (r.headers.get('Content-Type') ?? '').includes('text/html');
    if (r.status === 404 || r.status === 410 || (r.ok && html)) return { state: 'missing', status: r.status };
    if (!r.ok) return { state: 'unknown', status: r.status };
    const cr = r.headers.get('Content-Range');
    const size = cr ? Number(cr.split('/')[1]) : Number(r.headers.get('Content-Length'));
    return { state: 'ok', size: Number.isFinite(size) ? size : undefined, status: r.status };
  } catch {
    return { state: 'unknown' };
  }
}

export function missingModel(url: string, status?: number): Shown {
  return {
    title: 'No model found',
    code: 'MODEL_MISSING',
    message: `${url} is not on this server${status && status !== 200 ? ` (HTTP ${status})` : ''}.`,
    remedy: '',
    modelHelp: true,
  };
}
