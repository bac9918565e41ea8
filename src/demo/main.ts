/**
 * The demo page (issue #5): pick a model (the built-in stories260K, a URL, or local files),
 * the devices (GPU, CPU or both) and a tensor-parallel degree, and sampling settings, then stream a generation while live charts
 * show where each rank's decode step goes, its shard memory, and how its shard was loaded.
 *
 * Model output only ever reaches the page as text nodes (never HTML). The engine is re-created
 * only when the model, the devices or the degree changes, and the old one is disposed first. This module wires
 * the page's controls to the modules that do each job.
 */
import './style.css';
import { el } from './dom.js';
import { dropEngine } from './engine.js';
import { checkDefaultModel, checkEnvironment } from './environment.js';
import { generate } from './generate.js';
import { startJoin } from './join.js';
import { session, syncControls } from './session.js';
import { setMode, takeFiles, updateModelName, type SourceMode } from './source.js';
import { hideError, setStatus } from './status.js';

el.errorClose.addEventListener('click', hideError);

for (const t of el.tabs) t.addEventListener('click', () => setMode(t.dataset.source as SourceMode));
for (const [i, t] of el.tabs.entries()) {
  t.addEventListener('keydown', (e) => {
    const step = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    e.preventDefault();
    const next = el.tabs[(i + step + el.tabs.length) % el.tabs.length]!;
    next.focus();
    setMode(next.dataset.source as SourceMode);
  });
}
el.modelUrl.addEventListener('input', updateModelName);
el.hfUrl.addEventListener('input', updateModelName);
el.files.addEventListener('change', () => takeFiles([...(el.files.files ?? [])]));
// Drop anywhere on the page: the browser must not navigate to the file.
window.addEventListener('dragover', (e) => {
  e.preventDefault();
  if (!session.run) el.dropZone.classList.add('over');
});
window.addEventListener('dragleave', (e) => {
  if (!e.relatedTarget) el.dropZone.classList.remove('over');
});
window.addEventListener('drop', (e) => {
  e.preventDefault();
  el.dropZone.classList.remove('over');
  if (session.run || !e.dataTransfer?.files.length) return;
  takeFiles([...e.dataTransfer.files]);
});


window.addEventListener('pagehide', () => {
  session.run?.abort();
  // Forgotten too: a page restored from the back/forward cache loads a new engine on Generate.
  void dropEngine();
});

el.generate.addEventListener('click', () => void generate());
el.stop.addEventListener('click', () => {
  session.run?.abort();
  el.stop.disabled = true;
});
el.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    void generate();
  }
});

// ---------------------------------------------------------------- start

const joinId = new URLSearchParams(location.search).get('join');
if (joinId) startJoin(joinId);

setMode('default');
el.output.classList.add('empty');
setStatus('idle', 'Idle');
syncControls();
session.checked = checkEnvironment();
void session.checked.then(checkDefaultModel);
