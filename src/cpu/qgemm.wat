;; The CPU rank's GEMM for prefill and batches of many rows over GGUF Q8_0 / Q4_0 weights, in
;; quant.wat's tiled layout (blocks of four rows; per group of 32, the rows' values, then their
;; four f32 scales), with int8 activations (quantizeA8's rows) or f32 ones (weight-only).
;;
;; Eight weight rows (two tiled blocks) are unpacked once into a panel that then stays in cache
;; against every input row, four input rows at a time, lanes being the panel's columns, so no sum
;; is horizontal:
;; - int8 (mode 1): per group, 16 turns of i16 pairs (each turn: [c0 k, c0 k+1, c1 k, …, c3 k+1]
;;   for columns 0..3, then 4..7; Q4_0's nibbles as nibble − 8), against each input row's pair
;;   k, k+1 splatted; i32x4.dot_i16x8_s is exact.
;; - Q4_0 × int8 in the relaxed build (mode 2): per group, 8 turns of four nibbles (0..15) per
;;   column against each row's four int8 values splatted, by relaxed SIMD's i8 × i7 dot into i16
;;   lanes (at most 16 · 127 · 15 = 30480 a group: no overflow), then − 8·Σxq.
;;   Either way each group's integer sum is quant.wat's, and ((f32)Σ · ws) · xs is added into the
;;   row's sums in the same order: the small-m kernel's results, bit for bit.
;;   The int8 rows are repacked once a call (`$interleave`: widened to i16 in mode 1), four rows
;;   side by side per turn, so a tile's loop reads them from one pointer.
;; - weight-only: per group, 32 turns of the eight columns' values as f32 (exact integers), each
;;   against one input splatted; the group's products summed in f32, then scaled by the weight's
;;   scale and added in, as quant.wat's matmulQ does (in another order: not its bits).
;; The tile's f32 sums live in 128 bytes of scratch (eight integer sums, two weight vectors and the
;; splat take the registers). Calls are written out: V8 does not inline them. Compiled into
;; qgemm-wasm.ts by scripts/build-wasm.mjs (MADD, relaxed-only).
(module
  (import "env" "memory" (memory 1 65536))

  ;; Stores [a_j, b_j, c_j, d_j] (32-bit lanes j = 0..3) at dst + j·stride: a 4 × 4 transpose.
  (func $tr4 (param $dst i32) (param $stride i32) (param $a v128) (param $b v128) (param $c v128) (param $d v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local.set $t0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $a) (local.get $b)))
    (local.set $t1 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $a) (local.get $b)))
    (local.set $t2 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $c) (local.get $d)))
    (local.set $t3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $c) (local.get $d)))
    (v128.store (local.get $dst)
      (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t0) (local.get $t2)))
    (v128.store (i32.add (local.get $dst) (local.get $stride))
      (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t0) (local.get $t2)))
    (v128.store (i32.add (local.get $dst) (i32.shl (local.get $stride) (i32.const 1)))
      (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t1) (local.get $t3)))
    (v128.store (i32.add (local.get $dst) (i32.mul (local.get $stride) (i32.const 3)))
      (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t1) (local.get $t3))))

  ;; The four rows of one tiled group at gw (Q8_0: dtype 0, Q4_0: 1) as i16 at tmp: row c's 32
  ;; values at tmp + 64·c (Q4_0's nibbles − 8).
  (func $expand (param $gw i32) (param $dtype i32) (param $tmp i32)
    (local $c i32) (local $lo v128) (local $hi v128) (local $b v128)
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $c) (i32.const 4)))
      (if (local.get $dtype)
        (then
          (local.set $b (v128.load (i32.add (local.get $gw) (i32.shl (local.get $c) (i32.const 4)))))
          (local.set $lo (i8x16.sub (v128.and (local.get $b) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8)))
          (local.set $hi (i8x16.sub (i8x16.shr_u (local.get $b) (i32.const 4)) (v128.const i8x16 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8))))
        (else
          (local.set $lo (v128.load offset=0 (i32.add (local.get $gw) (i32.shl (local.get $c) (i32.const 5)))))
          (local.set $hi (v128.load offset=16 (i32.add (local.get $gw) (i32.shl (local.get $c) (i32.const 5)))))))
      (v128.store offset=0 (local.get $tmp) (i16x8.extend_low_i8x16_s (local.get $lo)))
      (v128.store offset=16 (local.get $tmp) (i16x8.extend_high_i8x16_s (local.get $lo)))
      (v128.store offset=32 (local.get $tmp) (i16x8.extend_low_i8x16_s (local.get $hi)))
      (v128.store offset=48 (local.get $tmp) (i16x8.extend_high_i8x16_s (local.get $hi)))
      (local.set $tmp (i32.add (local.get $tmp) (i32.const 64)))
      (local.set $c (i32.add (local.get $c) (i32.const 1)))
      (br $l))))

  ;; Four i16 at p as f32 (exact).
  (func $f4 (param $p i32) (result v128)
    (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (v128.load64_zero (local.get $p)))))

  ;; Panel bytes per group in mode 0 (weight-only), 1 (int8, i16 pairs) and 2 (Q4_0 nibbles).
  (func $groupBytes (param $mode i32) (result i32)
    (select (select (i32.const 288) (i32.const 544) (i32.eq (local.get $mode) (i32.const 2))) (i32.const 1056) (local.get $mode)))

  ;; Unpacks the panel of tiled blocks b0 (columns 0..3) and b1 (4..7; b0 again when the panel
  ;; is short: its copies' sums are dropped) into p, g groups of gb bytes each: per group the
  ;; turns (mode 0: 32 of 32 bytes; 1: 16; 2: 8), then the eight f32 scales.
  (func $pack (param $b0 i32) (param $b1 i32) (param $g i32) (param $gb i32) (param $dtype i32) (param $mode i32) (param $tmp i32) (param $p i32)
    (local $h i32) (local $gi i32) (local $gw i32) (local $dst i32) (local $q i32) (local $t i32) (local $pg i32)
    (local $l0 v128) (local $l1 v128) (local $l2 v128) (local $l3 v128)
    (local.set $pg (call $groupBytes (local.get $mode)))
    (block $hd (loop $hl
      (br_if $hd (i32.ge_u (local.get $h) (i32.const 2)))
      (local.set $gw (select (local.get $b1) (local.get $b0) (local.get $h)))
      (local.set $dst (i32.add (local.get $p) (i32.shl (local.get $h) (i32.const 4))))
      (local.set $gi (i32.const 0))
      (block $gd (loop $gl
        (br_if $gd (i32.ge_u (local.get $gi) (local.get $g)))
        (local.set $q (i32.const 0))
        (if (i32.eq (local.get $mode) (i32.const 2))
          (then
            ;; Turns 0..3 from the low nibbles (values 0..15), 4..7 from the high ones (16..31).
            (local.set $l0 (v128.load offset=0 (local.get $gw)))
            (local.set $l1 (v128.load offset=16 (local.get $gw)))
            (local.set $l2 (v128.load offset=32 (local.get $gw)))
            (local.set $l3 (v128.load offset=48 (local.get $gw)))
            (call $tr4 (local.get $dst) (i32.const 32)
              (v128.and (local.get $l0) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
              (v128.and (local.get $l1) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
              (v128.and (local.get $l2) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
              (v128.and (local.get $l3) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
            (call $tr4 (i32.add (local.get $dst) (i32.const 128)) (i32.const 32)
              (i8x16.shr_u (local.get $l0) (i32.const 4)) (i8x16.shr_u (local.get $l1) (i32.const 4))
              (i8x16.shr_u (local.get $l2) (i32.const 4)) (i8x16.shr_u (local.get $l3) (i32.const 4)))
            (v128.store offset=256 (local.get $dst) (v128.load offset=64 (local.get $gw))))
        (else
        (call $expand (local.get $gw) (local.get $dtype) (local.get $tmp))
        (if (local.get $mode)
          (then
            ;; Quarter q (eight values: four pairs) of each row, as four turns.
            (block $qd (loop $ql
              (br_if $qd (i32.ge_u (local.get $q) (i32.const 4)))
              (local.set $t (i32.add (local.get $tmp) (i32.shl (local.get $q) (i32.const 4))))
              (call $tr4 (i32.add (local.get $dst) (i32.shl (local.get $q) (i32.const 7))) (i32.const 32)
                (v128.load offset=0 (local.get $t)) (v128.load offset=64 (local.get $t)) (v128.load offset=128 (local.get $t)) (v128.load offset=192 (local.get $t)))
              (local.set $q (i32.add (local.get $q) (i32.const 1)))
              (br $ql)))
            (v128.store offset=512 (local.get $dst) (v128.load (i32.add (local.get $gw) (select (i32.const 64) (i32.const 128) (local.get $dtype))))))
          (else
            ;; Four values q·4.. of each row, as four turns of one value per column.
            (block $qd (loop $ql
              (br_if $qd (i32.ge_u (local.get $q) (i32.const 8)))
              (local.set $t (i32.add (local.get $tmp) (i32.shl (local.get $q) (i32.const 3))))
              (call $tr4 (i32.add (local.get $dst) (i32.shl (local.get $q) (i32.const 7))) (i32.const 32)
                (call $f4 (local.get $t)) (call $f4 (i32.add (local.get $t) (i32.const 64)))
                (call $f4 (i32.add (local.get $t) (i32.const 128))) (call $f4 (i32.add (local.get $t) (i32.const 192))))
              (local.set $q (i32.add (local.get $q) (i32.const 1)))
              (br $ql)))
            (v128.store offset=1024 (local.get $dst) (v128.load (i32.add (local.get $gw) (select (i32.const 64) (i32.const 128) (local.get $dtype)))))))))
        (local.set $gw (i32.add (local.get $gw) (local.get $gb)))
        (local.set $dst (i32.add (local.get $dst) (local.get $pg)))
        (local.set $gi (i32.add (local.get $gi) (i32.const 1)))
        (br $gl)))
      (local.set $h (i32.add (local.get $h) (i32.const 1)))
      (br $hl))))

  ;; The int8 tile: four input rows, repacked at xb (`$interleave`'s mode-1 blocks), against the
  ;; int8 panel p of g groups; the sums go into f (4 rows × 8 f32).
  (func $tileA8 (param $p i32) (param $xb i32) (param $g i32) (param $f i32)
    (local $a0 v128) (local $b0 v128) (local $a1 v128) (local $b1 v128) (local $a2 v128) (local $b2 v128) (local $a3 v128) (local $b3 v128)
    (local $w0 v128) (local $w1 v128) (local $s v128) (local $e i32) (local $pe i32)
    (local.set $pe (i32.add (local.get $p) (i32.mul (local.get $g) (i32.const 544))))
    (block $gd (loop $gl
      (br_if $gd (i32.ge_u (local.get $p) (local.get $pe)))
      (local.set $a0 (v128.const i32x4 0 0 0 0)) (local.set $b0 (v128.const i32x4 0 0 0 0))
      (local.set $a1 (v128.const i32x4 0 0 0 0)) (local.set $b1 (v128.const i32x4 0 0 0 0))
      (local.set $a2 (v128.const i32x4 0 0 0 0)) (local.set $b2 (v128.const i32x4 0 0 0 0))
      (local.set $a3 (v128.const i32x4 0 0 0 0)) (local.set $b3 (v128.const i32x4 0 0 0 0))
      (local.set $e (i32.add (local.get $p) (i32.const 512)))
      (block $d (loop $l
        (local.set $w0 (v128.load offset=0 (local.get $p)))
        (local.set $w1 (v128.load offset=16 (local.get $p)))
        (local.set $s (v128.load32_splat offset=0 (local.get $xb)))
        (local.set $a0 (i32x4.add (local.get $a0) (i32x4.dot_i16x8_s (local.get $w0) (local.get $s))))
        (local.set $b0 (i32x4.add (local.get $b0) (i32x4.dot_i16x8_s (local.get $w1) (local.get $s))))
        (local.set $s (v128.load32_splat offset=4 (local.get $xb)))
        (local.set $a1 (i32x4.add (local.get $a1) (i32x4.dot_i16x8_s (local.get $w0) (local.get $s))))
        (local.set $b1 (i32x4.add (local.get $b1) (i32x4.dot_i16x8_s (local.get $w1) (local.get $s))))
        (local.set $s (v128.load32_splat offset=8 (local.get $xb)))
        (local.set $a2 (i32x4.add (local.get $a2) (i32x4.dot_i16x8_s (local.get $w0) (local.get $s))))
        (local.set $b2 (i32x4.add (local.get $b2) (i32x4.dot_i16x8_s (local.get $w1) (local.get $s))))
        (local.set $s (v128.load32_splat offset=12 (local.get $xb)))
        (local.set $a3 (i32x4.add (local.get $a3) (i32x4.dot_i16x8_s (local.get $w0) (local.get $s))))
        (local.set $b3 (i32x4.add (local.get $b3) (i32x4.dot_i16x8_s (local.get $w1) (local.get $s))))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))
        (local.set $xb (i32.add (local.get $xb) (i32.const 16)))
        (br_if $l (i32.lt_u (local.get $p) (local.get $e)))))
      ;; f += ((f32)Σ · ws) · xs, row by row (ws: the eight weights' scales, xs: the row's).
      (local.set $w0 (v128.load offset=0 (local.get $p)))
      (local.set $w1 (v128.load offset=16 (local.get $p)))
      (local.set $s (v128.load32_splat offset=0 (local.get $xb)))
      (v128.store offset=0 (local.get $f) (f32x4.add (v128.load offset=0 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (local.get $a0)) (local.get $w0)) (local.get $s))))
      (v128.store offset=16 (local.get $f) (f32x4.add (v128.load offset=16 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (local.get $b0)) (local.get $w1)) (local.get $s))))
      (local.set $s (v128.load32_splat offset=4 (local.get $xb)))
      (v128.store offset=32 (local.get $f) (f32x4.add (v128.load offset=32 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (local.get $a1)) (local.get $w0)) (local.get $s))))
      (v128.store offset=48 (local.get $f) (f32x4.add (v128.load offset=48 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (local.get $b1)) (local.get $w1)) (local.get $s))))
      (local.set $s (v128.load32_splat offset=8 (local.get $xb)))
      (v128.store offset=64 (local.get $f) (f32x4.add (v128.load offset=64 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (local.get $a2)) (local.get $w0)) (local.get $s))))
      (v128.store offset=80 (local.get $f) (f32x4.add (v128.load offset=80 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (local.get $b2)) (local.get $w1)) (local.get $s))))
      (local.set $s (v128.load32_splat offset=12 (local.get $xb)))
      (v128.store offset=96 (local.get $f) (f32x4.add (v128.load offset=96 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (local.get $a3)) (local.get $w0)) (local.get $s))))
      (v128.store offset=112 (local.get $f) (f32x4.add (v128.load offset=112 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (local.get $b3)) (local.get $w1)) (local.get $s))))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (local.set $xb (i32.add (local.get $xb) (i32.const 16)))
      (br $gl))))

