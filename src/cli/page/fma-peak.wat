;; The 128-bit FMA peak of one core, for `bench kernels`: 10 independent chains of f32x4
;; multiply-adds (MADD: relaxed_madd in the relaxed build, mul then add in the plain one), enough
;; to cover the FMA units' latency. Each turn is 10 multiply-adds of 4 lanes (8·10 flops). The
;; returned lane keeps the chains observable. Compiled into fma-peak-wasm.ts by
;; scripts/build-wasm.mjs (npm run build:wasm).
(module
  (func (export "peak") (param $turns i32) (param $s f32) (result f32)
    (local $b v128) (local $c v128) (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $a4 v128) (local $a5 v128) (local $a6 v128) (local $a7 v128) (local $a8 v128) (local $a9 v128)
    (local.set $b (f32x4.splat (f32.const 0.999)))
    (local.set $c (f32x4.splat (local.get $s)))
    (local.set $a0 (f32x4.splat (f32.const 0)))
    (local.set $a1 (f32x4.splat (f32.const 1)))
    (local.set $a2 (f32x4.splat (f32.const 2)))
    (local.set $a3 (f32x4.splat (f32.const 3)))
    (local.set $a4 (f32x4.splat (f32.const 4)))
    (local.set $a5 (f32x4.splat (f32.const 5)))
    (local.set $a6 (f32x4.splat (f32.const 6)))
    (local.set $a7 (f32x4.splat (f32.const 7)))
    (local.set $a8 (f32x4.splat (f32.const 8)))
    (local.set $a9 (f32x4.splat (f32.const 9)))
    (block $done (loop $l
      (br_if $done (i32.eqz (local.get $turns)))
      (local.set $a0 (MADD (local.get $a0) (local.get $b) (local.get $c)))
      (local.set $a1 (MADD (local.get $a1) (local.get $b) (local.get $c)))
      (local.set $a2 (MADD (local.get $a2) (local.get $b) (local.get $c)))
      (local.set $a3 (MADD (local.get $a3) (local.get $b) (local.get $c)))
      (local.set $a4 (MADD (local.get $a4) (local.get $b) (local.get $c)))
      (local.set $a5 (MADD (local.get $a5) (local.get $b) (local.get $c)))
      (local.set $a6 (MADD (local.get $a6) (local.get $b) (local.get $c)))
      (local.set $a7 (MADD (local.get $a7) (local.get $b) (local.get $c)))
      (local.set $a8 (MADD (local.get $a8) (local.get $b) (local.get $c)))
      (local.set $a9 (MADD (local.get $a9) (local.get $b) (local.get $c)))
      (local.set $turns (i32.sub (local.get $turns) (i32.const 1)))
      (br $l)))
    (f32x4.extract_lane 0 (f32x4.add (f32x4.add (f32x4.add (f32x4.add (f32x4.add (f32x4.add (f32x4.add (f32x4.add (f32x4.add (local.get $a0) (local.get $a1)) (local.get $a2)) (local.get $a3)) (local.get $a4)) (local.get $a5)) (local.get $a6)) (local.get $a7)) (local.get $a8)) (local.get $a9)))))
