/**
 * The CPU kernels' WebAssembly builds: each module comes as plain SIMD128 and as relaxed SIMD,
 * and each build is compiled once, on first use, then instantiated per rank on its memory.
 */

/** Which build a rank runs: relaxed SIMD where the engine has it, else plain SIMD128. */
export type CpuKernelVariant = 'simd' | 'relaxed';

/** A committed module's bytes from its base64 text. */
export const wasmBytes = (base64: string): Uint8Array<ArrayBuffer> => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));

/** The compiled module of a variant, from the two builds' base64, each compiled once. */
export function variantModules(plain: string, relaxed: string): (variant: CpuKernelVariant) => WebAssembly.Module {
  const compiled = new Map<CpuKernelVariant, WebAssembly.Module>();
  return (variant) => {
    let m = compiled.get(variant);
    if (!m) {
      m = new WebAssembly.Module(wasmBytes(variant === 'relaxed' ? relaxed : plain));
      compiled.set(variant, m);
    }
    return m;
  };
}
