// The demo page's UI (issue #5). Until then it reports whether this browser can run webgpu-tp.
const app = document.getElementById('app')!;
const gpu = 'gpu' in navigator;
app.textContent = `webgpu-tp demo — WebGPU: ${gpu ? 'yes' : 'no'}, cross-origin isolated: ${crossOriginIsolated ? 'yes' : 'no'}`;
