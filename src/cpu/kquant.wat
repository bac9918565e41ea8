;; q8_m matmuls for a CPU rank: GGUF's Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K (and Q8_0/Q4_0 parts
;; fused beside them) as a code per value and an f32 (scale, min) pair per group of 32 or 16, the
;; value code·scale + min (workers/q8m-views.ts), on the memory of the rank's kernels.
;; Arguments are byte addresses, counts in elements; y rows are ys floats apart, so one part of a
;; fused matrix can write its columns of y.
;;
;; Weights are tiled (kquant.ts `tile`): per block of four rows and per 32 values of a row, the
;; four rows' codes, then their scales, then their mins; rows padded to a multiple of four.
;; - nibble form (codes < 16, groups of 32): 16 bytes a row, byte j = code j | code j+16 << 4;
;;   then four scales and four mins (96 bytes). Q4_K thus reads about what Q4_0 reads.
;; - byte form: 32 codes a row; then the scales of values 0..15 of the four rows and, for groups
;;   of 16 only, those of values 16..31; then the mins the same way (160 or 192 bytes).
;; - q6 form (Q6_K: groups of 16, codes < 64, every min −32·scale): the byte form's codes and
;;   scales, no mins (160 bytes; kquant-q6.wat).
;;
;; Two arithmetics:
;; - weight-only (`matmulKQ`): f32 activations; per group scale·Σ code·x + min·Σx, Σx once per
;;   input row and 16 values (`sums16`).
;; - int8 activations (quant.ts `quantize`, then `a8sums16`, then `matmulKQA8`): per group of 32
;;   activations with scale xs, ((f32)Σ code·xq · scale + (f32)Σ xq · min) · xs, a group of 16
;;   adding its two halves' terms in order, every step rounded to f32 (no fused multiply-add).
;;   Nibbles take IDOT (relaxed SIMD's i8 × i7 dot: exact for codes < 64); so do byte codes below
;;   64 (Q6_K's, Q5_x's) in the relaxed build, flagged by form bit 4 at tile time; other byte
;;   codes, which Q8_0 parts make up to 255, the widening i16 dot (i32x4.dot_i16x8_s), exact for any code.
;; Compiled into kquant-wasm.ts by scripts/build-wasm.mjs (IDOT and MADD are its macros).
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

  ;; Stores the first nv lanes of v at row r, columns i.. of y (rows ys floats apart):
  ;; (flags&1 ? y : 0) + (v + (flags&2 ? bias : 0)), as quant.wat's store4.
  (func $store4 (param $y i32) (param $ys i32) (param $r i32) (param $i i32) (param $nv i32) (param $flags i32) (param $bias i32) (param $v v128)
    (local $p i32) (local $c i32) (local $s f32)
    (local.set $p (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $ys)) (local.get $i)) (i32.const 2))))
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

  ;; Bytes of one (block of four rows, 32 values) in form 0 (nibbles), 1 (bytes, groups of 32), 2 (bytes, groups of 16), 3 (q6: as 1).
  (func $chunk (param $form i32) (result i32)
    (select (i32.const 96) (i32.add (i32.const 160) (i32.shl (i32.eq (local.get $form) (i32.const 2)) (i32.const 5))) (i32.eqz (local.get $form))))

  ;; ---- weight-only: f32 activations ------------------------------------------------------------

  ;; Each of m rows of x (k floats, xStride apart; k a multiple of 32): its sums of 16 values, k/16 floats a row at dst.
  (func (export "sums16") (param $dst i32) (param $x i32) (param $xStride i32) (param $m i32) (param $k i32)
    (local $r i32) (local $j i32) (local $xp i32) (local $v v128)
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $xp (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r) (local.get $xStride)) (i32.const 2))))
      (local.set $j (i32.const 0))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $k)))
        (local.set $v (f32x4.add
          (f32x4.add (v128.load offset=0 (local.get $xp)) (v128.load offset=16 (local.get $xp)))
          (f32x4.add (v128.load offset=32 (local.get $xp)) (v128.load offset=48 (local.get $xp)))))
        (f32.store (local.get $dst) (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 2 (local.get $v)))
          (f32.add (f32x4.extract_lane 1 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))
        (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
        (local.set $xp (i32.add (local.get $xp) (i32.const 64)))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br $l)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

  ;; A tiled block of four nibble rows (g chunks of 32 at w) against f32 row x with its sums of 16 at s.
  ;; Written out row by row: V8 does not inline calls, which then dominate.
  (func $wn (param $w i32) (param $x i32) (param $s i32) (param $g i32) (result v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $am v128) (local $b v128) (local $h v128) (local $p v128) (local $e i32)
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (i32.const 96))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $b (v128.load offset=0 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_u (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a0 (MADD (local.get $p) (v128.load32_splat offset=64 (local.get $w)) (local.get $a0)))
      (local.set $b (v128.load offset=16 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_u (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a1 (MADD (local.get $p) (v128.load32_splat offset=68 (local.get $w)) (local.get $a1)))
      (local.set $b (v128.load offset=32 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_u (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a2 (MADD (local.get $p) (v128.load32_splat offset=72 (local.get $w)) (local.get $a2)))
      (local.set $b (v128.load offset=48 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_low_i8x16_u (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a3 (MADD (local.get $p) (v128.load32_splat offset=76 (local.get $w)) (local.get $a3)))
      (local.set $am (MADD (v128.load offset=80 (local.get $w)) (f32x4.splat (f32.add (f32.load (local.get $s)) (f32.load offset=4 (local.get $s)))) (local.get $am)))
      (local.set $w (i32.add (local.get $w) (i32.const 96)))
      (local.set $x (i32.add (local.get $x) (i32.const 128)))
      (local.set $s (i32.add (local.get $s) (i32.const 8)))
      (br $l)))
    (f32x4.add (call $fsum4 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3)) (local.get $am)))

  ;; The same for four byte-code rows; h = 0 (groups of 32) or 16 (groups of 16): where the second half's scales start.
  (func $wb (param $w i32) (param $x i32) (param $s i32) (param $g i32) (param $hh i32) (result v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $am v128) (local $b v128) (local $h v128) (local $p v128)
    (local $e i32) (local $step i32) (local $s1 i32) (local $m0 i32) (local $m1 i32)
    (local.set $step (i32.add (i32.const 160) (i32.shl (local.get $hh) (i32.const 1))))
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (local.get $step))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $s1 (i32.add (local.get $w) (i32.add (i32.const 128) (local.get $hh))))
      (local.set $m0 (i32.add (local.get $s1) (i32.const 16)))
      (local.set $m1 (i32.add (local.get $m0) (local.get $hh)))
      (local.set $b (v128.load offset=0 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (local.get $b)))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (local.get $b)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $a0 (MADD (local.get $p) (v128.load32_splat offset=128 (local.get $w)) (local.get $a0)))
      (local.set $b (v128.load offset=16 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (local.get $b)))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (local.get $b)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a0 (MADD (local.get $p) (v128.load32_splat offset=0 (local.get $s1)) (local.get $a0)))
      (local.set $b (v128.load offset=32 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (local.get $b)))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (local.get $b)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $a1 (MADD (local.get $p) (v128.load32_splat offset=132 (local.get $w)) (local.get $a1)))
      (local.set $b (v128.load offset=48 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (local.get $b)))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (local.get $b)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a1 (MADD (local.get $p) (v128.load32_splat offset=4 (local.get $s1)) (local.get $a1)))
      (local.set $b (v128.load offset=64 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (local.get $b)))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (local.get $b)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $a2 (MADD (local.get $p) (v128.load32_splat offset=136 (local.get $w)) (local.get $a2)))
      (local.set $b (v128.load offset=80 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (local.get $b)))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (local.get $b)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a2 (MADD (local.get $p) (v128.load32_splat offset=8 (local.get $s1)) (local.get $a2)))
      (local.set $b (v128.load offset=96 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (local.get $b)))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=0 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (local.get $b)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)) (local.get $p)))
      (local.set $a3 (MADD (local.get $p) (v128.load32_splat offset=140 (local.get $w)) (local.get $a3)))
      (local.set $b (v128.load offset=112 (local.get $w)))
      (local.set $h (i16x8.extend_low_i8x16_u (local.get $b)))
      (local.set $p (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x))))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)) (local.get $p)))
      (local.set $h (i16x8.extend_high_i8x16_u (local.get $b)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)) (local.get $p)))
      (local.set $p (MADD (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)) (local.get $p)))
      (local.set $a3 (MADD (local.get $p) (v128.load32_splat offset=12 (local.get $s1)) (local.get $a3)))
      (local.set $am (MADD (v128.load (local.get $m0)) (v128.load32_splat (local.get $s)) (local.get $am)))
      (local.set $am (MADD (v128.load (local.get $m1)) (v128.load32_splat offset=4 (local.get $s)) (local.get $am)))
      (local.set $w (i32.add (local.get $w) (local.get $step)))
      (local.set $x (i32.add (local.get $x) (i32.const 128)))
      (local.set $s (i32.add (local.get $s) (i32.const 8)))
      (br $l)))
    (f32x4.add (call $fsum4 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3)) (local.get $am)))

  ;; y (m rows, ys apart; its columns 0..n) = x (m, k; rows xStride floats apart) · wᵀ, w (n, k)
  ;; tiled in `form`, xs16 the rows' sums16; k a multiple of 32. flags: 1 accumulate into y, 2 add
  ;; bias (n,). Each block of four weight rows goes against every input row while it is in cache.
  (func (export "matmulKQ") (param $y i32) (param $ys i32) (param $x i32) (param $xStride i32) (param $xs16 i32) (param $w i32)
    (param $m i32) (param $k i32) (param $n i32) (param $flags i32) (param $bias i32) (param $form i32)
    (local $i i32) (local $r i32) (local $g i32) (local $block i32) (local $xr i32) (local $sr i32) (local $nv i32) (local $hh i32)
    (local.set $g (i32.shr_u (local.get $k) (i32.const 5)))
    (local.set $block (i32.mul (local.get $g) (call $chunk (local.get $form))))
    (local.set $hh (i32.shl (i32.eq (local.get $form) (i32.const 2)) (i32.const 4)))
    (block $blocksDone (loop $blocks
      (br_if $blocksDone (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $nv (select (i32.const 4) (i32.sub (local.get $n) (local.get $i)) (i32.gt_u (i32.sub (local.get $n) (local.get $i)) (i32.const 4))))
      (local.set $r (i32.const 0))
      (local.set $xr (local.get $x))
      (local.set $sr (local.get $xs16))
      (block $rowsDone (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
        (call $store4 (local.get $y) (local.get $ys) (local.get $r) (local.get $i) (local.get $nv) (local.get $flags) (local.get $bias)
          (if (result v128) (i32.eq (local.get $form) (i32.const 3))
            (then (call $wq (local.get $w) (local.get $xr) (local.get $sr) (local.get $g)))
            (else (if (result v128) (local.get $form)
              (then (call $wb (local.get $w) (local.get $xr) (local.get $sr) (local.get $g) (local.get $hh)))
              (else (call $wn (local.get $w) (local.get $xr) (local.get $sr) (local.get $g)))))))
        (local.set $xr (i32.add (local.get $xr) (i32.shl (local.get $xStride) (i32.const 2))))
        (local.set $sr (i32.add (local.get $sr) (i32.shl (local.get $g) (i32.const 3))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rows)))
      (local.set $w (i32.add (local.get $w) (local.get $block)))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $blocks))))

  ;; ---- int8 activations ------------------------------------------------------------------------

  ;; Each of m int8 rows at xa (quant.wat quantizeA8's form for k: rows k + 8·k/32 bytes apart):
  ;; its sums of 16 values as f32 (exact), k/16 floats a row at dst.
  (func (export "a8sums16") (param $dst i32) (param $xa i32) (param $m i32) (param $k i32)
    (local $r i32) (local $j i32) (local $qp i32) (local $v v128)
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $qp (i32.add (local.get $xa) (i32.mul (local.get $r) (i32.add (local.get $k) (i32.shr_u (local.get $k) (i32.const 2))))))
      (local.set $j (i32.const 0))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $k)))
        (local.set $v (i32x4.extadd_pairwise_i16x8_s (i16x8.extadd_pairwise_i8x16_s (v128.load (local.get $qp)))))
        (f32.store (local.get $dst) (f32.convert_i32_s (i32.add
          (i32.add (i32x4.extract_lane 0 (local.get $v)) (i32x4.extract_lane 1 (local.get $v)))
          (i32.add (i32x4.extract_lane 2 (local.get $v)) (i32x4.extract_lane 3 (local.get $v))))))
        (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
        (local.set $qp (i32.add (local.get $qp) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br $l)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

  ;; A tiled block of four nibble rows against int8 row xa (its sums of 16 at xi, scales at xs).
  (func $an (param $w i32) (param $xa i32) (param $xi i32) (param $xs i32) (param $g i32) (result v128)
    (local $acc v128) (local $b v128) (local $xl v128) (local $xh v128) (local $lo v128)
    (local $p0 v128) (local $p1 v128) (local $p2 v128) (local $p3 v128) (local $t0 v128) (local $t1 v128) (local $e i32)
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (i32.const 96))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $xl (v128.load offset=0 (local.get $xa)))
      (local.set $xh (v128.load offset=16 (local.get $xa)))
      (local.set $b (v128.load offset=0 (local.get $w)))
      (local.set $p0 (IDOT (local.get $xl) (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (local.get $xh) (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $b (v128.load offset=16 (local.get $w)))
      (local.set $p1 (IDOT (local.get $xl) (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (local.get $xh) (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $b (v128.load offset=32 (local.get $w)))
      (local.set $p2 (IDOT (local.get $xl) (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (local.get $xh) (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $b (v128.load offset=48 (local.get $w)))
      (local.set $p3 (IDOT (local.get $xl) (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (local.get $xh) (i8x16.shr_u (local.get $b) (i32.const 4))))
      (local.set $t0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p0) (local.get $p1)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p0) (local.get $p1))))
      (local.set $t1 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p2) (local.get $p3)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p2) (local.get $p3))))
      (local.set $lo (f32x4.convert_i32x4_s (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1)))))
      (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.add (f32x4.mul (local.get $lo) (v128.load offset=64 (local.get $w))) (f32x4.mul (f32x4.splat (f32.add (f32.load (local.get $xi)) (f32.load offset=4 (local.get $xi)))) (v128.load offset=80 (local.get $w)))) (v128.load32_splat (local.get $xs)))))
      (local.set $w (i32.add (local.get $w) (i32.const 96)))
      (local.set $xa (i32.add (local.get $xa) (i32.const 32)))
      (local.set $xi (i32.add (local.get $xi) (i32.const 8)))
      (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
      (br $l)))
    (local.get $acc))

  ;; The same for four byte-code rows (h as $wb's).
  (func $ab (param $w i32) (param $xa i32) (param $xi i32) (param $xs i32) (param $g i32) (param $hh i32) (result v128)
    (local $acc v128) (local $b v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) (local $lo v128) (local $hi v128)
    (local $p0 v128) (local $p1 v128) (local $p2 v128) (local $p3 v128) (local $q0 v128) (local $q1 v128) (local $q2 v128) (local $q3 v128)
    (local $t0 v128) (local $t1 v128) (local $e i32) (local $step i32) (local $s1 i32) (local $m0 i32) (local $m1 i32)
    (local.set $step (i32.add (i32.const 160) (i32.shl (local.get $hh) (i32.const 1))))
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (local.get $step))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $s1 (i32.add (local.get $w) (i32.add (i32.const 128) (local.get $hh))))
      (local.set $m0 (i32.add (local.get $s1) (i32.const 16)))
      (local.set $m1 (i32.add (local.get $m0) (local.get $hh)))
      (local.set $b (v128.load offset=0 (local.get $xa)))
      (local.set $x0 (i16x8.extend_low_i8x16_s (local.get $b)))
      (local.set $x1 (i16x8.extend_high_i8x16_s (local.get $b)))
      (local.set $b (v128.load offset=16 (local.get $xa)))
      (local.set $x2 (i16x8.extend_low_i8x16_s (local.get $b)))
      (local.set $x3 (i16x8.extend_high_i8x16_s (local.get $b)))
      (local.set $b (v128.load offset=0 (local.get $w)))
      (local.set $p0 (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $b)) (local.get $x0)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $b)) (local.get $x1))))
      (local.set $b (v128.load offset=16 (local.get $w)))
      (local.set $q0 (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $b)) (local.get $x2)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $b)) (local.get $x3))))
      (local.set $b (v128.load offset=32 (local.get $w)))
      (local.set $p1 (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $b)) (local.get $x0)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $b)) (local.get $x1))))
      (local.set $b (v128.load offset=48 (local.get $w)))
      (local.set $q1 (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $b)) (local.get $x2)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $b)) (local.get $x3))))
      (local.set $b (v128.load offset=64 (local.get $w)))
      (local.set $p2 (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $b)) (local.get $x0)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $b)) (local.get $x1))))
      (local.set $b (v128.load offset=80 (local.get $w)))
      (local.set $q2 (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $b)) (local.get $x2)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $b)) (local.get $x3))))
      (local.set $b (v128.load offset=96 (local.get $w)))
      (local.set $p3 (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $b)) (local.get $x0)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $b)) (local.get $x1))))
      (local.set $b (v128.load offset=112 (local.get $w)))
      (local.set $q3 (i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $b)) (local.get $x2)) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $b)) (local.get $x3))))
      (if (i32.eqz (local.get $hh)) (then
        ;; a group of 32: one term, ((f32)Σ code·xq · scale + (f32)Σxq · min)
        (local.set $p0 (i32x4.add (local.get $p0) (local.get $q0)))
        (local.set $p1 (i32x4.add (local.get $p1) (local.get $q1)))
        (local.set $p2 (i32x4.add (local.get $p2) (local.get $q2)))
        (local.set $p3 (i32x4.add (local.get $p3) (local.get $q3)))
        (local.set $t0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p0) (local.get $p1)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p0) (local.get $p1))))
        (local.set $t1 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p2) (local.get $p3)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p2) (local.get $p3))))
        (local.set $lo (f32x4.convert_i32x4_s (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1)))))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.add (f32x4.mul (local.get $lo) (v128.load offset=128 (local.get $w))) (f32x4.mul (f32x4.splat (f32.add (f32.load (local.get $xi)) (f32.load offset=4 (local.get $xi)))) (v128.load (local.get $m0)))) (v128.load32_splat (local.get $xs))))))
      (else
        (local.set $t0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p0) (local.get $p1)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p0) (local.get $p1))))
        (local.set $t1 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p2) (local.get $p3)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p2) (local.get $p3))))
        (local.set $lo (f32x4.convert_i32x4_s (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1)))))
        (local.set $t0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $q0) (local.get $q1)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $q0) (local.get $q1))))
        (local.set $t1 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $q2) (local.get $q3)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $q2) (local.get $q3))))
        (local.set $hi (f32x4.convert_i32x4_s (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1)))))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.add (f32x4.add (f32x4.add (f32x4.mul (local.get $lo) (v128.load offset=128 (local.get $w))) (f32x4.mul (v128.load32_splat (local.get $xi)) (v128.load (local.get $m0)))) (f32x4.mul (local.get $hi) (v128.load (local.get $s1)))) (f32x4.mul (v128.load32_splat offset=4 (local.get $xi)) (v128.load (local.get $m1)))) (v128.load32_splat (local.get $xs)))))))
      (local.set $w (i32.add (local.get $w) (local.get $step)))
      (local.set $xa (i32.add (local.get $xa) (i32.const 32)))
      (local.set $xi (i32.add (local.get $xi) (i32.const 8)))
      (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
      (br $l)))
    (local.get $acc))

