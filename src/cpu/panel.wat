;; The CPU rank's matmul on `panel` weights for batches of 1 to 8 rows: y (m, n) = x (m, k) · wᵀ,
;; w f32 or f16 (IEEE halves). Layout (panel.ts `writePanels`): blocks of 16 weight rows, each
;; k-major (turn j holds the 16 rows' weight j, 64 bytes, or 32 of halves), so one v128 load holds
;; four outputs' weights and each input value is a splat reused across them. A short last block is
;; 4, 8 or 12 rows wide (rows padded to a multiple of four with zeros).
;; Each output's sum runs over k in order, one MADD a turn, in a lane of its own: the bits are the
;; same for every m and every tile shape, so a row gets the same sums alone as in any batch.
;; Halves widen exactly to f32 (sign | magnitude << 13, times 2^112: subnormals too; inf and NaN,
;; never a weight, come out finite), so f16 panels give the bits of f32 panels of the same values:
;; one row streams them widened in registers ($t116_f16); more rows, or a short block, widen each
;; chunk of a block once into the scratch and run the f32 tiles on it.
;; Register tiles: 4 input rows × 8 columns (8 accumulators, two weight vectors, one splat: V8's
;; 15 SIMD registers), 2 × 16 and 1 × 16 for the last rows, 1 × 4 for a short block. A block is
;; walked in chunks of 64 turns (4 KB of f32), every tile of the chunk while it is in L1, the sums
;; kept in the scratch between chunks (64 bytes an input row). f32 blocks go several at a time
;; instead, more weight streams in flight reading faster than one: one row over two whole blocks
;; ($t116x2), more rows over up to four in lockstep chunks of 16 turns, each block's tiles in turn.
;; Batches of more than 8 rows take gemm.wat.
;; Instantiated on the rank's memory beside kernels.wat. Compiled into panel-wasm.ts by
;; scripts/build-wasm.mjs (npm run build:wasm).
(module
  (import "env" "memory" (memory 1 65536))

  ;; Four input rows (their values interleaved at q: turn j's at q + j·ms, row r's at + 4r) against
  ;; 8 columns of weights at p (ps bytes a turn); the sums at c (row r's 8 at c + 64r) are read,
  ;; added to and written back.
  (func $t48 (param $p i32) (param $ps i32) (param $q i32) (param $ms i32) (param $turns i32) (param $c i32)
    (local $end i32) (local $w0 v128) (local $w1 v128) (local $s v128)
    (local $a0 v128) (local $b0 v128) (local $a1 v128) (local $b1 v128) (local $a2 v128) (local $b2 v128) (local $a3 v128) (local $b3 v128)
    (local.set $a0 (v128.load offset=0 (local.get $c)))
    (local.set $b0 (v128.load offset=16 (local.get $c)))
    (local.set $a1 (v128.load offset=64 (local.get $c)))
    (local.set $b1 (v128.load offset=80 (local.get $c)))
    (local.set $a2 (v128.load offset=128 (local.get $c)))
    (local.set $b2 (v128.load offset=144 (local.get $c)))
    (local.set $a3 (v128.load offset=192 (local.get $c)))
    (local.set $b3 (v128.load offset=208 (local.get $c)))
    (local.set $end (i32.add (local.get $p) (i32.mul (local.get $turns) (local.get $ps))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $w0 (v128.load offset=0 (local.get $p)))
      (local.set $w1 (v128.load offset=16 (local.get $p)))
      (local.set $s (v128.load32_splat offset=0 (local.get $q)))
      (local.set $a0 (MADD (local.get $w0) (local.get $s) (local.get $a0)))
      (local.set $b0 (MADD (local.get $w1) (local.get $s) (local.get $b0)))
      (local.set $s (v128.load32_splat offset=4 (local.get $q)))
      (local.set $a1 (MADD (local.get $w0) (local.get $s) (local.get $a1)))
      (local.set $b1 (MADD (local.get $w1) (local.get $s) (local.get $b1)))
      (local.set $s (v128.load32_splat offset=8 (local.get $q)))
      (local.set $a2 (MADD (local.get $w0) (local.get $s) (local.get $a2)))
      (local.set $b2 (MADD (local.get $w1) (local.get $s) (local.get $b2)))
      (local.set $s (v128.load32_splat offset=12 (local.get $q)))
      (local.set $a3 (MADD (local.get $w0) (local.get $s) (local.get $a3)))
      (local.set $b3 (MADD (local.get $w1) (local.get $s) (local.get $b3)))
      (local.set $p (i32.add (local.get $p) (local.get $ps)))
      (local.set $q (i32.add (local.get $q) (local.get $ms)))
      (br $l)))
    (v128.store offset=0 (local.get $c) (local.get $a0))
    (v128.store offset=16 (local.get $c) (local.get $b0))
    (v128.store offset=64 (local.get $c) (local.get $a1))
    (v128.store offset=80 (local.get $c) (local.get $b1))
    (v128.store offset=128 (local.get $c) (local.get $a2))
    (v128.store offset=144 (local.get $c) (local.get $b2))
    (v128.store offset=192 (local.get $c) (local.get $a3))
    (v128.store offset=208 (local.get $c) (local.get $b3)))

  ;; Two input rows (at q as $t48's) against all 16 columns at p (64 bytes a turn); sums at c as $t48's.
  (func $t216 (param $p i32) (param $q i32) (param $ms i32) (param $turns i32) (param $c i32)
    (local $end i32) (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128) (local $s v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local.set $a0 (v128.load offset=0 (local.get $c)))
    (local.set $a1 (v128.load offset=16 (local.get $c)))
    (local.set $a2 (v128.load offset=32 (local.get $c)))
    (local.set $a3 (v128.load offset=48 (local.get $c)))
    (local.set $b0 (v128.load offset=64 (local.get $c)))
    (local.set $b1 (v128.load offset=80 (local.get $c)))
    (local.set $b2 (v128.load offset=96 (local.get $c)))
    (local.set $b3 (v128.load offset=112 (local.get $c)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $turns) (i32.const 6))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $w0 (v128.load offset=0 (local.get $p)))
      (local.set $w1 (v128.load offset=16 (local.get $p)))
      (local.set $w2 (v128.load offset=32 (local.get $p)))
      (local.set $w3 (v128.load offset=48 (local.get $p)))
      (local.set $s (v128.load32_splat offset=0 (local.get $q)))
      (local.set $a0 (MADD (local.get $w0) (local.get $s) (local.get $a0)))
      (local.set $a1 (MADD (local.get $w1) (local.get $s) (local.get $a1)))
      (local.set $a2 (MADD (local.get $w2) (local.get $s) (local.get $a2)))
      (local.set $a3 (MADD (local.get $w3) (local.get $s) (local.get $a3)))
      (local.set $s (v128.load32_splat offset=4 (local.get $q)))
      (local.set $b0 (MADD (local.get $w0) (local.get $s) (local.get $b0)))
      (local.set $b1 (MADD (local.get $w1) (local.get $s) (local.get $b1)))
      (local.set $b2 (MADD (local.get $w2) (local.get $s) (local.get $b2)))
      (local.set $b3 (MADD (local.get $w3) (local.get $s) (local.get $b3)))
      (local.set $p (i32.add (local.get $p) (i32.const 64)))
      (local.set $q (i32.add (local.get $q) (local.get $ms)))
      (br $l)))
    (v128.store offset=0 (local.get $c) (local.get $a0))
    (v128.store offset=16 (local.get $c) (local.get $a1))
    (v128.store offset=32 (local.get $c) (local.get $a2))
    (v128.store offset=48 (local.get $c) (local.get $a3))
    (v128.store offset=64 (local.get $c) (local.get $b0))
    (v128.store offset=80 (local.get $c) (local.get $b1))
    (v128.store offset=96 (local.get $c) (local.get $b2))
    (v128.store offset=112 (local.get $c) (local.get $b3)))

  ;; One input row (at q, ms bytes a turn) against all 16 columns at p (64 bytes a turn), one
  ;; weight stream: the gemv.
  (func $t116 (param $p i32) (param $q i32) (param $ms i32) (param $turns i32) (param $c i32)
    (local $end i32) (local $s v128) (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $a0 (v128.load offset=0 (local.get $c)))
    (local.set $a1 (v128.load offset=16 (local.get $c)))
    (local.set $a2 (v128.load offset=32 (local.get $c)))
    (local.set $a3 (v128.load offset=48 (local.get $c)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $turns) (i32.const 6))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $s (v128.load32_splat (local.get $q)))
      (local.set $a0 (MADD (v128.load offset=0 (local.get $p)) (local.get $s) (local.get $a0)))
      (local.set $a1 (MADD (v128.load offset=16 (local.get $p)) (local.get $s) (local.get $a1)))
      (local.set $a2 (MADD (v128.load offset=32 (local.get $p)) (local.get $s) (local.get $a2)))
      (local.set $a3 (MADD (v128.load offset=48 (local.get $p)) (local.get $s) (local.get $a3)))
      (local.set $p (i32.add (local.get $p) (i32.const 64)))
      (local.set $q (i32.add (local.get $q) (local.get $ms)))
      (br $l)))
    (v128.store offset=0 (local.get $c) (local.get $a0))
    (v128.store offset=16 (local.get $c) (local.get $a1))
    (v128.store offset=32 (local.get $c) (local.get $a2))
    (v128.store offset=48 (local.get $c) (local.get $a3)))

  ;; One input row (at q, 4 bytes a turn) against two whole f32 blocks, a at p and b at p + d, over
  ;; all turns: 16 turns of a, then the same 16 of b, and so on, so two weight streams are in
  ;; flight. Each output's sum is $t116's, from zero, one MADD a turn in k's order. Sums: a's 16 at
  ;; c, b's at c + 64.
  (func $t116x2 (param $p i32) (param $d i32) (param $q i32) (param $turns i32) (param $c i32)
    (local $end i32) (local $cend i32) (local $pa i32) (local $qa i32) (local $s v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $turns) (i32.const 6))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $cend (select (i32.add (local.get $p) (i32.const 1024)) (local.get $end)
        (i32.lt_u (i32.add (local.get $p) (i32.const 1024)) (local.get $end))))
      (local.set $pa (local.get $p))
      (local.set $qa (local.get $q))
      (block $ad (loop $al
        (br_if $ad (i32.ge_u (local.get $pa) (local.get $cend)))
        (local.set $s (v128.load32_splat (local.get $qa)))
        (local.set $a0 (MADD (v128.load offset=0 (local.get $pa)) (local.get $s) (local.get $a0)))
        (local.set $a1 (MADD (v128.load offset=16 (local.get $pa)) (local.get $s) (local.get $a1)))
        (local.set $a2 (MADD (v128.load offset=32 (local.get $pa)) (local.get $s) (local.get $a2)))
        (local.set $a3 (MADD (v128.load offset=48 (local.get $pa)) (local.get $s) (local.get $a3)))
        (local.set $pa (i32.add (local.get $pa) (i32.const 64)))
        (local.set $qa (i32.add (local.get $qa) (i32.const 4)))
        (br $al)))
      (local.set $pa (i32.add (local.get $p) (local.get $d)))
      (local.set $cend (i32.add (local.get $cend) (local.get $d)))
      (block $bd (loop $bl
        (br_if $bd (i32.ge_u (local.get $pa) (local.get $cend)))
        (local.set $s (v128.load32_splat (local.get $q)))
        (local.set $b0 (MADD (v128.load offset=0 (local.get $pa)) (local.get $s) (local.get $b0)))
        (local.set $b1 (MADD (v128.load offset=16 (local.get $pa)) (local.get $s) (local.get $b1)))
        (local.set $b2 (MADD (v128.load offset=32 (local.get $pa)) (local.get $s) (local.get $b2)))
        (local.set $b3 (MADD (v128.load offset=48 (local.get $pa)) (local.get $s) (local.get $b3)))
        (local.set $pa (i32.add (local.get $pa) (i32.const 64)))
        (local.set $q (i32.add (local.get $q) (i32.const 4)))
        (br $bl)))
      (local.set $p (i32.sub (local.get $cend) (local.get $d)))
      (br $l)))
    (v128.store offset=0 (local.get $c) (local.get $a0))
    (v128.store offset=16 (local.get $c) (local.get $a1))
    (v128.store offset=32 (local.get $c) (local.get $a2))
    (v128.store offset=48 (local.get $c) (local.get $a3))
    (v128.store offset=64 (local.get $c) (local.get $b0))
    (v128.store offset=80 (local.get $c) (local.get $b1))
    (v128.store offset=96 (local.get $c) (local.get $b2))
    (v128.store offset=112 (local.get $c) (local.get $b3)))

  ;; n halves at src (n a multiple of four) widened to f32 at dst, eight at a time, the last four alone.
  (func $widen (param $src i32) (param $n i32) (param $dst i32)
    (local $end i32) (local $hv v128) (local $hl v128) (local $hh v128)
    (local.set $end (i32.add (local.get $src) (i32.shl (i32.and (local.get $n) (i32.const -8)) (i32.const 1))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $src) (local.get $end)))
      (local.set $hv (v128.load (local.get $src)))
      (local.set $hl (i16x8.shl (local.get $hv) (i32.const 13)))
      (local.set $hh (v128.and (i16x8.shr_s (local.get $hv) (i32.const 3)) (v128.const i16x8 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff)))
      (v128.store offset=0 (local.get $dst) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112))))
      (v128.store offset=16 (local.get $dst) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112))))
      (local.set $src (i32.add (local.get $src) (i32.const 16)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 32)))
      (br $l)))
    (if (i32.and (local.get $n) (i32.const 4)) (then
      (local.set $hv (v128.load64_zero (local.get $src)))
      (local.set $hl (i16x8.shl (local.get $hv) (i32.const 13)))
      (local.set $hh (v128.and (i16x8.shr_s (local.get $hv) (i32.const 3)) (v128.const i16x8 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff)))
      (v128.store (local.get $dst) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112)))))))

  ;; $t116 on halves: one input row against 16 columns of halves at p (32 bytes a turn), each
  ;; eight widened in registers as $widen widens them.
  (func $t116_f16 (param $p i32) (param $q i32) (param $ms i32) (param $turns i32) (param $c i32)
    (local $end i32) (local $s v128) (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $hv v128) (local $hl v128) (local $hh v128)
    (local.set $a0 (v128.load offset=0 (local.get $c)))
    (local.set $a1 (v128.load offset=16 (local.get $c)))
    (local.set $a2 (v128.load offset=32 (local.get $c)))
    (local.set $a3 (v128.load offset=48 (local.get $c)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $turns) (i32.const 5))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $s (v128.load32_splat (local.get $q)))
      (local.set $hv (v128.load offset=0 (local.get $p)))
      (local.set $hl (i16x8.shl (local.get $hv) (i32.const 13)))
      (local.set $hh (v128.and (i16x8.shr_s (local.get $hv) (i32.const 3)) (v128.const i16x8 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff)))
      (local.set $a0 (MADD (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112))) (local.get $s) (local.get $a0)))
      (local.set $a1 (MADD (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112))) (local.get $s) (local.get $a1)))
      (local.set $hv (v128.load offset=16 (local.get $p)))
      (local.set $hl (i16x8.shl (local.get $hv) (i32.const 13)))
      (local.set $hh (v128.and (i16x8.shr_s (local.get $hv) (i32.const 3)) (v128.const i16x8 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff)))
      (local.set $a2 (MADD (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112))) (local.get $s) (local.get $a2)))
      (local.set $a3 (MADD (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112))) (local.get $s) (local.get $a3)))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (local.set $q (i32.add (local.get $q) (local.get $ms)))
      (br $l)))
    (v128.store offset=0 (local.get $c) (local.get $a0))
    (v128.store offset=16 (local.get $c) (local.get $a1))
    (v128.store offset=32 (local.get $c) (local.get $a2))
    (v128.store offset=48 (local.get $c) (local.get $a3)))

  ;; One input row (at q, ms bytes a turn) against 4 columns at p (ps bytes a turn): a short last block's.
  (func $t14 (param $p i32) (param $ps i32) (param $q i32) (param $ms i32) (param $turns i32) (param $c i32)
    (local $end i32) (local $a v128)
    (local.set $a (v128.load (local.get $c)))
    (local.set $end (i32.add (local.get $p) (i32.mul (local.get $turns) (local.get $ps))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $a (MADD (v128.load (local.get $p)) (v128.load32_splat (local.get $q)) (local.get $a)))
      (local.set $p (i32.add (local.get $p) (local.get $ps)))
      (local.set $q (i32.add (local.get $q) (local.get $ms)))
      (br $l)))
    (v128.store (local.get $c) (local.get $a)))

  ;; m input rows (at q, interleaved as $t48's, ms = 4m bytes a turn) against a 16-wide block's turns
  ;; of f32 (or widened halves) at p; sums at c (row r's 16 at c + 64r) read, added to and written
  ;; back. On halves not widened (inline) the last odd row widens them in registers ($t116_f16).
  (func $tiles16 (param $p i32) (param $q i32) (param $ms i32) (param $m i32) (param $turns i32) (param $c i32) (param $inline i32)
    (local $r i32)
    (block $quadsDone (loop $quads
      (br_if $quadsDone (i32.gt_u (i32.add (local.get $r) (i32.const 4)) (local.get $m)))
      (call $t48 (local.get $p) (i32.const 64) (local.get $q) (local.get $ms) (local.get $turns) (i32.add (local.get $c) (i32.shl (local.get $r) (i32.const 6))))
      (call $t48 (i32.add (local.get $p) (i32.const 32)) (i32.const 64) (local.get $q) (local.get $ms) (local.get $turns)
        (i32.add (local.get $c) (i32.add (i32.shl (local.get $r) (i32.const 6)) (i32.const 32))))
      (local.set $q (i32.add (local.get $q) (i32.const 16)))
      (local.set $r (i32.add (local.get $r) (i32.const 4)))
      (br $quads)))
    (if (i32.le_u (i32.add (local.get $r) (i32.const 2)) (local.get $m)) (then
      (call $t216 (local.get $p) (local.get $q) (local.get $ms) (local.get $turns) (i32.add (local.get $c) (i32.shl (local.get $r) (i32.const 6))))
      (local.set $q (i32.add (local.get $q) (i32.const 8)))
      (local.set $r (i32.add (local.get $r) (i32.const 2)))))
    (if (i32.lt_u (local.get $r) (local.get $m)) (then
      (if (local.get $inline)
        (then (call $t116_f16 (local.get $p) (local.get $q) (local.get $ms) (local.get $turns) (i32.add (local.get $c) (i32.shl (local.get $r) (i32.const 6)))))
        (else (call $t116 (local.get $p) (local.get $q) (local.get $ms) (local.get $turns) (i32.add (local.get $c) (i32.shl (local.get $r) (i32.const 6)))))))))

  ;; The first nv sums of one input row (at a) into y at yp: (flags&1 ? y : 0) + (v + (flags&2 ? bias : 0)),
  ;; bias at bp, as kernels.wat's matmul stores them.
  (func $store (param $yp i32) (param $a i32) (param $bp i32) (param $nv i32) (param $flags i32)
    (local $c i32) (local $v v128) (local $f f32)
    (block $d (loop $l
      (br_if $d (i32.gt_u (i32.add (local.get $c) (i32.const 4)) (local.get $nv)))
      (local.set $v (v128.load (local.get $a)))
      (if (i32.and (local.get $flags) (i32.const 2))
        (then (local.set $v (f32x4.add (local.get $v) (v128.load (local.get $bp))))))
      (if (i32.and (local.get $flags) (i32.const 1))
        (then (local.set $v (f32x4.add (v128.load (local.get $yp)) (local.get $v)))))
      (v128.store (local.get $yp) (local.get $v))
      (local.set $yp (i32.add (local.get $yp) (i32.const 16)))
      (local.set $a (i32.add (local.get $a) (i32.const 16)))
      (local.set $bp (i32.add (local.get $bp) (i32.const 16)))
      (local.set $c (i32.add (local.get $c) (i32.const 4)))
      (br $l)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $c) (local.get $nv)))
      (local.set $f (f32.load (local.get $a)))
      (if (i32.and (local.get $flags) (i32.const 2))
        (then (local.set $f (f32.add (local.get $f) (f32.load (local.get $bp))))))
      (if (i32.and (local.get $flags) (i32.const 1))
        (then (local.set $f (f32.add (f32.load (local.get $yp)) (local.get $f)))))
      (f32.store (local.get $yp) (local.get $f))
      (local.set $yp (i32.add (local.get $yp) (i32.const 4)))
      (local.set $a (i32.add (local.get $a) (i32.const 4)))
      (local.set $bp (i32.add (local.get $bp) (i32.const 4)))
      (local.set $c (i32.add (local.get $c) (i32.const 1)))
      (br $l))))

  ;; The sums of m input rows at a (row r's at a + 64r) for columns i .. i + nv of y (m, n) as $store's.
  (func $storeRows (param $y i32) (param $a i32) (param $bias i32) (param $i i32) (param $m i32) (param $n i32) (param $nv i32) (param $flags i32)
    (local $r i32)
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $r) (local.get $m)))
      (call $store
        (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $n)) (local.get $i)) (i32.const 2)))
        (i32.add (local.get $a) (i32.shl (local.get $r) (i32.const 6)))
        (i32.add (local.get $bias) (i32.shl (local.get $i) (i32.const 2)))
        (local.get $nv) (local.get $flags))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $l))))

  ;; y (m, n) = x (m, k; rows xStride floats apart) · wᵀ for m ≤ 8, w (n, k) in panels (above) of
  ;; f32 (dtype 0) or f16 (1). flags: 1 accumulate into y, 2 add bias (n,). scratch: 32·k + 4608
  ;; bytes: the rows' values interleaved (turn j's m values together, so each tile reads its splats
  ;; from one pointer), the sums of one block, then one widened chunk (4 KB; on f32, the sums of up
  ;; to four blocks in lockstep). A block goes chunk by chunk, every tile of a chunk while it is in L1.
  (func (export "matmul") (param $y i32) (param $x i32) (param $xStride i32) (param $w i32)
    (param $m i32) (param $k i32) (param $n i32) (param $flags i32) (param $bias i32) (param $dtype i32) (param $scratch i32)
    (local $i i32) (local $width i32) (local $ps i32) (local $q i32) (local $ms i32) (local $acc i32)
    (local $wide i32) (local $wps i32) (local $inline i32) (local $pair i32) (local $nb i32) (local $b i32)
    (local $j i32) (local $turns i32) (local $pc i32) (local $qc i32) (local $r i32) (local $h i32) (local $src i32) (local $dst i32)
    (local.set $acc (i32.add (local.get $scratch) (i32.shl (local.get $k) (i32.const 5))))
    (local.set $wide (i32.add (local.get $acc) (i32.const 512)))
    (local.set $ms (i32.shl (local.get $m) (i32.const 2)))
    ;; One row of halves against a whole block is widened in registers; anything else a chunk at a time.
    (local.set $inline (i32.and (local.get $dtype) (i32.eq (local.get $m) (i32.const 1))))
    (local.set $pair (i32.and (i32.eqz (local.get $dtype)) (i32.eq (local.get $m) (i32.const 1))))
    ;; One row is read where it is.
    (local.set $q (local.get $x))
    (if (i32.gt_u (local.get $m) (i32.const 1)) (then
      (local.set $q (local.get $scratch))
      (block $rd (loop $rl
        (br_if $rd (i32.ge_u (local.get $r) (local.get $m)))
        (local.set $src (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r) (local.get $xStride)) (i32.const 2))))
        (local.set $dst (i32.add (local.get $scratch) (i32.shl (local.get $r) (i32.const 2))))
        (local.set $j (i32.const 0))
        (block $jd (loop $jl
          (br_if $jd (i32.ge_u (local.get $j) (local.get $k)))
          (f32.store (local.get $dst) (f32.load (local.get $src)))
          (local.set $src (i32.add (local.get $src) (i32.const 4)))
          (local.set $dst (i32.add (local.get $dst) (local.get $ms)))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $jl)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rl)))))
    (block $blocksDone (loop $blocks
      (br_if $blocksDone (i32.ge_u (local.get $i) (local.get $n)))
      ;; One row of f32 against two whole blocks: both at once ($t116x2).
      (if (i32.and (local.get $pair) (i32.ge_u (i32.sub (local.get $n) (local.get $i)) (i32.const 32))) (then
        (call $t116x2 (local.get $w) (i32.shl (local.get $k) (i32.const 6)) (local.get $q) (local.get $k) (local.get $acc))
        (call $store (i32.add (local.get $y) (i32.shl (local.get $i) (i32.const 2))) (local.get $acc)
          (i32.add (local.get $bias) (i32.shl (local.get $i) (i32.const 2))) (i32.const 16) (local.get $flags))
        (call $store (i32.add (local.get $y) (i32.shl (i32.add (local.get $i) (i32.const 16)) (i32.const 2))) (i32.add (local.get $acc) (i32.const 64))
          (i32.add (local.get $bias) (i32.shl (i32.add (local.get $i) (i32.const 16)) (i32.const 2))) (i32.const 16) (local.get $flags))
        (local.set $w (i32.add (local.get $w) (i32.shl (local.get $k) (i32.const 7))))
        (local.set $i (i32.add (local.get $i) (i32.const 32)))
        (br $blocks)))
      ;; More rows of f32 against up to four whole blocks: 16 turns of each block's tiles in turn, so
      ;; as many weight streams are in flight; block b's sums at wide + 512b (the widening chunk's place).
      (local.set $nb (i32.shr_u (i32.sub (local.get $n) (local.get $i)) (i32.const 4)))
      (local.set $nb (select (i32.const 4) (local.get $nb) (i32.gt_u (local.get $nb) (i32.const 4))))
      (if (i32.and (i32.eqz (i32.or (local.get $dtype) (local.get $pair))) (i32.ge_u (local.get $nb) (i32.const 2))) (then
        (memory.fill (local.get $wide) (i32.const 0) (i32.shl (local.get $nb) (i32.const 9)))
        (local.set $j (i32.const 0))
        (block $pd (loop $pl
          (br_if $pd (i32.ge_u (local.get $j) (local.get $k)))
          (local.set $turns (select (i32.const 16) (i32.sub (local.get $k) (local.get $j)) (i32.gt_u (i32.sub (local.get $k) (local.get $j)) (i32.const 16))))
          (local.set $pc (i32.add (local.get $w) (i32.shl (local.get $j) (i32.const 6))))
          (local.set $qc (i32.add (local.get $q) (i32.mul (local.get $j) (local.get $ms))))
          (local.set $b (i32.const 0))
          (block $sd (loop $sl
            (br_if $sd (i32.ge_u (local.get $b) (local.get $nb)))
            (call $tiles16 (i32.add (local.get $pc) (i32.shl (i32.mul (local.get $b) (local.get $k)) (i32.const 6))) (local.get $qc) (local.get $ms) (local.get $m) (local.get $turns)
              (i32.add (local.get $wide) (i32.shl (local.get $b) (i32.const 9))) (i32.const 0))
            (local.set $b (i32.add (local.get $b) (i32.const 1)))
            (br $sl)))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br $pl)))
        (local.set $b (i32.const 0))
        (block $sd (loop $sl
          (br_if $sd (i32.ge_u (local.get $b) (local.get $nb)))
          (call $storeRows (local.get $y) (i32.add (local.get $wide) (i32.shl (local.get $b) (i32.const 9))) (local.get $bias)
            (i32.add (local.get $i) (i32.shl (local.get $b) (i32.const 4))) (local.get $m) (local.get $n) (i32.const 16) (local.get $flags))
          (local.set $b (i32.add (local.get $b) (i32.const 1)))
          (br $sl)))
        (local.set $w (i32.add (local.get $w) (i32.shl (i32.mul (local.get $nb) (local.get $k)) (i32.const 6))))
        (local.set $i (i32.add (local.get $i) (i32.shl (local.get $nb) (i32.const 4))))
        (br $blocks)))
      (local.set $width (select (i32.const 16) (i32.and (i32.add (i32.sub (local.get $n) (local.get $i)) (i32.const 3)) (i32.const -4))
        (i32.ge_u (i32.sub (local.get $n) (local.get $i)) (i32.const 16))))
      (local.set $ps (i32.shl (local.get $width) (i32.const 2)))
      (local.set $wps (i32.shl (local.get $width) (i32.sub (i32.const 2) (local.get $dtype))))
      (memory.fill (local.get $acc) (i32.const 0) (i32.shl (local.get $m) (i32.const 6)))
      (local.set $j (i32.const 0))
      (block $chunksDone (loop $chunks
        (br_if $chunksDone (i32.ge_u (local.get $j) (local.get $k)))
        (local.set $turns (select (i32.const 64) (i32.sub (local.get $k) (local.get $j)) (i32.gt_u (i32.sub (local.get $k) (local.get $j)) (i32.const 64))))
        (local.set $pc (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $wps))))
        (if (i32.and (local.get $dtype) (i32.eqz (i32.and (local.get $inline) (i32.eq (local.get $width) (i32.const 16))))) (then
          (call $widen (local.get $pc) (i32.mul (local.get $turns) (local.get $width)) (local.get $wide))
          (local.set $pc (local.get $wide))))
        (local.set $qc (i32.add (local.get $q) (i32.mul (local.get $j) (local.get $ms))))
        (local.set $r (i32.const 0))
        (if (i32.eq (local.get $width) (i32.const 16))
          (then
            (call $tiles16 (local.get $pc) (local.get $qc) (local.get $ms) (local.get $m) (local.get $turns) (local.get $acc) (local.get $inline)))
          (else
            (block $rowsDone (loop $rowsL
              (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
              (local.set $h (i32.const 0))
              (block $colsDone (loop $cols
                (br_if $colsDone (i32.ge_u (local.get $h) (local.get $width)))
                (call $t14 (i32.add (local.get $pc) (i32.shl (local.get $h) (i32.const 2))) (local.get $ps) (local.get $qc) (local.get $ms) (local.get $turns)
                  (i32.add (local.get $acc) (i32.add (i32.shl (local.get $r) (i32.const 6)) (i32.shl (local.get $h) (i32.const 2)))))
                (local.set $h (i32.add (local.get $h) (i32.const 4)))
                (br $cols)))
              (local.set $qc (i32.add (local.get $qc) (i32.const 4)))
              (local.set $r (i32.add (local.get $r) (i32.const 1)))
              (br $rowsL)))))
        (local.set $j (i32.add (local.get $j) (i32.const 64)))
        (br $chunks)))
      (call $storeRows (local.get $y) (local.get $acc) (local.get $bias) (local.get $i) (local.get $m) (local.get $n)
        (select (i32.const 16) (i32.sub (local.get $n) (local.get $i)) (i32.ge_u (i32.sub (local.get $n) (local.get $i)) (i32.const 16)))
        (local.get $flags))
      (local.set $w (i32.add (local.get $w) (i32.mul (local.get $wps) (local.get $k))))
      (local.set $i (i32.add (local.get $i) (i32.const 16)))
      (br $blocks))))
)
