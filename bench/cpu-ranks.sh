#!/usr/bin/env bash
# Issue #22's CPU-rank runs (bench/NOTES.md, "CPU ranks"), each one `bench generate` run with
# interleaved rounds, under the machine's shared lock. After `npm run build`:
#   bash bench/cpu-ranks.sh            # JSON in $OUT (default /tmp/cpu-ranks), a summary on stdout
# SYNTH: the synth stories110M + tok32000 folder (default /tmp/synth); MODELS: stories260K's.
set -euo pipefail
cd "$(dirname "$0")/.."
SYNTH=${SYNTH:-/tmp/synth}
MODELS=${MODELS:-../shared/models}
OUT=${OUT:-/tmp/cpu-ranks}
mkdir -p "$OUT"
bench() { flock /tmp/cpu.lock node dist/cli/main.js bench generate --json "$@"; }
s110=(--model "$SYNTH/stories110M-synth.bin" --tokenizer "$SYNTH/tok32000-synth.bin")
# CPU TP 1 vs TP 2 at batch 1, with the roofline.
bench "${s110[@]}" --devices cpu --tp 1,2 --batch 1 --rounds 3 --max-tokens 32 > "$OUT/tp.json"
# Batch 8 vs 1 at CPU TP 2, with the roofline.
bench "${s110[@]}" --devices cpu --tp 2 --batch 1,8 --rounds 3 --max-tokens 32 > "$OUT/batch.json"
# stories260K: CPU TP 2 (a list of two CPU ranks) vs one GPU rank (SwiftShader here), the first case.
bench --model "$MODELS/stories260K.bin" --tokenizer "$MODELS/tok512.bin" --devices high-performance --devices cpu,cpu --tp 1 --rounds 5 --max-tokens 64 > "$OUT/s260K.json"
for f in tp batch s260K; do
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const f = (v, d = 2) => (v === undefined ? "-" : v.toFixed(d));
    console.log(`== ${process.argv[2]}: ${r.model}`);
    const ro = r.roofline;
    if (ro) console.log(`roofline: ${ro.weight_bytes} B, read ${ro.read.one_thread.gbs} GB/s (1 thread) ${ro.read.two_threads.gbs} GB/s (2), ${f(ro.roofline_tokens_per_s, 1)} tok/s`);
    for (const x of r.results) console.log(`${x.devices} (${x.backend}) TP ${x.tp} batch ${x.batch}: ${f(x.aggregate_tokens_per_s)} tok/s, rounds ${(x.rounds_tokens_per_s ?? []).map((v) => f(v)).join("/")}, vs_tp1 ${f(x.vs_tp1)}, vs_batch1 ${f(x.vs_batch1)}, vs_first ${f(x.vs_first)}, vs_roofline ${f(x.vs_roofline, 3)}`);
  ' "$OUT/$f.json" "$f"
done