;;@relaxed-only
  ;; The same for four rows of byte codes below 64 (h as $wb's): IDOT on the codes as they are,
  ;; and for groups of 16 each half's i8 × i7 dot alone (two products an i16 lane: exact).
  (func $as (param $w i32) (param $xa i32) (param $xi i32) (param $xs i32) (param $g i32) (param $hh i32) (result v128)
    (local $acc v128) (local $xl v128) (local $xh v128) (local $lo v128) (local $hi v128)
    (local $p0 v128) (local $p1 v128) (local $p2 v128) (local $p3 v128) (local $q0 v128) (local $q1 v128) (local $q2 v128) (local $q3 v128)
    (local $t0 v128) (local $t1 v128) (local $e i32) (local $step i32) (local $s1 i32) (local $m0 i32) (local $m1 i32)
    (local.set $step (i32.add (i32.const 160) (i32.shl (local.get $hh) (i32.const 1))))
    (local.set $e (i32.add (local.get $w) (i32.mul (local.get $g) (local.get $step))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $w) (local.get $e)))
      (local.set $s1 (i32.add (local.get $w) (i32.add (i32.const 128) (local.get $hh))))
      (local.set $m0 (i32.add (local.get $s1) (i32.const 16)))
      (local.set $m1 (i32.add (local.get $m0) (local.get $hh)))
      (local.set $xl (v128.load offset=0 (local.get $xa)))
      (local.set $xh (v128.load offset=16 (local.get $xa)))
      (if (i32.eqz (local.get $hh)) (then
        (local.set $p0 (IDOT (local.get $xl) (v128.load offset=0 (local.get $w)) (local.get $xh) (v128.load offset=16 (local.get $w))))
        (local.set $p1 (IDOT (local.get $xl) (v128.load offset=32 (local.get $w)) (local.get $xh) (v128.load offset=48 (local.get $w))))
        (local.set $p2 (IDOT (local.get $xl) (v128.load offset=64 (local.get $w)) (local.get $xh) (v128.load offset=80 (local.get $w))))
        (local.set $p3 (IDOT (local.get $xl) (v128.load offset=96 (local.get $w)) (local.get $xh) (v128.load offset=112 (local.get $w))))
        (local.set $t0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p0) (local.get $p1)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p0) (local.get $p1))))
        (local.set $t1 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p2) (local.get $p3)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p2) (local.get $p3))))
        (local.set $lo (f32x4.convert_i32x4_s (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1)))))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.add (f32x4.mul (local.get $lo) (v128.load offset=128 (local.get $w))) (f32x4.mul (f32x4.splat (f32.add (f32.load (local.get $xi)) (f32.load offset=4 (local.get $xi)))) (v128.load (local.get $m0)))) (v128.load32_splat (local.get $xs))))))
      (else
        (local.set $p0 (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xl) (v128.load offset=0 (local.get $w)))))
        (local.set $q0 (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xh) (v128.load offset=16 (local.get $w)))))
        (local.set $p1 (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xl) (v128.load offset=32 (local.get $w)))))
        (local.set $q1 (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xh) (v128.load offset=48 (local.get $w)))))
        (local.set $p2 (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xl) (v128.load offset=64 (local.get $w)))))
        (local.set $q2 (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xh) (v128.load offset=80 (local.get $w)))))
        (local.set $p3 (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xl) (v128.load offset=96 (local.get $w)))))
        (local.set $q3 (i32x4.extadd_pairwise_i16x8_s (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xh) (v128.load offset=112 (local.get $w)))))
        (local.set $t0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p0) (local.get $p1)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p0) (local.get $p1))))
        (local.set $t1 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $p2) (local.get $p3)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $p2) (local.get $p3))))
        (local.set $lo (f32x4.convert_i32x4_s (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1)))))
        (local.set $t0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $q0) (local.get $q1)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $q0) (local.get $q1))))
        (local.set $t1 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $q2) (local.get $q3)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $q2) (local.get $q3))))
        (local.set $hi (f32x4.convert_i32x4_s (i32x4.add (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $t0) (local.get $t1)) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $t0) (local.get $t1)))))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.add (f32x4.add (f32x4.add (f32x4.mul (local.get $lo) (v128.load offset=128 (local.get $w))) (f32x4.mul (v128.load32_splat (local.get $xi)) (v128.load (local.get $m0)))) (f32x4.mul (local.get $hi) (v128.load (local.get $s1)))) (f32x4.mul (v128.load32_splat offset=4 (local.get $xi)) (v128.load (local.get $m1)))) (v128.load32_splat (local.get $xs)))))))
      (local.set $w (i32.add (local.get $w) (local.get $step)))
      (local.set $xa (i32.add (local.get $xa) (i32.const 32)))
      (local.set $xi (i32.add (local.get $xi) (i32.const 8)))
      (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
      (br $l)))
    (local.get $acc))
