;; GGUF Q8_0 and Q4_0 matmuls for a CPU rank (groups of 32 along a row, one f32 scale each), on
;; the memory of the rank's kernels (kernels.wat). Arguments are byte addresses, counts in elements.
;;
;; Weights are tiled (quant.ts `tileQuant`): per block of four rows and per group, the four rows'
;; 32 values (Q8_0: 32 int8; Q4_0: GGML's 16 bytes, byte j = element j in its low nibble and
;; element j + 16 in its high one, each + 8), then the four rows' f32 scales; rows padded to a
;; multiple of four with zeros. One stream per block, read once for every input row of a step.
;;
;; Two arithmetics:
;; - weight-only (`matmulQ`): f32 activations; each group's 32 products are summed in f32 and
;;   scaled by the weight's scale; the groups are summed in f32 lanes.
;; - int8 activations (`quantizeA8`, then `matmulQA8`): the GPU's int8 mode and llama.cpp's CPU
;;   path. An input row is quantised per group as runq.c does (scale = max|x| / 127, q = round(x /
;;   scale), halves away from zero), and each output is Σ over groups, in order, of
;;   ((f32)(Σ xq·wq as i32) · ws) · xs, every step rounded to f32 as matmul_q8a8.wgsl and
;;   matmul_q4a8.wgsl compute it. Q8_0 × int8 multiplies in i16 lanes (i32x4.dot_i16x8_s: exact),
;;   or in the relaxed build by relaxed SIMD's i8 × i7 dot against the activations' sign planes;
;;   Q4_0 takes the nibbles as they are (0..15, so that dot is exact, its i16 pair sums too) and
;;   subtracts 8·Σxq per group. Not i32x4.relaxed_dot_i8x16_i7x16_add_s: Node
;;   20's V8 doubles its sums.
;; Compiled into quant-wasm.ts by scripts/build-wasm.mjs (IDOT and MADD are its macros).
(module
  (import "env" "memory" (memory 1 65536))

  ;; [Σa, Σb, Σc, Σd] of four f32x4, each lane sum as ((a0 + a2) + (a1 + a3)).
  (func $fsum4 (param $a v128) (param $b v128) (param $c v128) (param $d v128) (result v128)
    (local $t0 v128) (local $t1 v128)
    (local.set $t0 (f32x4.add
      (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $a) (local.get $b))
      (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $a) (local.get $b))))
    (local.set $t1 (f32x4.add
      (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $c) (local.get $d))
      (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $c) (local.get $d))))
    (f32x4.add
      (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1))
      (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1))))

  ;; Stores the first nv lanes of v (output row r, columns i..) at y (rows of n floats):
  ;; (flags&1 ? y : 0) + (v + (flags&2 ? bias : 0)), as kernels.wat's put4 and the WGSL storeY.
  (func $store4 (param $y i32) (param $n i32) (param $r i32) (param $i i32) (param $nv i32) (param $flags i32) (param $bias i32) (param $v v128)
    (local $p i32) (local $c i32) (local $s f32)
    (local.set $p (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $n)) (local.get $i)) (i32.const 2))))
    (local.set $bias (i32.add (local.get $bias) (i32.shl (local.get $i) (i32.const 2))))
    (if (i32.eq (local.get $nv) (i32.const 4)) (then
      (if (i32.and (local.get $flags) (i32.const 2)) (then (local.set $v (f32x4.add (local.get $v) (v128.load (local.get $bias))))))
      (if (i32.and (local.get $flags) (i32.const 1)) (then (local.set $v (f32x4.add (v128.load (local.get $p)) (local.get $v)))))
      (v128.store (local.get $p) (local.get $v))
      (return)))
    ;; Bytes 0..15 of the memory are never allocated (CpuKernels): the lanes go through them.
    (v128.store (i32.const 0) (local.get $v))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $c) (local.get $nv)))
      (local.set $s (f32.load (i32.shl (local.get $c) (i32.const 2))))
      (if (i32.and (local.get $flags) (i32.const 2)) (then (local.set $s (f32.add (local.get $s) (f32.load (local.get $bias))))))
      (if (i32.and (local.get $flags) (i32.const 1)) (then (local.set $s (f32.add (f32.load (local.get $p)) (local.get $s)))))
      (f32.store (local.get $p) (local.get $s))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (local.set $bias (i32.add (local.get $bias) (i32.const 4)))
      (local.set $c (i32.add (local.get $c) (i32.const 1)))
      (br $l))))

  ;; ---- weight-only: f32 activations ------------------------------------------------------------

  ;; A tiled block of four Q8_0 rows (g groups at w) against f32 input row x: the four sums.
  ;; Written out row by row: V8 does not inline calls, which then dominate.
  (func $q8f (param $w i32) (param $x i32) (param $g i32) (result v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $h v128) (local $p v128) (local $e i32)
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (i32.const 144))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $h (i16x8.extend_low_i8x16_s (v128.load offset=0 (local.get $w))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (v128.load offset=0 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_s (v128.load offset=16 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (v128.load offset=16 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a0 (MADD (local.get $p) (v128.load32_splat offset=128 (local.get $w)) (local.get $a0)))
      (local.set $h (i16x8.extend_low_i8x16_s (v128.load offset=32 (local.get $w))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (v128.load offset=32 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_s (v128.load offset=48 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (v128.load offset=48 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a1 (MADD (local.get $p) (v128.load32_splat offset=132 (local.get $w)) (local.get $a1)))
      (local.set $h (i16x8.extend_low_i8x16_s (v128.load offset=64 (local.get $w))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (v128.load offset=64 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_s (v128.load offset=80 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (v128.load offset=80 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a2 (MADD (local.get $p) (v128.load32_splat offset=136 (local.get $w)) (local.get $a2)))
      (local.set $h (i16x8.extend_low_i8x16_s (v128.load offset=96 (local.get $w))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (v128.load offset=96 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_s (v128.load offset=112 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (v128.load offset=112 (local.get $w))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a3 (MADD (local.get $p) (v128.load32_splat offset=140 (local.get $w)) (local.get $a3)))
      (local.set $w (i32.add (local.get $w) (i32.const 144)))
      (local.set $x (i32.add (local.get $x) (i32.const 128)))
      (br $l)))
    (call $fsum4 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3)))

  ;; The same for a block of four Q4_0 rows (each byte's nibbles − 8 as int8).
  (func $q4f (param $w i32) (param $x i32) (param $g i32) (result v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $b v128) (local $h v128) (local $p v128) (local $e i32)
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (i32.const 80))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $b (v128.load offset=0 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_s (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_s (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a0 (MADD (local.get $p) (v128.load32_splat offset=64 (local.get $w)) (local.get $a0)))
      (local.set $b (v128.load offset=16 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_s (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_s (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a1 (MADD (local.get $p) (v128.load32_splat offset=68 (local.get $w)) (local.get $a1)))
      (local.set $b (v128.load offset=32 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_s (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_s (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a2 (MADD (local.get $p) (v128.load32_splat offset=72 (local.get $w)) (local.get $a2)))
      (local.set $b (v128.load offset=48 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_s (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_s (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_s (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a3 (MADD (local.get $p) (v128.load32_splat offset=76 (local.get $w)) (local.get $a3)))
      (local.set $w (i32.add (local.get $w) (i32.const 80)))
      (local.set $x (i32.add (local.get $x) (i32.const 128)))
      (br $l)))
    (call $fsum4 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3)))

  ;; y (m, n) = x (m, k; rows xStride floats apart) · wᵀ, w (n, k) tiled Q8_0 (dtype 0) or Q4_0 (1);
  ;; k a multiple of 32. flags: 1 accumulate into y, 2 add bias (n,). Each block of four weight rows
  ;; goes against every input row while it is in cache.
  (func (export "matmulQ") (param $y i32) (param $x i32) (param $xStride i32) (param $w i32)
    (param $m i32) (param $k i32) (param $n i32) (param $flags i32) (param $bias i32) (param $dtype i32)
    (local $i i32) (local $r i32) (local $g i32) (local $block i32) (local $xr i32) (local $nv i32)
    (local.set $g (i32.shr_u (local.get $k) (i32.const 5)))
    (local.set $block (i32.mul (local.get $g) (select (i32.const 80) (i32.const 144) (local.get $dtype))))
    (block $blocksDone (loop $blocks
      (br_if $blocksDone (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $nv (select (i32.const 4) (i32.sub (local.get $n) (local.get $i)) (i32.gt_u (i32.sub (local.get $n) (local.get $i)) (i32.const 4))))
      (local.set $r (i32.const 0))
      (local.set $xr (local.get $x))
      (block $rowsDone (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
        (call $store4 (local.get $y) (local.get $n) (local.get $r) (local.get $i) (local.get $nv) (local.get $flags) (local.get $bias)
          (if (result v128) (local.get $dtype)
            (then (call $q4f (local.get $w) (local.get $xr) (local.get $g)))
            (else (call $q8f (local.get $w) (local.get $xr) (local.get $g)))))
        (local.set $xr (i32.add (local.get $xr) (i32.shl (local.get $xStride) (i32.const 2))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rows)))
      (local.set $w (i32.add (local.get $w) (local.get $block)))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $blocks))))

  ;; ---- int8 activations ------------------------------------------------------------------------

  ;; C's round() of four f32: halves away from zero (|v| − floor|v| is exact, so the test is too).
  (func $roundAway (param $v v128) (result v128)
    (local $a v128) (local $f v128)
    (local.set $a (f32x4.abs (local.get $v)))
    (local.set $f (f32x4.floor (local.get $a)))
    (v128.or
      (v128.bitselect
        (f32x4.add (local.get $f) (v128.const f32x4 1 1 1 1)) (local.get $f)
        (f32x4.ge (f32x4.sub (local.get $a) (local.get $f)) (v128.const f32x4 0.5 0.5 0.5 0.5)))
      (v128.and (local.get $v) (v128.const i32x4 0x80000000 0x80000000 0x80000000 0x80000000))))

  ;; Eight x values at p, divided by the scale s (f32x4.div: rounded as runq.c's division) and
  ;; rounded, as eight i16 lanes.
  (func $q8x8 (param $p i32) (param $s v128) (result v128)
    (i16x8.narrow_i32x4_s
      (i32x4.trunc_sat_f32x4_s (call $roundAway (f32x4.div (v128.load offset=0 (local.get $p)) (local.get $s))))
      (i32x4.trunc_sat_f32x4_s (call $roundAway (f32x4.div (v128.load offset=16 (local.get $p)) (local.get $s))))))

  ;; Each of m rows of x (k floats, rows xStride floats apart; k a multiple of 32) as an int8 row
  ;; at xa, rows aStride = k + 8·k/32 bytes apart: k int8 values, then k/32 f32 scales, then k/32
  ;; i32 sums of the group's values. An all-zero group (or one whose scale is 0) gets zeros.
  ;; After the m rows, if planes is set, each row's sign planes (2k bytes a row; per group 64:
  ;; max(q, 0) of the group's 32 values, then max(−q, 0)), the relaxed Q8_0 kernel's i7 operand.
  (func (export "quantizeA8") (param $xa i32) (param $x i32) (param $xStride i32) (param $m i32) (param $k i32) (param $planes i32)
    (local $r i32) (local $g i32) (local $ng i32) (local $xp i32) (local $qp i32) (local $sp i32) (local $pp i32)
    (local $mx v128) (local $s v128) (local $lo v128) (local $hi v128) (local $scale f32) (local $j i32)
    (local.set $ng (i32.shr_u (local.get $k) (i32.const 5)))
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $xp (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r) (local.get $xStride)) (i32.const 2))))
      (local.set $qp (i32.add (local.get $xa) (i32.mul (local.get $r) (i32.add (local.get $k) (i32.shl (local.get $ng) (i32.const 3))))))
      (local.set $sp (i32.add (local.get $qp) (local.get $k)))
      (local.set $pp (i32.add (i32.add (local.get $xa) (i32.mul (local.get $m) (i32.add (local.get $k) (i32.shl (local.get $ng) (i32.const 3)))))
        (i32.shl (i32.mul (local.get $r) (local.get $k)) (i32.const 1))))
      (local.set $g (i32.const 0))
      (block $groupsDone (loop $groups
        (br_if $groupsDone (i32.ge_u (local.get $g) (local.get $ng)))
        ;; max|x| as the largest of the values' magnitude bits (non-negative floats order as their
        ;; bits do): one unsigned integer max a vector, where f32x4.max takes several instructions.
        (local.set $mx (v128.and (v128.load (local.get $xp)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
        (local.set $j (i32.const 16))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $j) (i32.const 128)))
          (local.set $mx (i32x4.max_u (local.get $mx)
            (v128.and (v128.load (i32.add (local.get $xp) (local.get $j))) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br $l)))
        (local.set $mx (i32x4.max_u (local.get $mx) (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $mx) (local.get $mx))))
        (local.set $scale (f32.div
          (f32.reinterpret_i32 (select
            (i32x4.extract_lane 0 (local.get $mx)) (i32x4.extract_lane 1 (local.get $mx))
            (i32.gt_u (i32x4.extract_lane 0 (local.get $mx)) (i32x4.extract_lane 1 (local.get $mx)))))
          (f32.const 127)))
        (f32.store (i32.add (local.get $sp) (i32.shl (local.get $g) (i32.const 2))) (local.get $scale))
        (if (f32.gt (local.get $scale) (f32.const 0))
          (then
            (local.set $s (f32x4.splat (local.get $scale)))
            (local.set $lo (i8x16.narrow_i16x8_s (call $q8x8 (local.get $xp) (local.get $s)) (call $q8x8 (i32.add (local.get $xp) (i32.const 32)) (local.get $s))))
            (local.set $hi (i8x16.narrow_i16x8_s (call $q8x8 (i32.add (local.get $xp) (i32.const 64)) (local.get $s)) (call $q8x8 (i32.add (local.get $xp) (i32.const 96)) (local.get $s)))))
          (else
            (local.set $lo (v128.const i32x4 0 0 0 0))
            (local.set $hi (v128.const i32x4 0 0 0 0))))
        (v128.store offset=0 (local.get $qp) (local.get $lo))
        (v128.store offset=16 (local.get $qp) (local.get $hi))
        ;; max(q, 0), then max(−q, 0) (q ≥ −127: no wrap).
        (if (local.get $planes) (then
          (v128.store offset=0 (local.get $pp) (local.tee $s (i8x16.max_s (local.get $lo) (v128.const i32x4 0 0 0 0))))
          (v128.store offset=32 (local.get $pp) (i8x16.sub (local.get $s) (local.get $lo)))
          (v128.store offset=16 (local.get $pp) (local.tee $s (i8x16.max_s (local.get $hi) (v128.const i32x4 0 0 0 0))))
          (v128.store offset=48 (local.get $pp) (i8x16.sub (local.get $s) (local.get $hi)))
          (local.set $pp (i32.add (local.get $pp) (i32.const 64)))))
        ;; Σ of the group's 32 values: pairwise in i16 (|Σ| ≤ 254 per lane), then in i32.
        (local.set $mx (i32x4.extadd_pairwise_i16x8_s (i16x8.add
          (i16x8.extadd_pairwise_i8x16_s (local.get $lo)) (i16x8.extadd_pairwise_i8x16_s (local.get $hi)))))
        (i32.store (i32.add (local.get $sp) (i32.shl (i32.add (local.get $ng) (local.get $g)) (i32.const 2)))
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $mx)) (i32x4.extract_lane 1 (local.get $mx)))
            (i32.add (i32x4.extract_lane 2 (local.get $mx)) (i32x4.extract_lane 3 (local.get $mx)))))
        (local.set $xp (i32.add (local.get $xp) (i32.const 128)))
        (local.set $qp (i32.add (local.get $qp) (i32.const 32)))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $groups)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

;;@relaxed-only
  ;; A tiled block of four Q8_0 rows (g groups at w) against int8 row xa (quantizeA8's form), by
  ;; its sign planes at pl: Σ wq·xq = Σ wq·max(xq, 0) − Σ wq·max(−xq, 0), each by relaxed SIMD's
  ;; i8 × i7 dot (exact: the weights, −128 too, are its signed operand, the planes 0..127). A
  ;; lane's two i16 pair sums differ by its pair's products (|Σ| ≤ 2·128·127 < 2^15: exact), then
  ;; widen; fewer instructions than widening the weights to i16.
  (func $q8a8 (param $w i32) (param $xa i32) (param $pl i32) (param $g i32) (result v128)
    (local $acc v128) (local $b v128) (local $c v128) (local $u0 v128) (local $u1 v128) (local $v0 v128) (local $v1 v128)
    (local $p0 v128) (local $p1 v128) (local $p2 v128) (local $p3 v128) (local $t0 v128) (local $t1 v128) (local $e i32) (local $s i32) (local $one v128)
    (local.set $one (v128.const i16x8 1 1 1 1 1 1 1 1))
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (i32.const 144))))
    (local.set $s (i32.add (local.get $xa) (i32.shl (local.get $g) (i32.const 5))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $u0 (v128.load offset=0 (local.get $pl)))
      (local.set $u1 (v128.load offset=16 (local.get $pl)))
      (local.set $v0 (v128.load offset=32 (local.get $pl)))
      (local.set $v1 (v128.load offset=48 (local.get $pl)))
      (local.set $b (v128.load offset=0 (local.get $w)))
      (local.set $c (v128.load offset=16 (local.get $w)))
      (local.set $p0 (i32x4.add
        (i32x4.dot_i16x8_s (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $b) (local.get $u0)) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $b) (local.get $v0))) (local.get $one))
        (i32x4.dot_i16x8_s (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $c) (local.get $u1)) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $c) (local.get $v1))) (local.get $one))))
      (local.set $b (v128.load offset=32 (local.get $w)))
      (local.set $c (v128.load offset=48 (local.get $w)))
      (local.set $p1 (i32x4.add
        (i32x4.dot_i16x8_s (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $b) (local.get $u0)) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $b) (local.get $v0))) (local.get $one))
        (i32x4.dot_i16x8_s (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $c) (local.get $u1)) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $c) (local.get $v1))) (local.get $one))))
      (local.set $b (v128.load offset=64 (local.get $w)))
      (local.set $c (v128.load offset=80 (local.get $w)))
      (local.set $p2 (i32x4.add
        (i32x4.dot_i16x8_s (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $b) (local.get $u0)) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $b) (local.get $v0))) (local.get $one))
        (i32x4.dot_i16x8_s (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $c) (local.get $u1)) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $c) (local.get $v1))) (local.get $one))))
      (local.set $b (v128.load offset=96 (local.get $w)))
      (local.set $c (v128.load offset=112 (local.get $w)))
      (local.set $p3 (i32x4.add
        (i32x4.dot_i16x8_s (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $b) (local.get $u0)) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $b) (local.get $v0))) (local.get $one))
        (i32x4.dot_i16x8_s (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $c) (local.get $u1)) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $c) (local.get $v1))) (local.get $one))))
      (local.set $t0 (i32x4.add
        (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p0) (local.get $p1))
        (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p0) (local.get $p1))))
      (local.set $t1 (i32x4.add
        (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p2) (local.get $p3))
        (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p2) (local.get $p3))))
      (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.mul
        (f32x4.convert_i32x4_s (i32x4.add
          (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1))
          (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1))))
        (v128.load offset=128 (local.get $w))) (v128.load32_splat (local.get $s)))))
      (local.set $w (i32.add (local.get $w) (i32.const 144)))
      (local.set $pl (i32.add (local.get $pl) (i32.const 64)))
      (local.set $s (i32.add (local.get $s) (i32.const 4)))
      (br $l)))
    (local.get $acc))
