/**
 * The WGSL of every kernel that touches the KV cache, for each way of reaching it (kv-format.ts):
 * the wrappers compile these, and kv-format.test.ts validates all of them, native f16 included.
 * No GPU calls here, so Node can import it.
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import attnSrc from '../../../shaders/attention.wgsl?raw';
import attnSgSrc from '../../../shaders/attention_sg.wgsl?raw';
import attnCommonSrc from '../../../shaders/attention_common.wgsl?raw';
import attnExactSrc from '../../../shaders/attention_exact.wgsl?raw';
import exactMathSrc from '../../../shaders/exact_math.wgsl?raw';
import ropeSrc from '../../../shaders/rope.wgsl?raw';
import ropeKvSrc from '../../../shaders/rope_kv.wgsl?raw';
import { kvCacheWgsl, type KvCacheAccess } from './kv-format.js';
import { wgsl } from '../core/layout.js';

/**
 * `workgroup`: 64 invocations per (row, head) sharing scores through workgroup memory.
 * `subgroup`: one subgroup per (row, head), no workgroup memory or barrier: far faster on
 * SwiftShader, where barriers are expensive; needs the subgroups feature.
 * `exact`: run.c's order and correctly rounded exp and divisions, bit for bit (the runq.c-exact
 * W8A8 path); one invocation per (row, head) and a scratch of maxM·nHeads·maxSeq scores. Never
 * the default: only asked for by name, so it is not among `attentionKinds`.
 */
export type AttentionKind = 'workgroup' | 'subgroup' | 'exact';

/** Attention variant `kind` over a cache reached as `access`. */
export function attentionWgsl(kind: AttentionKind, access: KvCacheAccess): string {
  const kv = kvCacheWgsl(access, { k: 3, v: 4, write: false });
  if (kind === 'subgroup') return wgsl(commonSrc, kv, attnCommonSrc, attnSgSrc);
  if (kind === 'exact') return wgsl(commonSrc, exactMathSrc, kv, attnCommonSrc, attnExactSrc);
  return wgsl(commonSrc, kv, attnCommonSrc, attnSrc);
}

/** The fused rope + KV write (rope.wgsl's helpers, rope_kv.wgsl's entry point). */
export function ropeKvWgsl(access: KvCacheAccess): string {
  return wgsl(commonSrc, kvCacheWgsl(access, { k: 4, v: 5, write: true }), ropeSrc, ropeKvSrc);
}

