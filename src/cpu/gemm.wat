;; The CPU rank's GEMM for prefill and batches of many rows: y (m, n) = x (m, k) · wᵀ, w (n, k)
;; f32 or f16 in panel.wat's panels (copied, halves widened as panel.wat widens them, eight columns
;; at a time: the same sums, in the same order, as there).
;; Eight weight rows at a time are packed once into an f32 panel, k-major (each turn of k holds
;; the eight rows' weights), which then stays in cache against every
;; input row: a register tile of 4 input rows × 8 columns, each turn of k one broadcast input per
;; row and two weight vectors for 8 multiply-adds, with no horizontal sums. Sums are f32.
;; One turn of k per loop: TurboFan hoists an unrolled body's loads and then spills accumulators.
;; Instantiated on the rank's memory beside kernels.wat. Compiled into gemm-wasm.ts by
;; scripts/build-wasm.mjs (npm run build:wasm).
(module
  (import "env" "memory" (memory 1 65536))

  ;; Packs a panel from `panel` weights (panel.wat): cols (8, or 4 then zeros) columns of a block
  ;; at w, ps bytes a turn of k, into p as f32, k-major: p[j·8 + c] = weight j of column c.
  (func $pack_panel (param $w i32) (param $ps i32) (param $cols i32) (param $k i32) (param $p i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $k) (i32.const 5))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $end)))
      (v128.store offset=0 (local.get $p) (v128.load offset=0 (local.get $w)))
      (if (i32.eq (local.get $cols) (i32.const 8))
        (then (v128.store offset=16 (local.get $p) (v128.load offset=16 (local.get $w))))
        (else (v128.store offset=16 (local.get $p) (v128.const i32x4 0 0 0 0))))
      (local.set $w (i32.add (local.get $w) (local.get $ps)))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (br $l))))

  ;; $pack_panel on f16 panels (ps bytes of halves a turn), each half widened exactly as in panel.wat.
  (func $pack_panel_f16 (param $w i32) (param $ps i32) (param $cols i32) (param $k i32) (param $p i32)
    (local $end i32) (local $hv v128) (local $hl v128) (local $hh v128)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $k) (i32.const 5))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $p) (local.get $end)))
      ;; Four columns read only their own 8 bytes: a last block may end where the memory does.
      (if (i32.eq (local.get $cols) (i32.const 8))
        (then (local.set $hv (v128.load (local.get $w))))
        (else (local.set $hv (v128.load64_zero (local.get $w)))))
      (local.set $hl (i16x8.shl (local.get $hv) (i32.const 13)))
      (local.set $hh (v128.and (i16x8.shr_s (local.get $hv) (i32.const 3)) (v128.const i16x8 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff 0x8fff)))
      (v128.store offset=0 (local.get $p) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112))))
      (v128.store offset=16 (local.get $p) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $hl) (local.get $hh)) (f32x4.splat (f32.const 0x1p112))))
      (local.set $w (i32.add (local.get $w) (local.get $ps)))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (br $l))))

  ;; Stores v as y[p] (p a byte address; q the bias's): (flags&1 ? y : 0) + (v + (flags&2 ? bias : 0)),
  ;; as panel.wat's matmul does.
  (func $put (param $p i32) (param $q i32) (param $flags i32) (param $v f32)
    (if (i32.and (local.get $flags) (i32.const 2))
      (then (local.set $v (f32.add (local.get $v) (f32.load (local.get $q))))))
    (if (i32.and (local.get $flags) (i32.const 1))
      (then (local.set $v (f32.add (f32.load (local.get $p)) (local.get $v)))))
    (f32.store (local.get $p) (local.get $v)))

  ;; One input row's eight sums (lo: columns 0..3, hi: 4..7) into y at yp, the first nv of them,
  ;; as $put does; a short panel's go through tmp (32 bytes) one at a time.
  (func $store8 (param $yp i32) (param $bp i32) (param $nv i32) (param $flags i32) (param $tmp i32) (param $lo v128) (param $hi v128)
    (local $c i32)
    (if (i32.eq (local.get $nv) (i32.const 8))
      (then
        (if (i32.and (local.get $flags) (i32.const 2)) (then
          (local.set $lo (f32x4.add (local.get $lo) (v128.load (local.get $bp))))
          (local.set $hi (f32x4.add (local.get $hi) (v128.load offset=16 (local.get $bp))))))
        (if (i32.and (local.get $flags) (i32.const 1)) (then
          (local.set $lo (f32x4.add (v128.load (local.get $yp)) (local.get $lo)))
          (local.set $hi (f32x4.add (v128.load offset=16 (local.get $yp)) (local.get $hi)))))
        (v128.store (local.get $yp) (local.get $lo))
        (v128.store offset=16 (local.get $yp) (local.get $hi)))
      (else
        (v128.store (local.get $tmp) (local.get $lo))
        (v128.store offset=16 (local.get $tmp) (local.get $hi))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $c) (local.get $nv)))
          (call $put (local.get $yp) (local.get $bp) (local.get $flags) (f32.load (local.get $tmp)))
          (local.set $yp (i32.add (local.get $yp) (i32.const 4)))
          (local.set $bp (i32.add (local.get $bp) (i32.const 4)))
          (local.set $tmp (i32.add (local.get $tmp) (i32.const 4)))
          (local.set $c (i32.add (local.get $c) (i32.const 1)))
          (br $l))))))

  ;; The 4 × 8 tile: input rows x0..x3 (k floats each) against a packed panel p of eight
  ;; weight rows (k turns of their eight weights); returns each row's sums for columns 0..3, then 4..7.
  ;; 8 accumulators, two weight vectors and one broadcast input stay in V8's 15 SIMD registers.
  (func $tile (param $p i32) (param $x0 i32) (param $x1 i32) (param $x2 i32) (param $x3 i32) (param $k i32) (result v128 v128 v128 v128 v128 v128 v128 v128)
    (local $a0 v128) (local $b0 v128) (local $a1 v128) (local $b1 v128) (local $a2 v128) (local $b2 v128) (local $a3 v128) (local $b3 v128)
    (local $w0 v128) (local $w1 v128) (local $s v128) (local $end i32)
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $k) (i32.const 5))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $w0 (v128.load offset=0 (local.get $p)))
      (local.set $w1 (v128.load offset=16 (local.get $p)))
      (local.set $s (v128.load32_splat offset=0 (local.get $x0)))
      (local.set $a0 (MADD (local.get $w0) (local.get $s) (local.get $a0)))
      (local.set $b0 (MADD (local.get $w1) (local.get $s) (local.get $b0)))
      (local.set $s (v128.load32_splat offset=0 (local.get $x1)))
      (local.set $a1 (MADD (local.get $w0) (local.get $s) (local.get $a1)))
      (local.set $b1 (MADD (local.get $w1) (local.get $s) (local.get $b1)))
      (local.set $s (v128.load32_splat offset=0 (local.get $x2)))
      (local.set $a2 (MADD (local.get $w0) (local.get $s) (local.get $a2)))
      (local.set $b2 (MADD (local.get $w1) (local.get $s) (local.get $b2)))
      (local.set $s (v128.load32_splat offset=0 (local.get $x3)))
      (local.set $a3 (MADD (local.get $w0) (local.get $s) (local.get $a3)))
      (local.set $b3 (MADD (local.get $w1) (local.get $s) (local.get $b3)))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (local.set $x0 (i32.add (local.get $x0) (i32.const 4)))
      (local.set $x1 (i32.add (local.get $x1) (i32.const 4)))
      (local.set $x2 (i32.add (local.get $x2) (i32.const 4)))
      (local.set $x3 (i32.add (local.get $x3) (i32.const 4)))
      (br $l)))
    (local.get $a0) (local.get $b0) (local.get $a1) (local.get $b1) (local.get $a2) (local.get $b2) (local.get $a3) (local.get $b3))

  ;; y (m, n) = x (m, k; rows xStride floats apart) · wᵀ, w (n, k) in panel.wat's panels, of f32
  ;; (dtype 0) or f16 (1). flags: 1 accumulate into y, 2 add bias (n,). scratch: 32·k + 32 bytes (a
  ;; packed panel and a store's lanes). Weight rows go eight at a time (one panel, packed once),
  ;; each panel against every input row, 4 at a time; a last short group repeats its last row and drops the copies' sums.
  (func (export "gemm") (param $y i32) (param $x i32) (param $xStride i32) (param $w i32)
    (param $m i32) (param $k i32) (param $n i32) (param $flags i32) (param $bias i32) (param $dtype i32) (param $scratch i32)
    (local $i i32) (local $r i32) (local $nv i32) (local $xs i32) (local $ys i32) (local $tmp i32)
    (local $yp i32) (local $bp i32) (local $x0 i32) (local $x1 i32) (local $x2 i32) (local $x3 i32) (local $width i32)
    (local $cols i32) (local $src i32) (local $ps i32)
    (local $a0 v128) (local $b0 v128) (local $a1 v128) (local $b1 v128) (local $a2 v128) (local $b2 v128) (local $a3 v128) (local $b3 v128)
    (local.set $xs (i32.shl (local.get $xStride) (i32.const 2)))
    (local.set $ys (i32.shl (local.get $n) (i32.const 2)))
    (local.set $tmp (i32.add (local.get $scratch) (i32.shl (local.get $k) (i32.const 5))))
    (block $panelsDone (loop $panels
      (br_if $panelsDone (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $nv (select (i32.const 8) (i32.sub (local.get $n) (local.get $i)) (i32.gt_u (i32.sub (local.get $n) (local.get $i)) (i32.const 8))))
      ;; Block i >> 4 (16 rows wide, or the last's ceil4 of what is left), half (i >> 3) & 1 of it.
      (local.set $width (select (i32.const 16) (i32.and (i32.add (i32.sub (local.get $n) (i32.and (local.get $i) (i32.const -16))) (i32.const 3)) (i32.const -4))
        (i32.ge_u (i32.sub (local.get $n) (i32.and (local.get $i) (i32.const -16))) (i32.const 16))))
      (local.set $cols (select (i32.const 8) (i32.const 4) (i32.ge_u (i32.sub (local.get $width) (i32.and (local.get $i) (i32.const 8))) (i32.const 8))))
      ;; Block i >> 4's start (16 rows of k weights before it each), the half's offset in a turn, the turn's bytes.
      (local.set $src (i32.add (i32.add (local.get $w) (i32.shl (i32.mul (i32.shr_u (local.get $i) (i32.const 4)) (local.get $k)) (i32.sub (i32.const 6) (local.get $dtype))))
        (i32.shl (i32.and (local.get $i) (i32.const 8)) (i32.sub (i32.const 2) (local.get $dtype)))))
      (local.set $ps (i32.shl (local.get $width) (i32.sub (i32.const 2) (local.get $dtype))))
      (if (local.get $dtype)
        (then (call $pack_panel_f16 (local.get $src) (local.get $ps) (local.get $cols) (local.get $k) (local.get $scratch)))
        (else (call $pack_panel (local.get $src) (local.get $ps) (local.get $cols) (local.get $k) (local.get $scratch))))
      (local.set $x0 (local.get $x))
      (local.set $yp (i32.add (local.get $y) (i32.shl (local.get $i) (i32.const 2))))
      (local.set $bp (i32.add (local.get $bias) (i32.shl (local.get $i) (i32.const 2))))
      (local.set $r (i32.const 0))
      (block $rowsDone (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
        (local.set $x1 (select (i32.add (local.get $x0) (local.get $xs)) (local.get $x0) (i32.lt_u (i32.add (local.get $r) (i32.const 1)) (local.get $m))))
        (local.set $x2 (select (i32.add (local.get $x1) (local.get $xs)) (local.get $x1) (i32.lt_u (i32.add (local.get $r) (i32.const 2)) (local.get $m))))
        (local.set $x3 (select (i32.add (local.get $x2) (local.get $xs)) (local.get $x2) (i32.lt_u (i32.add (local.get $r) (i32.const 3)) (local.get $m))))
        (call $tile (local.get $scratch) (local.get $x0) (local.get $x1) (local.get $x2) (local.get $x3) (local.get $k))
        (local.set $b3) (local.set $a3) (local.set $b2) (local.set $a2) (local.set $b1) (local.set $a1) (local.set $b0) (local.set $a0)
        (if (i32.lt_u (i32.add (local.get $r) (i32.const 0)) (local.get $m)) (then
          (call $store8 (i32.add (local.get $yp) (i32.mul (local.get $ys) (i32.const 0))) (local.get $bp) (local.get $nv) (local.get $flags) (local.get $tmp) (local.get $a0) (local.get $b0))))
        (if (i32.lt_u (i32.add (local.get $r) (i32.const 1)) (local.get $m)) (then
          (call $store8 (i32.add (local.get $yp) (i32.mul (local.get $ys) (i32.const 1))) (local.get $bp) (local.get $nv) (local.get $flags) (local.get $tmp) (local.get $a1) (local.get $b1))))
        (if (i32.lt_u (i32.add (local.get $r) (i32.const 2)) (local.get $m)) (then
          (call $store8 (i32.add (local.get $yp) (i32.mul (local.get $ys) (i32.const 2))) (local.get $bp) (local.get $nv) (local.get $flags) (local.get $tmp) (local.get $a2) (local.get $b2))))
        (if (i32.lt_u (i32.add (local.get $r) (i32.const 3)) (local.get $m)) (then
          (call $store8 (i32.add (local.get $yp) (i32.mul (local.get $ys) (i32.const 3))) (local.get $bp) (local.get $nv) (local.get $flags) (local.get $tmp) (local.get $a3) (local.get $b3))))
        (local.set $x0 (i32.add (local.get $x0) (i32.mul (local.get $xs) (i32.const 4))))
        (local.set $yp (i32.add (local.get $yp) (i32.mul (local.get $ys) (i32.const 4))))
        (local.set $r (i32.add (local.get $r) (i32.const 4)))
        (br $rows)))
      (local.set $i (i32.add (local.get $i) (i32.const 8)))
      (br $panels))))
)
