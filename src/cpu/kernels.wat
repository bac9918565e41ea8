;; The ops of a Llama layer for a CPU rank, on f32 or f16 (IEEE halves) weights, in f32x4 SIMD.
;; Arguments are byte addresses in the imported memory (the rank's shard and activations live
;; there), counts in elements. Halves are widened to f32 as they are loaded; all sums are f32.
;; Every loop has a scalar tail, so no size needs to be a multiple of 4 or 16.
;; exp is Math.exp's own algorithm, in f64 here (wasm has none; two lanes at a time where it can),
;; rounded to f32 as the oracle does.
;; Compiled into kernels-wasm.ts by scripts/build-wasm.mjs (npm run build:wasm).
(module
  (import "env" "memory" (memory 1 65536))

  ;; ---- halves -------------------------------------------------------------------------------

  ;; Four halves, zero-extended in i32 lanes, to f32: the magnitude shifted into place and scaled
  ;; by 2^112 (exact for normals and subnormals), inf/NaN given the full exponent, then the sign.
  ;; The f16 dot products spell it out inline: V8 does not inline the call, which then dominated them.
  (func $h2f4 (param $h v128) (result v128)
    (v128.or
      (v128.or
        (f32x4.mul
          (i32x4.shl (v128.and (local.get $h) (i32x4.splat (i32.const 0x7fff))) (i32.const 13))
          (f32x4.splat (f32.const 0x1p112)))
        (v128.and
          (i32x4.eq (v128.and (local.get $h) (i32x4.splat (i32.const 0x7c00))) (i32x4.splat (i32.const 0x7c00)))
          (i32x4.splat (i32.const 0x7f800000))))
      (i32x4.shl (v128.and (local.get $h) (i32x4.splat (i32.const 0x8000))) (i32.const 16))))

  (func $h2f (param $p i32) (result f32)
    (f32x4.extract_lane 0 (call $h2f4 (i32x4.splat (i32.load16_u (local.get $p))))))

  ;; Eight halves at p as two f32x4 (low four, high four).
  (func $load8h (param $p i32) (result v128 v128)
    (local $v v128)
    (local.set $v (v128.load (local.get $p)))
    (call $h2f4 (i32x4.extend_low_i16x8_u (local.get $v)))
    (call $h2f4 (i32x4.extend_high_i16x8_u (local.get $v))))

  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; ---- matmul: tiles of four weight rows against one or two input rows -------------------------

  ;; Each tile streams four weight rows once, eight weights a turn, with one f32x4 accumulator per
  ;; (weight row, input row); k's last k mod 8 go one at a time. Row r starts at w_r.
;;@each-dtype
  ;; Four @DT@ weight rows against input row x: their four dot products.
  (func $t41_@DT@ (param $w0 i32) (param $w1 i32) (param $w2 i32) (param $w3 i32) (param $x i32) (param $k i32) (result f32 f32 f32 f32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $lo v128) (local $hi v128)
    (local $xl v128) (local $xh v128) (local $hv v128) (local $hl v128) (local $hh v128)
    (local $j i32) (local $k8 i32) (local $s0 f32) (local $s1 f32) (local $s2 f32) (local $s3 f32) (local $f f32)
    (local.set $k8 (i32.and (local.get $k) (i32.const -8)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $k8)))
      (local.set $xl (v128.load (local.get $x)))
      (local.set $xh (v128.load offset=16 (local.get $x)))
      (WLOAD8 $lo $hi (local.get $w0))
      (local.set $a0 (MADD (local.get $hi) (local.get $xh) (MADD (local.get $lo) (local.get $xl) (local.get $a0))))
      (WLOAD8 $lo $hi (local.get $w1))
      (local.set $a1 (MADD (local.get $hi) (local.get $xh) (MADD (local.get $lo) (local.get $xl) (local.get $a1))))
      (WLOAD8 $lo $hi (local.get $w2))
      (local.set $a2 (MADD (local.get $hi) (local.get $xh) (MADD (local.get $lo) (local.get $xl) (local.get $a2))))
      (WLOAD8 $lo $hi (local.get $w3))
      (local.set $a3 (MADD (local.get $hi) (local.get $xh) (MADD (local.get $lo) (local.get $xl) (local.get $a3))))
      (local.set $w0 (i32.add (local.get $w0) (i32.const @WB8@)))
      (local.set $w1 (i32.add (local.get $w1) (i32.const @WB8@)))
      (local.set $w2 (i32.add (local.get $w2) (i32.const @WB8@)))
      (local.set $w3 (i32.add (local.get $w3) (i32.const @WB8@)))
      (local.set $x (i32.add (local.get $x) (i32.const 32)))
      (local.set $j (i32.add (local.get $j) (i32.const 8)))
      (br $l)))
    (local.set $s0 (call $hsum (local.get $a0)))
    (local.set $s1 (call $hsum (local.get $a1)))
    (local.set $s2 (call $hsum (local.get $a2)))
    (local.set $s3 (call $hsum (local.get $a3)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $k)))
      (local.set $f (f32.load (local.get $x)))
      (local.set $s0 (f32.add (local.get $s0) (f32.mul (WLOAD1 (local.get $w0)) (local.get $f))))
      (local.set $s1 (f32.add (local.get $s1) (f32.mul (WLOAD1 (local.get $w1)) (local.get $f))))
      (local.set $s2 (f32.add (local.get $s2) (f32.mul (WLOAD1 (local.get $w2)) (local.get $f))))
      (local.set $s3 (f32.add (local.get $s3) (f32.mul (WLOAD1 (local.get $w3)) (local.get $f))))
      (local.set $w0 (i32.add (local.get $w0) (i32.const @WB1@)))
      (local.set $w1 (i32.add (local.get $w1) (i32.const @WB1@)))
      (local.set $w2 (i32.add (local.get $w2) (i32.const @WB1@)))
      (local.set $w3 (i32.add (local.get $w3) (i32.const @WB1@)))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l)))
    (local.get $s0) (local.get $s1) (local.get $s2) (local.get $s3))

  ;; Four @DT@ weight rows against input rows x and z: row x's four sums, then row z's.
  (func $t42_@DT@ (param $w0 i32) (param $w1 i32) (param $w2 i32) (param $w3 i32) (param $x i32) (param $z i32) (param $k i32)
    (result f32 f32 f32 f32 f32 f32 f32 f32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local $lo v128) (local $hi v128) (local $hv v128) (local $hl v128) (local $hh v128) (local $xl v128) (local $xh v128) (local $zl v128) (local $zh v128)
    (local $j i32) (local $k8 i32) (local $f f32) (local $g f32) (local $v f32)
    (local $s0 f32) (local $s1 f32) (local $s2 f32) (local $s3 f32) (local $t0 f32) (local $t1 f32) (local $t2 f32) (local $t3 f32)
    (local.set $k8 (i32.and (local.get $k) (i32.const -8)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $k8)))
      (local.set $xl (v128.load (local.get $x)))
      (local.set $xh (v128.load offset=16 (local.get $x)))
      (local.set $zl (v128.load (local.get $z)))
      (local.set $zh (v128.load offset=16 (local.get $z)))
      (WLOAD8 $lo $hi (local.get $w0))
      (local.set $a0 (MADD (local.get $hi) (local.get $xh) (MADD (local.get $lo) (local.get $xl) (local.get $a0))))
      (local.set $b0 (MADD (local.get $hi) (local.get $zh) (MADD (local.get $lo) (local.get $zl) (local.get $b0))))
      (WLOAD8 $lo $hi (local.get $w1))
      (local.set $a1 (MADD (local.get $hi) (local.get $xh) (MADD (local.get $lo) (local.get $xl) (local.get $a1))))
      (local.set $b1 (MADD (local.get $hi) (local.get $zh) (MADD (local.get $lo) (local.get $zl) (local.get $b1))))
      (WLOAD8 $lo $hi (local.get $w2))
      (local.set $a2 (MADD (local.get $hi) (local.get $xh) (MADD (local.get $lo) (local.get $xl) (local.get $a2))))
      (local.set $b2 (MADD (local.get $hi) (local.get $zh) (MADD (local.get $lo) (local.get $zl) (local.get $b2))))
      (WLOAD8 $lo $hi (local.get $w3))
      (local.set $a3 (MADD (local.get $hi) (local.get $xh) (MADD (local.get $lo) (local.get $xl) (local.get $a3))))
      (local.set $b3 (MADD (local.get $hi) (local.get $zh) (MADD (local.get $lo) (local.get $zl) (local.get $b3))))
      (local.set $w0 (i32.add (local.get $w0) (i32.const @WB8@)))
      (local.set $w1 (i32.add (local.get $w1) (i32.const @WB8@)))
      (local.set $w2 (i32.add (local.get $w2) (i32.const @WB8@)))
      (local.set $w3 (i32.add (local.get $w3) (i32.const @WB8@)))
      (local.set $x (i32.add (local.get $x) (i32.const 32)))
      (local.set $z (i32.add (local.get $z) (i32.const 32)))
      (local.set $j (i32.add (local.get $j) (i32.const 8)))
      (br $l)))
    (local.set $s0 (call $hsum (local.get $a0)))
    (local.set $s1 (call $hsum (local.get $a1)))
    (local.set $s2 (call $hsum (local.get $a2)))
    (local.set $s3 (call $hsum (local.get $a3)))
    (local.set $t0 (call $hsum (local.get $b0)))
    (local.set $t1 (call $hsum (local.get $b1)))
    (local.set $t2 (call $hsum (local.get $b2)))
    (local.set $t3 (call $hsum (local.get $b3)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $k)))
      (local.set $f (f32.load (local.get $x)))
      (local.set $g (f32.load (local.get $z)))
      (local.set $v (WLOAD1 (local.get $w0)))
      (local.set $s0 (f32.add (local.get $s0) (f32.mul (local.get $v) (local.get $f))))
      (local.set $t0 (f32.add (local.get $t0) (f32.mul (local.get $v) (local.get $g))))
      (local.set $v (WLOAD1 (local.get $w1)))
      (local.set $s1 (f32.add (local.get $s1) (f32.mul (local.get $v) (local.get $f))))
      (local.set $t1 (f32.add (local.get $t1) (f32.mul (local.get $v) (local.get $g))))
      (local.set $v (WLOAD1 (local.get $w2)))
      (local.set $s2 (f32.add (local.get $s2) (f32.mul (local.get $v) (local.get $f))))
      (local.set $t2 (f32.add (local.get $t2) (f32.mul (local.get $v) (local.get $g))))
      (local.set $v (WLOAD1 (local.get $w3)))
      (local.set $s3 (f32.add (local.get $s3) (f32.mul (local.get $v) (local.get $f))))
      (local.set $t3 (f32.add (local.get $t3) (f32.mul (local.get $v) (local.get $g))))
      (local.set $w0 (i32.add (local.get $w0) (i32.const @WB1@)))
      (local.set $w1 (i32.add (local.get $w1) (i32.const @WB1@)))
      (local.set $w2 (i32.add (local.get $w2) (i32.const @WB1@)))
      (local.set $w3 (i32.add (local.get $w3) (i32.const @WB1@)))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $z (i32.add (local.get $z) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l)))
    (local.get $s0) (local.get $s1) (local.get $s2) (local.get $s3) (local.get $t0) (local.get $t1) (local.get $t2) (local.get $t3))