;;@end-relaxed
;;@simd-only
  ;; A tiled block of four Q8_0 rows (g groups at w) against int8 row xa (quantizeA8's form; its
  ;; sign planes at pl, which this build does not read).
  (func $q8a8 (param $w i32) (param $xa i32) (param $pl i32) (param $g i32) (result v128)
    (local $acc v128) (local $b v128) (local $c v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local $p0 v128) (local $p1 v128) (local $p2 v128) (local $p3 v128) (local $t0 v128) (local $t1 v128) (local $e i32) (local $s i32)
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (i32.const 144))))
    (local.set $s (i32.add (local.get $xa) (i32.shl (local.get $g) (i32.const 5))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $b (v128.load offset=0 (local.get $xa)))
      (local.set $x0 (i16x8.extend_low_i8x16_s (local.get $b)))
      (local.set $x1 (i16x8.extend_high_i8x16_s (local.get $b)))
      (local.set $b (v128.load offset=16 (local.get $xa)))
      (local.set $x2 (i16x8.extend_low_i8x16_s (local.get $b)))
      (local.set $x3 (i16x8.extend_high_i8x16_s (local.get $b)))
      (local.set $b (v128.load offset=0 (local.get $w)))
      (local.set $c (v128.load offset=16 (local.get $w)))
      (local.set $p0 (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $b)) (local.get $x0)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $b)) (local.get $x1)))
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $c)) (local.get $x2)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $c)) (local.get $x3)))))
      (local.set $b (v128.load offset=32 (local.get $w)))
      (local.set $c (v128.load offset=48 (local.get $w)))
      (local.set $p1 (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $b)) (local.get $x0)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $b)) (local.get $x1)))
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $c)) (local.get $x2)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $c)) (local.get $x3)))))
      (local.set $b (v128.load offset=64 (local.get $w)))
      (local.set $c (v128.load offset=80 (local.get $w)))
      (local.set $p2 (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $b)) (local.get $x0)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $b)) (local.get $x1)))
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $c)) (local.get $x2)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $c)) (local.get $x3)))))
      (local.set $b (v128.load offset=96 (local.get $w)))
      (local.set $c (v128.load offset=112 (local.get $w)))
      (local.set $p3 (i32x4.add
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $b)) (local.get $x0)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $b)) (local.get $x1)))
        (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $c)) (local.get $x2)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $c)) (local.get $x3)))))
      ;; [Σp0, Σp1, Σp2, Σp3], then acc + ((f32)Σ · ws) · xs lane by lane.
      (local.set $t0 (i32x4.add
        (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p0) (local.get $p1))
        (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p0) (local.get $p1))))
      (local.set $t1 (i32x4.add
        (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p2) (local.get $p3))
        (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p2) (local.get $p3))))
      (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.mul
        (f32x4.convert_i32x4_s (i32x4.add
          (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1))
          (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1))))
        (v128.load offset=128 (local.get $w))) (v128.load32_splat (local.get $s)))))
      (local.set $w (i32.add (local.get $w) (i32.const 144)))
      (local.set $xa (i32.add (local.get $xa) (i32.const 32)))
      (local.set $s (i32.add (local.get $s) (i32.const 4)))
      (br $l)))
    (local.get $acc))