;;@relaxed-only
  ;; The Q4_0 tile of mode 2: four int8 input rows, repacked at xb (`$interleave`'s blocks), against
  ;; the nibble panel p of g groups; the sums go into f (4 rows × 8 f32). One pointer serves the four
  ;; rows' splats, and their −8·Σxq and scales are loaded ready: the loop carries two increments,
  ;; not five. (Writing a group's eight turns out is slower: V8 hoists every load, then spills.)
  (func $tileQ4r (param $p i32) (param $xb i32) (param $g i32) (param $f i32)
    (local $a0 v128) (local $b0 v128) (local $a1 v128) (local $b1 v128) (local $a2 v128) (local $b2 v128) (local $a3 v128) (local $b3 v128)
    (local $w0 v128) (local $w1 v128) (local $s v128) (local $c v128) (local $one v128) (local $e i32) (local $pe i32)
    (local.set $one (v128.const i16x8 1 1 1 1 1 1 1 1))
    (local.set $pe (i32.add (local.get $p) (i32.mul (local.get $g) (i32.const 288))))
    (block $gd (loop $gl
      (br_if $gd (i32.ge_u (local.get $p) (local.get $pe)))
      (local.set $a0 (v128.const i32x4 0 0 0 0)) (local.set $b0 (v128.const i32x4 0 0 0 0))
      (local.set $a1 (v128.const i32x4 0 0 0 0)) (local.set $b1 (v128.const i32x4 0 0 0 0))
      (local.set $a2 (v128.const i32x4 0 0 0 0)) (local.set $b2 (v128.const i32x4 0 0 0 0))
      (local.set $a3 (v128.const i32x4 0 0 0 0)) (local.set $b3 (v128.const i32x4 0 0 0 0))
      (local.set $e (i32.add (local.get $p) (i32.const 256)))
      (block $d (loop $l
        (local.set $w0 (v128.load offset=0 (local.get $p)))
        (local.set $w1 (v128.load offset=16 (local.get $p)))
        (local.set $s (v128.load32_splat offset=0 (local.get $xb)))
        (local.set $a0 (i16x8.add (local.get $a0) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $s) (local.get $w0))))
        (local.set $b0 (i16x8.add (local.get $b0) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $s) (local.get $w1))))
        (local.set $s (v128.load32_splat offset=4 (local.get $xb)))
        (local.set $a1 (i16x8.add (local.get $a1) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $s) (local.get $w0))))
        (local.set $b1 (i16x8.add (local.get $b1) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $s) (local.get $w1))))
        (local.set $s (v128.load32_splat offset=8 (local.get $xb)))
        (local.set $a2 (i16x8.add (local.get $a2) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $s) (local.get $w0))))
        (local.set $b2 (i16x8.add (local.get $b2) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $s) (local.get $w1))))
        (local.set $s (v128.load32_splat offset=12 (local.get $xb)))
        (local.set $a3 (i16x8.add (local.get $a3) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $s) (local.get $w0))))
        (local.set $b3 (i16x8.add (local.get $b3) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $s) (local.get $w1))))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))
        (local.set $xb (i32.add (local.get $xb) (i32.const 16)))
        (br_if $l (i32.lt_u (local.get $p) (local.get $e)))))
      ;; Each column's i32 sum (its two i16 lanes) − 8·Σxq, then f += ((f32)Σ · ws) · xs as above.
      (local.set $w0 (v128.load offset=0 (local.get $p)))
      (local.set $w1 (v128.load offset=16 (local.get $p)))
      (local.set $c (v128.load32_splat offset=0 (local.get $xb)))
      (local.set $s (v128.load32_splat offset=16 (local.get $xb)))
      (v128.store offset=0 (local.get $f) (f32x4.add (v128.load offset=0 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add (i32x4.dot_i16x8_s (local.get $a0) (local.get $one)) (local.get $c))) (local.get $w0)) (local.get $s))))
      (v128.store offset=16 (local.get $f) (f32x4.add (v128.load offset=16 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add (i32x4.dot_i16x8_s (local.get $b0) (local.get $one)) (local.get $c))) (local.get $w1)) (local.get $s))))
      (local.set $c (v128.load32_splat offset=4 (local.get $xb)))
      (local.set $s (v128.load32_splat offset=20 (local.get $xb)))
      (v128.store offset=32 (local.get $f) (f32x4.add (v128.load offset=32 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add (i32x4.dot_i16x8_s (local.get $a1) (local.get $one)) (local.get $c))) (local.get $w0)) (local.get $s))))
      (v128.store offset=48 (local.get $f) (f32x4.add (v128.load offset=48 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add (i32x4.dot_i16x8_s (local.get $b1) (local.get $one)) (local.get $c))) (local.get $w1)) (local.get $s))))
      (local.set $c (v128.load32_splat offset=8 (local.get $xb)))
      (local.set $s (v128.load32_splat offset=24 (local.get $xb)))
      (v128.store offset=64 (local.get $f) (f32x4.add (v128.load offset=64 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add (i32x4.dot_i16x8_s (local.get $a2) (local.get $one)) (local.get $c))) (local.get $w0)) (local.get $s))))
      (v128.store offset=80 (local.get $f) (f32x4.add (v128.load offset=80 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add (i32x4.dot_i16x8_s (local.get $b2) (local.get $one)) (local.get $c))) (local.get $w1)) (local.get $s))))
      (local.set $c (v128.load32_splat offset=12 (local.get $xb)))
      (local.set $s (v128.load32_splat offset=28 (local.get $xb)))
      (v128.store offset=96 (local.get $f) (f32x4.add (v128.load offset=96 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add (i32x4.dot_i16x8_s (local.get $a3) (local.get $one)) (local.get $c))) (local.get $w0)) (local.get $s))))
      (v128.store offset=112 (local.get $f) (f32x4.add (v128.load offset=112 (local.get $f)) (f32x4.mul (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add (i32x4.dot_i16x8_s (local.get $b3) (local.get $one)) (local.get $c))) (local.get $w1)) (local.get $s))))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (local.set $xb (i32.add (local.get $xb) (i32.const 32)))
      (br $gl))))

