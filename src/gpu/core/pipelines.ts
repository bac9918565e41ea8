/**
 * Compute pipelines keyed by shader source + entry point + override constants. Every layer of a
 * model asks for the same few pipelines; compiling once per device matters (SwiftShader takes tens
 * of milliseconds per pipeline).
 */
export interface PipelineCache {
  get(code: string, entryPoint: string, constants?: Record<string, number>, label?: string): GPUComputePipeline;
  clear(): void;
  /** Number of distinct pipelines compiled so far. */
  readonly size: number;
}

export function createPipelineCache(device: GPUDevice): PipelineCache {
  const modules = new Map<string, GPUShaderModule>();
  const pipelines = new Map<string, GPUComputePipeline>();
  return {
    get(code, entryPoint, constants = {}, label) {
      const ckeys = Object.keys(constants).sort();
      const k = `${entryPoint}|${ckeys.map((c) => `${c}=${constants[c]}`).join(',')}|${code}`;
      let p = pipelines.get(k);
      if (p) return p;
      let module = modules.get(code);
      if (!module) {
        module = device.createShaderModule({ code, label });
        modules.set(code, module);
      }
      p = device.createComputePipeline({ layout: 'auto', label, compute: { module, entryPoint, constants } });
      pipelines.set(k, p);
      return p;
    },
    clear() {
      pipelines.clear();
      modules.clear();
    },
    get size() {
      return pipelines.size;
    },
  };
}