;;@end
  ;; Stores the first nv of one input row's four sums at y[r][i..]: (flags&1 ? y : 0) + (v + (flags&2 ? bias : 0)).
  (func $put4 (param $y i32) (param $n i32) (param $r i32) (param $i i32) (param $nv i32) (param $flags i32) (param $bias i32)
    (param $v0 f32) (param $v1 f32) (param $v2 f32) (param $v3 f32)
    (local $p i32) (local $b i32) (local $c i32) (local $v f32)
    (local.set $p (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $n)) (local.get $i)) (i32.const 2))))
    (local.set $b (i32.add (local.get $bias) (i32.shl (local.get $i) (i32.const 2))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $c) (local.get $nv)))
      (local.set $v (select (select (local.get $v0) (local.get $v1) (i32.eqz (local.get $c)))
        (select (local.get $v2) (local.get $v3) (i32.eq (local.get $c) (i32.const 2))) (i32.lt_u (local.get $c) (i32.const 2))))
      (if (i32.and (local.get $flags) (i32.const 2))
        (then (local.set $v (f32.add (local.get $v) (f32.load (local.get $b))))))
      (if (i32.and (local.get $flags) (i32.const 1))
        (then (local.set $v (f32.add (f32.load (local.get $p)) (local.get $v)))))
      (f32.store (local.get $p) (local.get $v))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (local.set $b (i32.add (local.get $b) (i32.const 4)))
      (local.set $c (i32.add (local.get $c) (i32.const 1)))
      (br $l))))

  ;; Where $touch leaves its loads, so that none of them is dead code.
  (global $sink (mut i32) (i32.const 0))

  ;; Reads one byte of every 64 in [at, at + bytes), bringing those cache lines in. A batch's tile
  ;; does so many operations per line that the core keeps only a few of its misses in flight (no
  ;; wasm prefetch); this loop keeps dozens, so the lines come at the memory's full rate.
  (func $touch (param $at i32) (param $bytes i32)
    (local $end i32) (local $s i32)
    (local.set $end (i32.add (local.get $at) (local.get $bytes)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $at) (local.get $end)))
      (local.set $s (i32.xor (local.get $s) (i32.load8_u (local.get $at))))
      (local.set $at (i32.add (local.get $at) (i32.const 64)))
      (br $l)))
    (global.set $sink (i32.xor (global.get $sink) (local.get $s))))

  ;; y (m, n) = x (m, k; rows xStride floats apart) · wᵀ, w (n, k) row-major (w[i] at w + i·k
  ;; weights) of f32 (dtype 0) or f16 (1). flags: 1 accumulate into y, 2 add bias (n,). Weight rows
  ;; go four at a time (a short last block repeats its last row and drops the extra sums), each
  ;; block against every input row (two at a time, then one) while it is in cache, so every weight
  ;; is read from memory once for the whole batch. With four or more input rows, each run of blocks
  ;; of about 48 KB is touched first (see $touch; at two rows the tile keeps up with memory and the
  ;; extra pass only costs); the sums are unchanged.
  (func (export "matmul") (param $y i32) (param $x i32) (param $xStride i32) (param $w i32)
    (param $m i32) (param $k i32) (param $n i32) (param $flags i32) (param $bias i32) (param $dtype i32)
    (local $i i32) (local $r i32) (local $wRow i32) (local $xs i32) (local $nv i32) (local $xr i32)
    (local $w0 i32) (local $w1 i32) (local $w2 i32) (local $w3 i32)
    (local $s0 f32) (local $s1 f32) (local $s2 f32) (local $s3 f32) (local $t0 f32) (local $t1 f32) (local $t2 f32) (local $t3 f32)
    (local $ahead i32) (local $run i32)
    (local.set $wRow (i32.mul (local.get $k) (i32.shr_u (i32.const 4) (local.get $dtype))))
    ;; Rows a touched run holds (a multiple of four, at least four).
    (local.set $run (i32.shl (i32.div_u (i32.const 49152) (i32.shl (i32.add (local.get $wRow) (i32.const 1)) (i32.const 2))) (i32.const 2)))
    (if (i32.eqz (local.get $run)) (then (local.set $run (i32.const 4))))
    (if (i32.lt_u (local.get $m) (i32.const 4)) (then (local.set $ahead (local.get $n))))
    (local.set $xs (i32.shl (local.get $xStride) (i32.const 2)))
    (block $blocksDone (loop $blocks
      (br_if $blocksDone (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $nv (select (i32.const 4) (i32.sub (local.get $n) (local.get $i)) (i32.gt_u (i32.sub (local.get $n) (local.get $i)) (i32.const 4))))
      (local.set $w0 (i32.add (local.get $w) (i32.mul (local.get $i) (local.get $wRow))))
      (if (i32.ge_u (local.get $i) (local.get $ahead)) (then
        (local.set $ahead (select (local.get $n) (i32.add (local.get $i) (local.get $run))
          (i32.gt_u (i32.add (local.get $i) (local.get $run)) (local.get $n))))
        (call $touch (local.get $w0) (i32.mul (i32.sub (local.get $ahead) (local.get $i)) (local.get $wRow)))))
      (local.set $w1 (i32.add (local.get $w0) (i32.mul (local.get $wRow) (select (i32.const 1) (i32.sub (local.get $nv) (i32.const 1)) (i32.gt_u (local.get $nv) (i32.const 1))))))
      (local.set $w2 (i32.add (local.get $w0) (i32.mul (local.get $wRow) (select (i32.const 2) (i32.sub (local.get $nv) (i32.const 1)) (i32.gt_u (local.get $nv) (i32.const 2))))))
      (local.set $w3 (i32.add (local.get $w0) (i32.mul (local.get $wRow) (i32.sub (local.get $nv) (i32.const 1)))))
      (local.set $r (i32.const 0))
      (local.set $xr (local.get $x))
      (block $pairsDone (loop $pairs
        (br_if $pairsDone (i32.ge_u (i32.add (local.get $r) (i32.const 1)) (local.get $m)))
        (if (result f32 f32 f32 f32 f32 f32 f32 f32) (local.get $dtype)
          (then (call $t42_f16 (local.get $w0) (local.get $w1) (local.get $w2) (local.get $w3) (local.get $xr) (i32.add (local.get $xr) (local.get $xs)) (local.get $k)))
          (else (call $t42_f32 (local.get $w0) (local.get $w1) (local.get $w2) (local.get $w3) (local.get $xr) (i32.add (local.get $xr) (local.get $xs)) (local.get $k))))
        (local.set $t3) (local.set $t2) (local.set $t1) (local.set $t0) (local.set $s3) (local.set $s2) (local.set $s1) (local.set $s0)
        (call $put4 (local.get $y) (local.get $n) (local.get $r) (local.get $i) (local.get $nv) (local.get $flags) (local.get $bias)
          (local.get $s0) (local.get $s1) (local.get $s2) (local.get $s3))
        (call $put4 (local.get $y) (local.get $n) (i32.add (local.get $r) (i32.const 1)) (local.get $i) (local.get $nv) (local.get $flags) (local.get $bias)
          (local.get $t0) (local.get $t1) (local.get $t2) (local.get $t3))
        (local.set $xr (i32.add (local.get $xr) (i32.shl (local.get $xs) (i32.const 1))))
        (local.set $r (i32.add (local.get $r) (i32.const 2)))
        (br $pairs)))
      (if (i32.lt_u (local.get $r) (local.get $m)) (then
        (if (result f32 f32 f32 f32) (local.get $dtype)
          (then (call $t41_f16 (local.get $w0) (local.get $w1) (local.get $w2) (local.get $w3) (local.get $xr) (local.get $k)))
          (else (call $t41_f32 (local.get $w0) (local.get $w1) (local.get $w2) (local.get $w3) (local.get $xr) (local.get $k))))
        (local.set $s3) (local.set $s2) (local.set $s1) (local.set $s0)
        (call $put4 (local.get $y) (local.get $n) (local.get $r) (local.get $i) (local.get $nv) (local.get $flags) (local.get $bias)
          (local.get $s0) (local.get $s1) (local.get $s2) (local.get $s3))))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $blocks))))

  ;; ---- element-wise -------------------------------------------------------------------------

  ;; Per row of dim: ss = Σx²/dim + eps; y = g·(x/√ss) (run.c's order). y may be x.
  (func (export "rmsnorm") (param $y i32) (param $x i32) (param $g i32) (param $m i32) (param $dim i32) (param $eps f32)
    (local $r i32) (local $j i32) (local $d4 i32) (local $acc v128) (local $ss f32) (local $s v128)
    (local $xp i32) (local $yp i32) (local $gp i32) (local $v f32)
    (local.set $d4 (i32.and (local.get $dim) (i32.const -4)))
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $acc (v128.const i32x4 0 0 0 0))
      (local.set $xp (local.get $x))
      (local.set $j (i32.const 0))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $d4)))
        (local.set $s (v128.load (local.get $xp)))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $s) (local.get $s))))
        (local.set $xp (i32.add (local.get $xp) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $l)))
      (local.set $ss (call $hsum (local.get $acc)))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $dim)))
        (local.set $v (f32.load (local.get $xp)))
        (local.set $ss (f32.add (local.get $ss) (f32.mul (local.get $v) (local.get $v))))
        (local.set $xp (i32.add (local.get $xp) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $l)))
      (local.set $ss (f32.div (f32.const 1)
        (f32.sqrt (f32.add (f32.div (local.get $ss) (f32.convert_i32_u (local.get $dim))) (local.get $eps)))))
      (local.set $s (f32x4.splat (local.get $ss)))
      (local.set $xp (local.get $x))
      (local.set $yp (local.get $y))
      (local.set $gp (local.get $g))
      (local.set $j (i32.const 0))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $d4)))
        (v128.store (local.get $yp) (f32x4.mul (v128.load (local.get $gp)) (f32x4.mul (local.get $s) (v128.load (local.get $xp)))))
        (local.set $xp (i32.add (local.get $xp) (i32.const 16)))
        (local.set $yp (i32.add (local.get $yp) (i32.const 16)))
        (local.set $gp (i32.add (local.get $gp) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $l)))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $dim)))
        (f32.store (local.get $yp) (f32.mul (f32.load (local.get $gp)) (f32.mul (local.get $ss) (f32.load (local.get $xp)))))
        (local.set $xp (i32.add (local.get $xp) (i32.const 4)))
        (local.set $yp (i32.add (local.get $yp) (i32.const 4)))
        (local.set $gp (i32.add (local.get $gp) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $l)))
      (local.set $x (i32.add (local.get $x) (i32.shl (local.get $dim) (i32.const 2))))
      (local.set $y (i32.add (local.get $y) (i32.shl (local.get $dim) (i32.const 2))))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

  ;; y[i] += x[i], i < n (the residual; y may be x's rows of a longer buffer).
  (func $add (export "add") (param $y i32) (param $x i32) (param $n i32)
    (local $j i32) (local $n4 i32)
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n4)))
      (v128.store (local.get $y) (f32x4.add (v128.load (local.get $y)) (v128.load (local.get $x))))
      (local.set $y (i32.add (local.get $y) (i32.const 16)))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br $l)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n)))
      (f32.store (local.get $y) (f32.add (f32.load (local.get $y)) (f32.load (local.get $x))))
      (local.set $y (i32.add (local.get $y) (i32.const 4)))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l))))

  ;; y (m, n) = silu(a)·b, a and b rows xStride floats apart (b = a + n floats for [h1 | h3] rows).
  ;; Four lanes at a time ($expf4: $expf's bits), then one by one: each value v·(1/(1 + exp(−v)))·b
  ;; in f32 either way.
  (func (export "siluMul") (param $y i32) (param $a i32) (param $b i32) (param $n i32) (param $m i32) (param $xStride i32)
    (local $r i32) (local $j i32) (local $v f32) (local $ap i32) (local $bp i32) (local $vv v128)
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $ap (i32.add (local.get $a) (i32.shl (i32.mul (local.get $r) (local.get $xStride)) (i32.const 2))))
      (local.set $bp (i32.add (local.get $b) (i32.shl (i32.mul (local.get $r) (local.get $xStride)) (i32.const 2))))
      (local.set $j (i32.const 0))
      (block $d (loop $l
        (br_if $d (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $n)))
        (local.set $vv (v128.load (local.get $ap)))
        (v128.store (local.get $y)
          (f32x4.mul
            (f32x4.mul (local.get $vv)
              (f32x4.div (v128.const f32x4 1 1 1 1) (f32x4.add (v128.const f32x4 1 1 1 1) (call $expf4 (f32x4.neg (local.get $vv))))))
            (v128.load (local.get $bp))))
        (local.set $ap (i32.add (local.get $ap) (i32.const 16)))
        (local.set $bp (i32.add (local.get $bp) (i32.const 16)))
        (local.set $y (i32.add (local.get $y) (i32.const 16)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $l)))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $v (f32.load (local.get $ap)))
        (f32.store (local.get $y)
          (f32.mul
            (f32.mul (local.get $v)
              (f32.div (f32.const 1) (f32.add (f32.const 1) (call $expf (f32.neg (local.get $v))))))
            (f32.load (local.get $bp))))
        (local.set $ap (i32.add (local.get $ap) (i32.const 4)))
        (local.set $bp (i32.add (local.get $bp) (i32.const 4)))
        (local.set $y (i32.add (local.get $y) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $l)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

  ;; y[r] = table[tokens[r]] (rows of dim), the table f32 (dtype 0) or f16 (1); tokens i32.
  (func (export "embed") (param $y i32) (param $table i32) (param $tokens i32) (param $m i32) (param $dim i32) (param $dtype i32)
    (local $r i32) (local $j i32) (local $src i32) (local $d8 i32) (local $lo v128) (local $hi v128)
    (local.set $d8 (i32.and (local.get $dim) (i32.const -8)))
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $src (i32.add (local.get $table)
        (i32.mul (i32.load (i32.add (local.get $tokens) (i32.shl (local.get $r) (i32.const 2))))
          (i32.shl (local.get $dim) (i32.sub (i32.const 2) (local.get $dtype))))))
      (if (i32.eqz (local.get $dtype))
        (then
          (memory.copy (local.get $y) (local.get $src) (i32.shl (local.get $dim) (i32.const 2)))
          (local.set $y (i32.add (local.get $y) (i32.shl (local.get $dim) (i32.const 2)))))
        (else
          (local.set $j (i32.const 0))
          (block $d (loop $l
            (br_if $d (i32.ge_u (local.get $j) (local.get $d8)))
            (call $load8h (local.get $src))
            (local.set $hi) (local.set $lo)
            (v128.store offset=0 (local.get $y) (local.get $lo))
            (v128.store offset=16 (local.get $y) (local.get $hi))
            (local.set $src (i32.add (local.get $src) (i32.const 16)))
            (local.set $y (i32.add (local.get $y) (i32.const 32)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $l)))
          (block $d (loop $l
            (br_if $d (i32.ge_u (local.get $j) (local.get $dim)))
            (f32.store (local.get $y) (call $h2f (local.get $src)))
            (local.set $src (i32.add (local.get $src) (i32.const 2)))
            (local.set $y (i32.add (local.get $y) (i32.const 4)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $l)))))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

  ;; exp, RoPE, the KV cache and attention.
;;@include attention.wat
)