;;@end-relaxed

  ;; The int8 rows (quantizeA8's, aStride bytes apart) repacked at dst per block of four rows (a
  ;; last short block repeats row m − 1) and group, so that a tile reads all four from one pointer.
  ;; mode 1, 272 bytes: 16 turns of [r0's x 2t, 2t+1 as i16, r1's, r2's, r3's], then the rows'
  ;; scales (f32). mode 2, 160 bytes: 8 turns of [r0's x 4t..4t+3, r1's, r2's, r3's], then the
  ;; rows' −8·Σxq (i32), then their scales.
  (func $interleave (param $dst i32) (param $x i32) (param $aStride i32) (param $m i32) (param $k i32) (param $g i32) (param $mode i32)
    (local $r i32) (local $j i32) (local $gi i32) (local $x0 i32) (local $x1 i32) (local $x2 i32) (local $x3 i32) (local $q i32) (local $h i32) (local $l0 v128) (local $l1 v128) (local $l2 v128) (local $l3 v128)
    (block $rd (loop $rl
      (br_if $rd (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $x0 (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $aStride))))
      (local.set $x1 (i32.add (local.get $x) (i32.mul (select (i32.add (local.get $r) (i32.const 1)) (i32.sub (local.get $m) (i32.const 1)) (i32.lt_u (i32.add (local.get $r) (i32.const 1)) (local.get $m))) (local.get $aStride))))
      (local.set $x2 (i32.add (local.get $x) (i32.mul (select (i32.add (local.get $r) (i32.const 2)) (i32.sub (local.get $m) (i32.const 1)) (i32.lt_u (i32.add (local.get $r) (i32.const 2)) (local.get $m))) (local.get $aStride))))
      (local.set $x3 (i32.add (local.get $x) (i32.mul (select (i32.add (local.get $r) (i32.const 3)) (i32.sub (local.get $m) (i32.const 1)) (i32.lt_u (i32.add (local.get $r) (i32.const 3)) (local.get $m))) (local.get $aStride))))
      (local.set $gi (i32.const 0))
      (block $gd (loop $gl
        (br_if $gd (i32.ge_u (local.get $gi) (local.get $g)))
        (local.set $j (i32.shl (local.get $gi) (i32.const 5)))
        (if (i32.eq (local.get $mode) (i32.const 1))
          (then
            ;; Each half of the group widened: its low eight values are turns 8h..8h+3, its high ones 8h+4..8h+7.
            (local.set $h (i32.const 0))
            (block $hd (loop $hl
              (br_if $hd (i32.ge_u (local.get $h) (i32.const 2)))
              (local.set $q (i32.add (local.get $j) (i32.shl (local.get $h) (i32.const 4))))
              (local.set $l0 (v128.load (i32.add (local.get $x0) (local.get $q))))
              (local.set $l1 (v128.load (i32.add (local.get $x1) (local.get $q))))
              (local.set $l2 (v128.load (i32.add (local.get $x2) (local.get $q))))
              (local.set $l3 (v128.load (i32.add (local.get $x3) (local.get $q))))
              (call $tr4 (i32.add (local.get $dst) (i32.shl (local.get $h) (i32.const 7))) (i32.const 16)
                (i16x8.extend_low_i8x16_s (local.get $l0)) (i16x8.extend_low_i8x16_s (local.get $l1))
                (i16x8.extend_low_i8x16_s (local.get $l2)) (i16x8.extend_low_i8x16_s (local.get $l3)))
              (call $tr4 (i32.add (i32.add (local.get $dst) (i32.shl (local.get $h) (i32.const 7))) (i32.const 64)) (i32.const 16)
                (i16x8.extend_high_i8x16_s (local.get $l0)) (i16x8.extend_high_i8x16_s (local.get $l1))
                (i16x8.extend_high_i8x16_s (local.get $l2)) (i16x8.extend_high_i8x16_s (local.get $l3)))
              (local.set $h (i32.add (local.get $h) (i32.const 1)))
              (br $hl)))
            (local.set $q (i32.add (local.get $k) (i32.shl (local.get $gi) (i32.const 2))))
            (i32.store offset=256 (local.get $dst) (i32.load (i32.add (local.get $x0) (local.get $q))))
            (i32.store offset=260 (local.get $dst) (i32.load (i32.add (local.get $x1) (local.get $q))))
            (i32.store offset=264 (local.get $dst) (i32.load (i32.add (local.get $x2) (local.get $q))))
            (i32.store offset=268 (local.get $dst) (i32.load (i32.add (local.get $x3) (local.get $q))))
            (local.set $dst (i32.add (local.get $dst) (i32.const 272))))
          (else
          (call $tr4 (local.get $dst) (i32.const 16)
            (v128.load (i32.add (local.get $x0) (local.get $j))) (v128.load (i32.add (local.get $x1) (local.get $j)))
            (v128.load (i32.add (local.get $x2) (local.get $j))) (v128.load (i32.add (local.get $x3) (local.get $j))))
          (call $tr4 (i32.add (local.get $dst) (i32.const 64)) (i32.const 16)
            (v128.load offset=16 (i32.add (local.get $x0) (local.get $j))) (v128.load offset=16 (i32.add (local.get $x1) (local.get $j)))
            (v128.load offset=16 (i32.add (local.get $x2) (local.get $j))) (v128.load offset=16 (i32.add (local.get $x3) (local.get $j))))
          ;; A row's scales start at its byte k, its sums 4·g bytes after.
          (local.set $q (i32.add (local.get $k) (i32.shl (local.get $gi) (i32.const 2))))
          (i32.store offset=128 (local.get $dst) (i32.mul (i32.load (i32.add (i32.add (local.get $x0) (local.get $q)) (i32.shl (local.get $g) (i32.const 2)))) (i32.const -8)))
          (i32.store offset=132 (local.get $dst) (i32.mul (i32.load (i32.add (i32.add (local.get $x1) (local.get $q)) (i32.shl (local.get $g) (i32.const 2)))) (i32.const -8)))
          (i32.store offset=136 (local.get $dst) (i32.mul (i32.load (i32.add (i32.add (local.get $x2) (local.get $q)) (i32.shl (local.get $g) (i32.const 2)))) (i32.const -8)))
          (i32.store offset=140 (local.get $dst) (i32.mul (i32.load (i32.add (i32.add (local.get $x3) (local.get $q)) (i32.shl (local.get $g) (i32.const 2)))) (i32.const -8)))
          (i32.store offset=144 (local.get $dst) (i32.load (i32.add (local.get $x0) (local.get $q))))
          (i32.store offset=148 (local.get $dst) (i32.load (i32.add (local.get $x1) (local.get $q))))
          (i32.store offset=152 (local.get $dst) (i32.load (i32.add (local.get $x2) (local.get $q))))
          (i32.store offset=156 (local.get $dst) (i32.load (i32.add (local.get $x3) (local.get $q))))
            (local.set $dst (i32.add (local.get $dst) (i32.const 160)))))
        (local.set $gi (i32.add (local.get $gi) (i32.const 1)))
        (br $gl)))
      (local.set $r (i32.add (local.get $r) (i32.const 4)))
      (br $rl))))
  ;; The weight-only tile: four f32 input rows at x0..x3 against the f32 panel p of g groups.
  (func $tileF (param $p i32) (param $x0 i32) (param $x1 i32) (param $x2 i32) (param $x3 i32) (param $g i32) (param $f i32)
    (local $a0 v128) (local $b0 v128) (local $a1 v128) (local $b1 v128) (local $a2 v128) (local $b2 v128) (local $a3 v128) (local $b3 v128)
    (local $w0 v128) (local $w1 v128) (local $s v128) (local $e i32) (local $pe i32)
    (local.set $pe (i32.add (local.get $p) (i32.mul (local.get $g) (i32.const 1056))))
    (block $gd (loop $gl
      (br_if $gd (i32.ge_u (local.get $p) (local.get $pe)))
      (local.set $a0 (v128.const i32x4 0 0 0 0)) (local.set $b0 (v128.const i32x4 0 0 0 0))
      (local.set $a1 (v128.const i32x4 0 0 0 0)) (local.set $b1 (v128.const i32x4 0 0 0 0))
      (local.set $a2 (v128.const i32x4 0 0 0 0)) (local.set $b2 (v128.const i32x4 0 0 0 0))
      (local.set $a3 (v128.const i32x4 0 0 0 0)) (local.set $b3 (v128.const i32x4 0 0 0 0))
      (local.set $e (i32.add (local.get $p) (i32.const 1024)))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $w0 (v128.load offset=0 (local.get $p)))
        (local.set $w1 (v128.load offset=16 (local.get $p)))
        (local.set $s (v128.load32_splat (local.get $x0)))
        (local.set $a0 (MADD (local.get $w0) (local.get $s) (local.get $a0)))
        (local.set $b0 (MADD (local.get $w1) (local.get $s) (local.get $b0)))
        (local.set $s (v128.load32_splat (local.get $x1)))
        (local.set $a1 (MADD (local.get $w0) (local.get $s) (local.get $a1)))
        (local.set $b1 (MADD (local.get $w1) (local.get $s) (local.get $b1)))
        (local.set $s (v128.load32_splat (local.get $x2)))
        (local.set $a2 (MADD (local.get $w0) (local.get $s) (local.get $a2)))
        (local.set $b2 (MADD (local.get $w1) (local.get $s) (local.get $b2)))
        (local.set $s (v128.load32_splat (local.get $x3)))
        (local.set $a3 (MADD (local.get $w0) (local.get $s) (local.get $a3)))
        (local.set $b3 (MADD (local.get $w1) (local.get $s) (local.get $b3)))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))
        (local.set $x0 (i32.add (local.get $x0) (i32.const 4)))
        (local.set $x1 (i32.add (local.get $x1) (i32.const 4)))
        (local.set $x2 (i32.add (local.get $x2) (i32.const 4)))
        (local.set $x3 (i32.add (local.get $x3) (i32.const 4)))
        (br $l)))
      ;; f += Σ · ws, row by row.
      (local.set $w0 (v128.load offset=0 (local.get $p)))
      (local.set $w1 (v128.load offset=16 (local.get $p)))
      (v128.store offset=0 (local.get $f) (MADD (local.get $a0) (local.get $w0) (v128.load offset=0 (local.get $f))))
      (v128.store offset=16 (local.get $f) (MADD (local.get $b0) (local.get $w1) (v128.load offset=16 (local.get $f))))
      (v128.store offset=32 (local.get $f) (MADD (local.get $a1) (local.get $w0) (v128.load offset=32 (local.get $f))))
      (v128.store offset=48 (local.get $f) (MADD (local.get $b1) (local.get $w1) (v128.load offset=48 (local.get $f))))
      (v128.store offset=64 (local.get $f) (MADD (local.get $a2) (local.get $w0) (v128.load offset=64 (local.get $f))))
      (v128.store offset=80 (local.get $f) (MADD (local.get $b2) (local.get $w1) (v128.load offset=80 (local.get $f))))
      (v128.store offset=96 (local.get $f) (MADD (local.get $a3) (local.get $w0) (v128.load offset=96 (local.get $f))))
      (v128.store offset=112 (local.get $f) (MADD (local.get $b3) (local.get $w1) (v128.load offset=112 (local.get $f))))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (br $gl))))

  ;; Rows r.. (up to four, below m) of the tile's sums f into y (rows of n floats), columns i..i+nv:
  ;; (flags&1 ? y : 0) + (v + (flags&2 ? bias : 0)), as quant.wat's store4.
  (func $store (param $y i32) (param $n i32) (param $r i32) (param $m i32) (param $i i32) (param $nv i32) (param $flags i32) (param $bias i32) (param $f i32)
    (local $rr i32) (local $c i32) (local $p i32) (local $v f32) (local $f0 v128) (local $f1 v128)
    (block $rd (loop $rl
      (br_if $rd (i32.or (i32.ge_u (local.get $rr) (i32.const 4)) (i32.ge_u (i32.add (local.get $r) (local.get $rr)) (local.get $m))))
      (local.set $p (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (i32.add (local.get $r) (local.get $rr)) (local.get $n)) (local.get $i)) (i32.const 2))))
      (local.set $c (i32.const 0))
      ;; A whole panel's row as two vectors (the same additions, lane by lane), else column by column.
      (if (i32.eq (local.get $nv) (i32.const 8)) (then
        (local.set $f0 (v128.load offset=0 (i32.add (local.get $f) (i32.shl (local.get $rr) (i32.const 5)))))
        (local.set $f1 (v128.load offset=16 (i32.add (local.get $f) (i32.shl (local.get $rr) (i32.const 5)))))
        (if (i32.and (local.get $flags) (i32.const 2)) (then
          (local.set $f0 (f32x4.add (local.get $f0) (v128.load offset=0 (i32.add (local.get $bias) (i32.shl (local.get $i) (i32.const 2))))))
          (local.set $f1 (f32x4.add (local.get $f1) (v128.load offset=16 (i32.add (local.get $bias) (i32.shl (local.get $i) (i32.const 2))))))))
        (if (i32.and (local.get $flags) (i32.const 1)) (then
          (local.set $f0 (f32x4.add (v128.load offset=0 (local.get $p)) (local.get $f0)))
          (local.set $f1 (f32x4.add (v128.load offset=16 (local.get $p)) (local.get $f1)))))
        (v128.store offset=0 (local.get $p) (local.get $f0))
        (v128.store offset=16 (local.get $p) (local.get $f1))
        (local.set $c (i32.const 8))))
      (block $cd (loop $cl
        (br_if $cd (i32.ge_u (local.get $c) (local.get $nv)))
        (local.set $v (f32.load (i32.add (local.get $f) (i32.shl (i32.add (i32.shl (local.get $rr) (i32.const 3)) (local.get $c)) (i32.const 2)))))
        (if (i32.and (local.get $flags) (i32.const 2))
          (then (local.set $v (f32.add (local.get $v) (f32.load (i32.add (local.get $bias) (i32.shl (i32.add (local.get $i) (local.get $c)) (i32.const 2))))))))
        (if (i32.and (local.get $flags) (i32.const 1))
          (then (local.set $v (f32.add (f32.load (local.get $p)) (local.get $v)))))
        (f32.store (local.get $p) (local.get $v))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $c (i32.add (local.get $c) (i32.const 1)))
        (br $cl)))
      (local.set $rr (i32.add (local.get $rr) (i32.const 1)))
      (br $rl))))

  ;; y (m, n) = x · wᵀ (+ bias), or y += it, w (n, k) tiled Q8_0 (dtype 0) or Q4_0 (1), k a multiple
  ;; of 32. mode 0: x is f32, rows xStride floats apart; 1, or 2 (Q4_0, relaxed build only): x is
  ;; quantizeA8's m rows. flags: 1 accumulate into y, 2 add bias (n,). scratch: 384 + 33·k +
  ;; 17·k·(m + 3)/8 bytes (the tile's sums, an unpacked group, the panel, the rows repacked).
  (func (export "gemmQ") (param $y i32) (param $x i32) (param $xStride i32) (param $w i32)
    (param $m i32) (param $k i32) (param $n i32) (param $flags i32) (param $bias i32) (param $dtype i32) (param $mode i32) (param $scratch i32)
    (local $g i32) (local $gb i32) (local $blk i32) (local $aStride i32) (local $tmp i32) (local $p i32) (local $a16 i32)
    (local $i i32) (local $r i32) (local $nv i32) (local $b0 i32) (local $r1 i32) (local $r2 i32) (local $r3 i32)
    (local.set $g (i32.shr_u (local.get $k) (i32.const 5)))
    (local.set $gb (select (i32.const 80) (i32.const 144) (local.get $dtype)))
    (local.set $blk (i32.mul (local.get $g) (local.get $gb)))
    (local.set $aStride (i32.add (local.get $k) (i32.shl (local.get $g) (i32.const 3))))
    (local.set $tmp (i32.add (local.get $scratch) (i32.const 128)))
    (local.set $p (i32.add (local.get $scratch) (i32.const 384)))
    (local.set $a16 (i32.add (local.get $p) (i32.mul (local.get $k) (i32.const 33))))
    ;; The int8 rows repacked once, for every panel.
    (if (local.get $mode) (then
      (call $interleave (local.get $a16) (local.get $x) (local.get $aStride) (local.get $m) (local.get $k) (local.get $g) (local.get $mode))))
    (block $pd (loop $pl
      (br_if $pd (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $nv (select (i32.const 8) (i32.sub (local.get $n) (local.get $i)) (i32.gt_u (i32.sub (local.get $n) (local.get $i)) (i32.const 8))))
      (local.set $b0 (i32.add (local.get $w) (i32.mul (i32.shr_u (local.get $i) (i32.const 2)) (local.get $blk))))
      (call $pack (local.get $b0) (select (i32.add (local.get $b0) (local.get $blk)) (local.get $b0) (i32.gt_u (local.get $nv) (i32.const 4)))
        (local.get $g) (local.get $gb) (local.get $dtype) (local.get $mode) (local.get $tmp) (local.get $p))
      (local.set $r (i32.const 0))
      (block $rd (loop $rl
        (br_if $rd (i32.ge_u (local.get $r) (local.get $m)))
        ;; A last short group of rows repeats its last row; the copies' sums are not stored.
        (local.set $r1 (select (i32.add (local.get $r) (i32.const 1)) (i32.sub (local.get $m) (i32.const 1)) (i32.lt_u (i32.add (local.get $r) (i32.const 1)) (local.get $m))))
        (local.set $r2 (select (i32.add (local.get $r) (i32.const 2)) (i32.sub (local.get $m) (i32.const 1)) (i32.lt_u (i32.add (local.get $r) (i32.const 2)) (local.get $m))))
        (local.set $r3 (select (i32.add (local.get $r) (i32.const 3)) (i32.sub (local.get $m) (i32.const 1)) (i32.lt_u (i32.add (local.get $r) (i32.const 3)) (local.get $m))))
        (v128.store offset=0 (local.get $scratch) (v128.const i32x4 0 0 0 0))
        (v128.store offset=16 (local.get $scratch) (v128.const i32x4 0 0 0 0))
        (v128.store offset=32 (local.get $scratch) (v128.const i32x4 0 0 0 0))
        (v128.store offset=48 (local.get $scratch) (v128.const i32x4 0 0 0 0))
        (v128.store offset=64 (local.get $scratch) (v128.const i32x4 0 0 0 0))
        (v128.store offset=80 (local.get $scratch) (v128.const i32x4 0 0 0 0))
        (v128.store offset=96 (local.get $scratch) (v128.const i32x4 0 0 0 0))
        (v128.store offset=112 (local.get $scratch) (v128.const i32x4 0 0 0 0))
        (if (i32.eq (local.get $mode) (i32.const 2)) (then
;;@relaxed-only
          (call $tileQ4r (local.get $p) (i32.add (local.get $a16) (i32.mul (i32.mul (i32.shr_u (local.get $r) (i32.const 2)) (local.get $g)) (i32.const 160)))
            (local.get $g) (local.get $scratch))
;;@end-relaxed
        ) (else
        (if (local.get $mode)
          (then
            (call $tileA8 (local.get $p) (i32.add (local.get $a16) (i32.mul (i32.mul (i32.shr_u (local.get $r) (i32.const 2)) (local.get $g)) (i32.const 272)))
              (local.get $g) (local.get $scratch)))
          (else
            (call $tileF (local.get $p)
              (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r) (local.get $xStride)) (i32.const 2)))
              (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r1) (local.get $xStride)) (i32.const 2)))
              (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r2) (local.get $xStride)) (i32.const 2)))
              (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r3) (local.get $xStride)) (i32.const 2)))
              (local.get $g) (local.get $scratch))))))
        (call $store (local.get $y) (local.get $n) (local.get $r) (local.get $m) (local.get $i) (local.get $nv) (local.get $flags) (local.get $bias) (local.get $scratch))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (br $rl)))
      (local.set $i (i32.add (local.get $i) (i32.const 8)))
      (br $pl))))
)