;;@end-simd

  ;; A tiled block of four Q4_0 rows against int8 row xa: Σ nibble·xq − 8·Σxq per group (nibbles
  ;; 0..15: IDOT16's relaxed i8 × i7 dot is exact). Each row's 32 products are summed in i16 lanes
  ;; as far as they stay exact (16 a lane: |Σ| ≤ 16·128·15 < 2^15), the four rows folded together
  ;; on the way, then widened once for all four.
  (func $q4a8 (param $w i32) (param $xa i32) (param $g i32) (result v128)
    (local $acc v128) (local $b v128) (local $xl v128) (local $xh v128) (local $m v128)
    (local $p0 v128) (local $p1 v128) (local $p2 v128) (local $p3 v128) (local $t0 v128) (local $t1 v128) (local $e i32) (local $s i32)
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (i32.const 80))))
    (local.set $s (i32.add (local.get $xa) (i32.shl (local.get $g) (i32.const 5))))
    (local.set $m (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $xl (v128.load offset=0 (local.get $xa)))
      (local.set $xh (v128.load offset=16 (local.get $xa)))
      ;; High nibbles by an i16 shift and the mask: i8x16.shr_u has no x86 instruction.
      (local.set $b (v128.load offset=0 (local.get $w)))
      (local.set $p0 (IDOT16 (local.get $xl) (v128.and (local.get $b) (local.get $m))
        (local.get $xh) (v128.and (i16x8.shr_u (local.get $b) (i32.const 4)) (local.get $m))))
      (local.set $b (v128.load offset=16 (local.get $w)))
      (local.set $p1 (IDOT16 (local.get $xl) (v128.and (local.get $b) (local.get $m))
        (local.get $xh) (v128.and (i16x8.shr_u (local.get $b) (i32.const 4)) (local.get $m))))
      (local.set $b (v128.load offset=32 (local.get $w)))
      (local.set $p2 (IDOT16 (local.get $xl) (v128.and (local.get $b) (local.get $m))
        (local.get $xh) (v128.and (i16x8.shr_u (local.get $b) (i32.const 4)) (local.get $m))))
      (local.set $b (v128.load offset=48 (local.get $w)))
      (local.set $p3 (IDOT16 (local.get $xl) (v128.and (local.get $b) (local.get $m))
        (local.get $xh) (v128.and (i16x8.shr_u (local.get $b) (i32.const 4)) (local.get $m))))
      ;; [p0 p0 p0 p0 p1 p1 p1 p1] and [p2 … p3 …] (8 products a lane), then [p0 p0 p1 p1 p2 p2 p3 p3] (16).
      (local.set $t0 (i16x8.add
        (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p0) (local.get $p1))
        (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p0) (local.get $p1))))
      (local.set $t1 (i16x8.add
        (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p2) (local.get $p3))
        (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p2) (local.get $p3))))
      (local.set $t0 (i16x8.add
        (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1))
        (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1))))
      ;; [Σp0, Σp1, Σp2, Σp3] − 8·Σxq, then acc + ((f32)Σ · ws) · xs lane by lane.
      (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.mul
        (f32x4.convert_i32x4_s (i32x4.sub (i32x4.extadd_pairwise_i16x8_s (local.get $t0))
          (i32x4.shl (v128.load32_splat (i32.add (local.get $s) (i32.shl (local.get $g) (i32.const 2)))) (i32.const 3))))
        (v128.load offset=64 (local.get $w))) (v128.load32_splat (local.get $s)))))
      (local.set $w (i32.add (local.get $w) (i32.const 80)))
      (local.set $xa (i32.add (local.get $xa) (i32.const 32)))
      (local.set $s (i32.add (local.get $s) (i32.const 4)))
      (br $l)))
    (local.get $acc))

  ;; y (m, n) = the int8 rows xa (m of them, quantizeA8's form for k, sign planes too) · wᵀ, w
  ;; tiled Q8_0 (dtype 0) or Q4_0 (1); flags as matmulQ's.
  (func (export "matmulQA8") (param $y i32) (param $xa i32) (param $w i32)
    (param $m i32) (param $k i32) (param $n i32) (param $flags i32) (param $bias i32) (param $dtype i32)
    (local $i i32) (local $r i32) (local $g i32) (local $block i32) (local $xr i32) (local $nv i32) (local $aStride i32) (local $pr i32)
    (local.set $g (i32.shr_u (local.get $k) (i32.const 5)))
    (local.set $aStride (i32.add (local.get $k) (i32.shl (local.get $g) (i32.const 3))))
    (local.set $block (i32.mul (local.get $g) (select (i32.const 80) (i32.const 144) (local.get $dtype))))
    (block $blocksDone (loop $blocks
      (br_if $blocksDone (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $nv (select (i32.const 4) (i32.sub (local.get $n) (local.get $i)) (i32.gt_u (i32.sub (local.get $n) (local.get $i)) (i32.const 4))))
      (local.set $r (i32.const 0))
      (local.set $xr (local.get $xa))
      (local.set $pr (i32.add (local.get $xa) (i32.mul (local.get $m) (local.get $aStride))))
      (block $rowsDone (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
        (call $store4 (local.get $y) (local.get $n) (local.get $r) (local.get $i) (local.get $nv) (local.get $flags) (local.get $bias)
          (if (result v128) (local.get $dtype)
            (then (call $q4a8 (local.get $w) (local.get $xr) (local.get $g)))
            (else (call $q8a8 (local.get $w) (local.get $xr) (local.get $pr) (local.get $g)))))
        (local.set $xr (i32.add (local.get $xr) (local.get $aStride)))
        (local.set $pr (i32.add (local.get $pr) (i32.shl (local.get $k) (i32.const 1))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rows)))
      (local.set $w (i32.add (local.get $w) (local.get $block)))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $blocks))))

  ;; y[r] = the dequantised row tokens[r] of a Q8_0 (dtype 0) or Q4_0 (1) table in rows: values
  ;; plane at q (int8, or GGML's nibble bytes), f32 scales at s, dim a multiple of 32. Each value
  ;; is q·scale rounded to f32 (runq.c's dequantize).
  (func (export "embedQ") (param $y i32) (param $q i32) (param $s i32) (param $tokens i32) (param $m i32) (param $dim i32) (param $dtype i32)
    (local $r i32) (local $t i32) (local $j i32) (local $v i32) (local $sc f32) (local $b i32)
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $t (i32.mul (i32.load (i32.add (local.get $tokens) (i32.shl (local.get $r) (i32.const 2)))) (local.get $dim)))
      (local.set $j (i32.const 0))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $dim)))
        (local.set $sc (f32.load (i32.add (local.get $s) (i32.shl (i32.shr_u (i32.add (local.get $t) (local.get $j)) (i32.const 5)) (i32.const 2)))))
        (if (local.get $dtype)
          (then
            ;; element e of a group: byte e mod 16 of the group's 16, low nibble below 16, high above
            (local.set $b (i32.load8_u (i32.add (local.get $q)
              (i32.add (i32.shl (i32.shr_u (i32.add (local.get $t) (local.get $j)) (i32.const 5)) (i32.const 4)) (i32.and (local.get $j) (i32.const 15))))))
            (local.set $v (i32.sub
              (select (i32.shr_u (local.get $b) (i32.const 4)) (i32.and (local.get $b) (i32.const 15)) (i32.and (local.get $j) (i32.const 16)))
              (i32.const 8))))
          (else (local.set $v (i32.load8_s (i32.add (local.get $q) (i32.add (local.get $t) (local.get $j)))))))
        (f32.store (local.get $y) (f32.mul (f32.convert_i32_s (local.get $v)) (local.get $sc)))
        (local.set $y (i32.add (local.get $y) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $l)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))
)