;;@end-relaxed

  ;; y (m rows, ys apart) = the int8 rows xa (quantizeA8's form for k; xi16 their a8sums16) · wᵀ,
  ;; w tiled in `form` (| 4: byte codes all below 64; 3: q6, in either build); flags as matmulKQ's.
  (func (export "matmulKQA8") (param $y i32) (param $ys i32) (param $xa i32) (param $xi16 i32) (param $w i32)
    (param $m i32) (param $k i32) (param $n i32) (param $flags i32) (param $bias i32) (param $form i32)
    (local $i i32) (local $r i32) (local $g i32) (local $block i32) (local $xr i32) (local $ir i32) (local $nv i32) (local $hh i32) (local $aStride i32)
    (local $small i32) (local $v v128)
    (local.set $small (i32.and (local.get $form) (i32.const 4)))
    (local.set $form (i32.and (local.get $form) (i32.const 3)))
    (local.set $g (i32.shr_u (local.get $k) (i32.const 5)))
    (local.set $aStride (i32.add (local.get $k) (i32.shl (local.get $g) (i32.const 3))))
    (local.set $block (i32.mul (local.get $g) (call $chunk (local.get $form))))
    (local.set $hh (i32.shl (i32.eq (local.get $form) (i32.const 2)) (i32.const 4)))
    (block $blocksDone (loop $blocks
      (br_if $blocksDone (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $nv (select (i32.const 4) (i32.sub (local.get $n) (local.get $i)) (i32.gt_u (i32.sub (local.get $n) (local.get $i)) (i32.const 4))))
      (local.set $r (i32.const 0))
      (local.set $xr (local.get $xa))
      (local.set $ir (local.get $xi16))
      (block $rowsDone (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
        (block $got
          (if (i32.eq (local.get $form) (i32.const 3)) (then
            (local.set $v (call $aq (local.get $w) (local.get $xr) (local.get $ir) (i32.add (local.get $xr) (local.get $k)) (local.get $g)))
            (br $got)))
;;@relaxed-only
          (if (local.get $small) (then
            (local.set $v (call $as (local.get $w) (local.get $xr) (local.get $ir) (i32.add (local.get $xr) (local.get $k)) (local.get $g) (local.get $hh)))
            (br $got)))
;;@end-relaxed
          (local.set $v (if (result v128) (local.get $form)
            (then (call $ab (local.get $w) (local.get $xr) (local.get $ir) (i32.add (local.get $xr) (local.get $k)) (local.get $g) (local.get $hh)))
            (else (call $an (local.get $w) (local.get $xr) (local.get $ir) (i32.add (local.get $xr) (local.get $k)) (local.get $g))))))
        (call $store4 (local.get $y) (local.get $ys) (local.get $r) (local.get $i) (local.get $nv) (local.get $flags) (local.get $bias) (local.get $v))
        (local.set $xr (i32.add (local.get $xr) (local.get $aStride)))
        (local.set $ir (i32.add (local.get $ir) (i32.shl (local.get $g) (i32.const 3))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rows)))
      (local.set $w (i32.add (local.get $w) (local.get $block)))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $blocks))))

  ;; y[r] = row tokens[r] of a q8_m table in rows: byte codes at q, (scale, min) pairs at s per
  ;; group of gs values; each value code·scale + min, the product exact, so rounded once as ggml's.
  (func (export "embedKQ") (param $y i32) (param $q i32) (param $s i32) (param $tokens i32) (param $m i32) (param $dim i32) (param $gs i32)
    (local $r i32) (local $t i32) (local $j i32) (local $p i32)
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $t (i32.mul (i32.load (i32.add (local.get $tokens) (i32.shl (local.get $r) (i32.const 2)))) (local.get $dim)))
      (local.set $j (i32.const 0))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $dim)))
        (local.set $p (i32.add (local.get $s) (i32.shl (i32.div_u (i32.add (local.get $t) (local.get $j)) (local.get $gs)) (i32.const 3))))
        (f32.store (local.get $y) (f32.add
          (f32.mul (f32.convert_i32_u (i32.load8_u (i32.add (local.get $q) (i32.add (local.get $t) (local.get $j))))) (f32.load (local.get $p)))
          (f32.load offset=4 (local.get $p))))
        (local.set $y (i32.add (local.get $y) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $l)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))
;;@include kquant-q6.wat
)
