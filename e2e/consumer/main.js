// A consumer app of the built package, for e2e/consumer.spec.ts (a Vite build and a Vite dev
// server). The four lines from the import on are the README's "Embed it" example, verbatim:
// the spec checks that they are.
import { createEngine } from 'webgpu-tp';

const out = document.querySelector('output');
const engine = await createEngine({ model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', devices: 'gpu', tensorParallel: 2 });
for await (const c of engine.generate('Once upon a time', { temperature: 0, maxTokens: 24 })) out.append(c.text);

await engine.dispose();
document.body.dataset.done = 'true';
