/**
 * The quantiser for GGML's Q4_1, Q5_0, Q5_1 and K-quant blocks is `synth`'s writer,
 * src/model/formats/gguf-kquants-write.ts (ggml's reference quantisation); this path re-exports
 * it for the test files that import it from test support.
 */
export { quantizeAny } from '../../src/model/formats/gguf-kquants-write.js';
