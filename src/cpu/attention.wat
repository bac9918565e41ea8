;; Included into kernels.wat (scripts/build-wasm.mjs, `;;@include`): exp, RoPE, the KV cache and
;; attention of a CPU rank, in the same memory and with the same helpers ($h2f, $hsum, WLOAD8).

  ;; ---- exp ----------------------------------------------------------------------------------

  ;; Math.exp to the bit: V8's base::ieee754::exp (FDLIBM's e_exp.c, with exp(1) = Math.E),
  ;; step for step in f64, so the kernels need no call out to the host. Constants are bit patterns.
  (func $exp (export "exp") (param $x f64) (result f64)
    (local $hx i32) (local $xsb i32) (local $k i32) (local $hi f64) (local $lo f64) (local $t f64) (local $c f64) (local $y f64) (local $twopk f64)
    (local.set $hx (i32.wrap_i64 (i64.shr_u (i64.reinterpret_f64 (local.get $x)) (i64.const 32))))
    (local.set $xsb (i32.shr_u (local.get $hx) (i32.const 31)))
    (local.set $hx (i32.and (local.get $hx) (i32.const 0x7fffffff)))
    ;; non-finite, overflow and underflow
    (if (i32.ge_u (local.get $hx) (i32.const 0x40862E42)) (then
      (if (i32.ge_u (local.get $hx) (i32.const 0x7ff00000)) (then
        (if (i32.or (i32.and (local.get $hx) (i32.const 0xfffff)) (i32.wrap_i64 (i64.reinterpret_f64 (local.get $x))))
          (then (return (f64.add (local.get $x) (local.get $x)))))
        (return (select (local.get $x) (f64.const 0) (i32.eqz (local.get $xsb))))))
      (if (f64.gt (local.get $x) (f64.reinterpret_i64 (i64.const 0x40862E42FEFA39EF))) (then (return (f64.const inf))))
      (if (f64.lt (local.get $x) (f64.reinterpret_i64 (i64.const 0xC0874910D52D3051))) (then (return (f64.const 0))))))
    ;; argument reduction: x = k·ln2 + (hi − lo), |hi − lo| ≤ ln2 / 2
    (if (i32.gt_u (local.get $hx) (i32.const 0x3FD62E42))
      (then
        (if (i32.lt_u (local.get $hx) (i32.const 0x3FF0A2B2))
          (then
            (if (f64.eq (local.get $x) (f64.const 1)) (then (return (f64.reinterpret_i64 (i64.const 0x4005BF0A8B145769)))))
            (local.set $hi (f64.sub (local.get $x) (select (f64.reinterpret_i64 (i64.const 0x3FE62E42FEE00000)) (f64.reinterpret_i64 (i64.const 0xBFE62E42FEE00000)) (i32.eqz (local.get $xsb)))))
            (local.set $lo (select (f64.reinterpret_i64 (i64.const 0x3DEA39EF35793C76)) (f64.reinterpret_i64 (i64.const 0xBDEA39EF35793C76)) (i32.eqz (local.get $xsb))))
            (local.set $k (i32.sub (i32.const 1) (i32.shl (local.get $xsb) (i32.const 1)))))
          (else
            (local.set $k (i32.trunc_f64_s (f64.add (f64.mul (f64.reinterpret_i64 (i64.const 0x3FF71547652B82FE)) (local.get $x))
              (select (f64.const 0.5) (f64.const -0.5) (i32.eqz (local.get $xsb))))))
            (local.set $t (f64.convert_i32_s (local.get $k)))
            (local.set $hi (f64.sub (local.get $x) (f64.mul (local.get $t) (f64.reinterpret_i64 (i64.const 0x3FE62E42FEE00000)))))
            (local.set $lo (f64.mul (local.get $t) (f64.reinterpret_i64 (i64.const 0x3DEA39EF35793C76))))))
        (local.set $x (f64.sub (local.get $hi) (local.get $lo))))
      (else
        ;; |x| < 2^-28
        (if (i32.lt_u (local.get $hx) (i32.const 0x3E300000)) (then (return (f64.add (f64.const 1) (local.get $x)))))))
    ;; x is now in the primary range
    (local.set $t (f64.mul (local.get $x) (local.get $x)))
    (local.set $twopk (f64.reinterpret_i64 (i64.shl (i64.extend_i32_u
      (i32.add (i32.const 0x3FF00000) (i32.shl (select (local.get $k) (i32.add (local.get $k) (i32.const 1000)) (i32.ge_s (local.get $k) (i32.const -1021))) (i32.const 20))))
      (i64.const 32))))
    (local.set $c (f64.sub (local.get $x) (f64.mul (local.get $t)
      (f64.add (f64.reinterpret_i64 (i64.const 0x3FC555555555553E)) (f64.mul (local.get $t)
      (f64.add (f64.reinterpret_i64 (i64.const 0xBF66C16C16BEBD93)) (f64.mul (local.get $t)
      (f64.add (f64.reinterpret_i64 (i64.const 0x3F11566AAF25DE2C)) (f64.mul (local.get $t)
      (f64.add (f64.reinterpret_i64 (i64.const 0xBEBBBD41C5D26BF1)) (f64.mul (local.get $t) (f64.reinterpret_i64 (i64.const 0x3E66376972BEA4D0)))))))))))))
    (if (i32.eqz (local.get $k)) (then
      (return (f64.sub (f64.const 1) (f64.sub (f64.div (f64.mul (local.get $x) (local.get $c)) (f64.sub (local.get $c) (f64.const 2))) (local.get $x))))))
    (local.set $y (f64.sub (f64.const 1) (f64.sub (f64.sub (local.get $lo) (f64.div (f64.mul (local.get $x) (local.get $c)) (f64.sub (f64.const 2) (local.get $c)))) (local.get $hi))))
    (if (i32.ge_s (local.get $k) (i32.const -1021)) (then
      (if (i32.eq (local.get $k) (i32.const 1024)) (then
        (return (f64.mul (f64.mul (local.get $y) (f64.const 2)) (f64.reinterpret_i64 (i64.const 0x7FE0000000000000))))))
      (return (f64.mul (local.get $y) (local.get $twopk)))))
    (f64.mul (f64.mul (local.get $y) (local.get $twopk)) (f64.reinterpret_i64 (i64.const 0x0170000000000000))))

  ;; f32 exp as the oracle takes it: Math.exp of the value, rounded to f32.
  (func $expf (param $x f32) (result f32)
    (f32.demote_f64 (call $exp (f64.promote_f32 (local.get $x)))))

  ;; ---- RoPE, the KV cache and attention -----------------------------------------------------

  ;; Rotates nHeads heads of headSize at the start of each of m rows (rowStride floats apart) by
  ;; the row's position; cos/sin are (seq, headSize/2). style 0 pairs (2i, 2i+1) as llama2.c,
  ;; 1 pairs (i, i + headSize/2) as HF's rotate_half. Scalar: it touches each value once.
  (func (export "rope") (param $x i32) (param $rowStride i32) (param $nHeads i32) (param $hs i32)
    (param $cos i32) (param $sin i32) (param $positions i32) (param $m i32) (param $style i32)
    (local $r i32) (local $h i32) (local $i i32) (local $half i32) (local $t i32) (local $base i32)
    (local $pa i32) (local $pb i32) (local $c f32) (local $s f32) (local $v0 f32) (local $v1 f32)
    (local.set $half (i32.shr_u (local.get $hs) (i32.const 1)))
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $t (i32.shl (i32.mul (i32.load (i32.add (local.get $positions) (i32.shl (local.get $r) (i32.const 2)))) (local.get $half)) (i32.const 2)))
      (local.set $h (i32.const 0))
      (block $headsDone (loop $heads
        (br_if $headsDone (i32.ge_u (local.get $h) (local.get $nHeads)))
        (local.set $base (i32.add (local.get $x)
          (i32.shl (i32.add (i32.mul (local.get $r) (local.get $rowStride)) (i32.mul (local.get $h) (local.get $hs))) (i32.const 2))))
        (local.set $i (i32.const 0))
        (block $d (loop $l
          (br_if $d (i32.ge_u (local.get $i) (local.get $half)))
          (local.set $c (f32.load (i32.add (local.get $cos) (i32.add (local.get $t) (i32.shl (local.get $i) (i32.const 2))))))
          (local.set $s (f32.load (i32.add (local.get $sin) (i32.add (local.get $t) (i32.shl (local.get $i) (i32.const 2))))))
          (if (local.get $style)
            (then
              (local.set $pa (i32.add (local.get $base) (i32.shl (local.get $i) (i32.const 2))))
              (local.set $pb (i32.add (local.get $pa) (i32.shl (local.get $half) (i32.const 2)))))
            (else
              (local.set $pa (i32.add (local.get $base) (i32.shl (local.get $i) (i32.const 3))))
              (local.set $pb (i32.add (local.get $pa) (i32.const 4)))))
          (local.set $v0 (f32.load (local.get $pa)))
          (local.set $v1 (f32.load (local.get $pb)))
          (f32.store (local.get $pa) (f32.sub (f32.mul (local.get $v0) (local.get $c)) (f32.mul (local.get $v1) (local.get $s))))
          (f32.store (local.get $pb) (f32.add (f32.mul (local.get $v0) (local.get $s)) (f32.mul (local.get $v1) (local.get $c))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $l)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $heads)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

  ;; One f32 as the nearest half (ties to even; NaN stays NaN), as f32ToF16 gives it.
  (func $f2h (param $f f32) (result i32)
    (local $u i32) (local $sign i32)
    (local.set $u (i32.reinterpret_f32 (local.get $f)))
    (local.set $sign (i32.and (i32.shr_u (local.get $u) (i32.const 16)) (i32.const 0x8000)))
    (local.set $u (i32.and (local.get $u) (i32.const 0x7fffffff)))
    (i32.or (local.get $sign)
      (if (result i32) (i32.ge_u (local.get $u) (i32.const 0x47800000)) ;; ≥ 65536 (and inf, NaN)
        (then (select (i32.const 0x7e00) (i32.const 0x7c00) (i32.gt_u (local.get $u) (i32.const 0x7f800000))))
        (else (if (result i32) (i32.lt_u (local.get $u) (i32.const 0x38800000)) ;; a subnormal half or zero
          ;; Adding 0.5 aligns the ten mantissa bits at the bottom, rounding to nearest even.
          (then (i32.sub (i32.reinterpret_f32 (f32.add (f32.reinterpret_i32 (local.get $u)) (f32.const 0.5))) (i32.const 0x3f000000)))
          (else (i32.shr_u
            (i32.add (i32.add (local.get $u) (i32.const 0xc8000fff)) (i32.and (i32.shr_u (local.get $u) (i32.const 13)) (i32.const 1)))
            (i32.const 13))))))))

  ;; Copies nKv heads at the start of each of m rows (rowStride floats apart) into a cache laid
  ;; out (slot, nKv, maxSeq, headSize), at the row's slot and position: f32 (dtype 0) or halves (1).
  (func (export "kvWrite") (param $src i32) (param $rowStride i32) (param $nKv i32) (param $hs i32)
    (param $positions i32) (param $slots i32) (param $m i32) (param $cache i32) (param $maxSeq i32) (param $dtype i32)
    (local $r i32) (local $g i32) (local $pos i32) (local $slot i32) (local $dst i32) (local $from i32) (local $j i32)
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $pos (i32.load (i32.add (local.get $positions) (i32.shl (local.get $r) (i32.const 2)))))
      (local.set $slot (i32.load (i32.add (local.get $slots) (i32.shl (local.get $r) (i32.const 2)))))
      (local.set $g (i32.const 0))
      (block $d (loop $l
        (br_if $d (i32.ge_u (local.get $g) (local.get $nKv)))
        (local.set $dst (i32.add (local.get $cache) (i32.shl (i32.mul
          (i32.add (i32.mul (i32.add (i32.mul (local.get $slot) (local.get $nKv)) (local.get $g)) (local.get $maxSeq)) (local.get $pos))
          (local.get $hs)) (i32.sub (i32.const 2) (local.get $dtype)))))
        (local.set $from (i32.add (local.get $src) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $rowStride)) (i32.mul (local.get $g) (local.get $hs))) (i32.const 2))))
        (if (local.get $dtype)
          (then
            (local.set $j (i32.const 0))
            (block $hd (loop $hl
              (br_if $hd (i32.ge_u (local.get $j) (local.get $hs)))
              (i32.store16 (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 1)))
                (call $f2h (f32.load (i32.add (local.get $from) (i32.shl (local.get $j) (i32.const 2))))))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br $hl))))
          (else (memory.copy (local.get $dst) (local.get $from) (i32.shl (local.get $hs) (i32.const 2)))))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $l)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

  ;; Scales the n floats at p by c.
  (func $scale (param $p i32) (param $n i32) (param $c f32)
    (local $j i32) (local $n4 i32) (local $cv v128)
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $cv (f32x4.splat (local.get $c)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n4)))
      (v128.store (local.get $p) (f32x4.mul (v128.load (local.get $p)) (local.get $cv)))
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br $l)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n)))
      (f32.store (local.get $p) (f32.mul (f32.load (local.get $p)) (local.get $c)))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l))))

;;@each-dtype
  ;; Σ q[j]·k[j], j < n: f32 q against @DT@ k.
  (func $qk_@DT@ (param $q i32) (param $k i32) (param $n i32) (result f32)
    (local $a0 v128) (local $a1 v128) (local $lo v128) (local $hi v128) (local $hv v128) (local $hl v128) (local $hh v128)
    (local $j i32) (local $n8 i32) (local $s f32)
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n8)))
      (WLOAD8 $lo $hi (local.get $k))
      (local.set $a0 (MADD (local.get $lo) (v128.load (local.get $q)) (local.get $a0)))
      (local.set $a1 (MADD (local.get $hi) (v128.load offset=16 (local.get $q)) (local.get $a1)))
      (local.set $k (i32.add (local.get $k) (i32.const @WB8@)))
      (local.set $q (i32.add (local.get $q) (i32.const 32)))
      (local.set $j (i32.add (local.get $j) (i32.const 8)))
      (br $l)))
    (local.set $s (call $hsum (f32x4.add (local.get $a0) (local.get $a1))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $q)) (WLOAD1 (local.get $k)))))
      (local.set $k (i32.add (local.get $k) (i32.const @WB1@)))
      (local.set $q (i32.add (local.get $q) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l)))
    (local.get $s))

  ;; o[j] += e·v[j], j < n, v @DT@.
  (func $axpy_@DT@ (param $o i32) (param $v i32) (param $n i32) (param $e f32)
    (local $ev v128) (local $lo v128) (local $hi v128) (local $hv v128) (local $hl v128) (local $hh v128) (local $j i32) (local $n8 i32)
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (local.set $ev (f32x4.splat (local.get $e)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n8)))
      (WLOAD8 $lo $hi (local.get $v))
      (v128.store (local.get $o) (MADD (local.get $ev) (local.get $lo) (v128.load (local.get $o))))
      (v128.store offset=16 (local.get $o) (MADD (local.get $ev) (local.get $hi) (v128.load offset=16 (local.get $o))))
      (local.set $v (i32.add (local.get $v) (i32.const @WB8@)))
      (local.set $o (i32.add (local.get $o) (i32.const 32)))
      (local.set $j (i32.add (local.get $j) (i32.const 8)))
      (br $l)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n)))
      (f32.store (local.get $o) (f32.add (f32.load (local.get $o)) (f32.mul (local.get $e) (WLOAD1 (local.get $v)))))
      (local.set $v (i32.add (local.get $v) (i32.const @WB1@)))
      (local.set $o (i32.add (local.get $o) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l))))

  ;; One query head over positions 0..pos of its kv head (kp, vp: position 0, rows hs apart), online
  ;; softmax: one pass over k and v, with the running max m, sum s and o = Σ exp(score − m)·v
  ;; rescaled whenever m grows; then o /= s.
  (func $head_@DT@ (param $o i32) (param $q i32) (param $kp i32) (param $vp i32) (param $pos i32) (param $hs i32) (param $scale f32)
    (local $t i32) (local $x f32) (local $m f32) (local $s f32) (local $e f32) (local $row i32)
    (local.set $m (f32.const -inf))
    (local.set $row (i32.mul (local.get $hs) (i32.const @WB1@)))
    (memory.fill (local.get $o) (i32.const 0) (i32.shl (local.get $hs) (i32.const 2)))
    (block $d (loop $l
      (br_if $d (i32.gt_u (local.get $t) (local.get $pos)))
      (local.set $x (f32.div (call $qk_@DT@ (local.get $q) (local.get $kp) (local.get $hs)) (local.get $scale)))
      (if (f32.gt (local.get $x) (local.get $m)) (then
        (local.set $e (call $expf (f32.sub (local.get $m) (local.get $x))))
        (local.set $s (f32.mul (local.get $s) (local.get $e)))
        (call $scale (local.get $o) (local.get $hs) (local.get $e))
        (local.set $m (local.get $x))))
      (local.set $e (call $expf (f32.sub (local.get $x) (local.get $m))))
      (local.set $s (f32.add (local.get $s) (local.get $e)))
      (call $axpy_@DT@ (local.get $o) (local.get $vp) (local.get $hs) (local.get $e))
      (local.set $kp (i32.add (local.get $kp) (local.get $row)))
      (local.set $vp (i32.add (local.get $vp) (local.get $row)))
      (local.set $t (i32.add (local.get $t) (i32.const 1)))
      (br $l)))
    (call $scale (local.get $o) (local.get $hs) (f32.div (f32.const 1) (local.get $s))))

  ;; Two query heads at once, each exactly as $head_@DT@ computes it alone (the same operations in
  ;; the same order): head a at (oa, qa, ka, va), head b at (ob, qb, kb, vb), their caches and
  ;; chains independent, so the two streams of k and v and the two softmaxes overlap.
  (func $head2_@DT@ (param $oa i32) (param $qa i32) (param $ka i32) (param $va i32) (param $ob i32) (param $qb i32) (param $kb i32) (param $vb i32)
    (param $pos i32) (param $hs i32) (param $scale f32)
    (local $t i32) (local $row i32) (local $xa f32) (local $ma f32) (local $sa f32) (local $ea f32) (local $xb f32) (local $mb f32) (local $sb f32) (local $eb f32)
    (local.set $ma (f32.const -inf))
    (local.set $mb (f32.const -inf))
    (local.set $row (i32.mul (local.get $hs) (i32.const @WB1@)))
    (memory.fill (local.get $oa) (i32.const 0) (i32.shl (local.get $hs) (i32.const 2)))
    (memory.fill (local.get $ob) (i32.const 0) (i32.shl (local.get $hs) (i32.const 2)))
    (block $d (loop $l
      (br_if $d (i32.gt_u (local.get $t) (local.get $pos)))
      (local.set $xa (f32.div (call $qk_@DT@ (local.get $qa) (local.get $ka) (local.get $hs)) (local.get $scale)))
      (local.set $xb (f32.div (call $qk_@DT@ (local.get $qb) (local.get $kb) (local.get $hs)) (local.get $scale)))
      (if (f32.gt (local.get $xa) (local.get $ma)) (then
        (local.set $ea (call $expf (f32.sub (local.get $ma) (local.get $xa))))
        (local.set $sa (f32.mul (local.get $sa) (local.get $ea)))
        (call $scale (local.get $oa) (local.get $hs) (local.get $ea))
        (local.set $ma (local.get $xa))))
      (if (f32.gt (local.get $xb) (local.get $mb)) (then
        (local.set $eb (call $expf (f32.sub (local.get $mb) (local.get $xb))))
        (local.set $sb (f32.mul (local.get $sb) (local.get $eb)))
        (call $scale (local.get $ob) (local.get $hs) (local.get $eb))
        (local.set $mb (local.get $xb))))
      (local.set $ea (call $expf (f32.sub (local.get $xa) (local.get $ma))))
      (local.set $eb (call $expf (f32.sub (local.get $xb) (local.get $mb))))
      (local.set $sa (f32.add (local.get $sa) (local.get $ea)))
      (local.set $sb (f32.add (local.get $sb) (local.get $eb)))
      (call $axpy_@DT@ (local.get $oa) (local.get $va) (local.get $hs) (local.get $ea))
      (call $axpy_@DT@ (local.get $ob) (local.get $vb) (local.get $hs) (local.get $eb))
      (local.set $ka (i32.add (local.get $ka) (local.get $row)))
      (local.set $kb (i32.add (local.get $kb) (local.get $row)))
      (local.set $va (i32.add (local.get $va) (local.get $row)))
      (local.set $vb (i32.add (local.get $vb) (local.get $row)))
      (local.set $t (i32.add (local.get $t) (i32.const 1)))
      (br $l)))
    (call $scale (local.get $oa) (local.get $hs) (f32.div (f32.const 1) (local.get $sa)))
    (call $scale (local.get $ob) (local.get $hs) (f32.div (f32.const 1) (local.get $sb))))
;;@end

  ;; Byte offset of (slot of row r, kv head of query head h, position 0) in either cache.
  (func $headAt (param $slots i32) (param $r i32) (param $nKv i32) (param $h i32) (param $headOffset i32) (param $kvMul i32) (param $maxSeq i32) (param $hs i32) (param $dtype i32) (result i32)
    (i32.shl (i32.mul (i32.mul
      (i32.add (i32.mul (i32.load (i32.add (local.get $slots) (i32.shl (local.get $r) (i32.const 2)))) (local.get $nKv))
        (i32.div_u (i32.add (local.get $h) (local.get $headOffset)) (local.get $kvMul)))
      (local.get $maxSeq)) (local.get $hs)) (i32.sub (i32.const 2) (local.get $dtype))))

  ;; Causal attention over the caches (kvWrite's layout, f32 or halves by dtype): query head h of
  ;; row r (q rows qStride floats apart) reads kv head (h + headOffset) / kvMul over positions
  ;; 0..pos, scores q·k / √headSize, and out (m, nHeads·headSize) = softmax(scores)·v.
  (func (export "attention") (param $out i32) (param $q i32) (param $qStride i32) (param $kc i32) (param $vc i32)
    (param $maxSeq i32) (param $nKv i32) (param $positions i32) (param $slots i32) (param $m i32)
    (param $nHeads i32) (param $hs i32) (param $kvMul i32) (param $headOffset i32) (param $dtype i32)
    (local $r i32) (local $h i32) (local $pos i32) (local $head i32) (local $head1 i32) (local $hb i32) (local $qp i32) (local $op i32) (local $scale f32)
    (local.set $scale (f32.sqrt (f32.convert_i32_u (local.get $hs))))
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $pos (i32.load (i32.add (local.get $positions) (i32.shl (local.get $r) (i32.const 2)))))
      (local.set $h (i32.const 0))
      (block $headsDone (loop $heads
        (br_if $headsDone (i32.ge_u (local.get $h) (local.get $nHeads)))
        ;; Heads in pairs (the last alone when nHeads is odd); each gets the bits it gets alone.
        (local.set $head (call $headAt (local.get $slots) (local.get $r) (local.get $nKv) (local.get $h) (local.get $headOffset) (local.get $kvMul) (local.get $maxSeq) (local.get $hs) (local.get $dtype)))
        (local.set $qp (i32.add (local.get $q) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $qStride)) (i32.mul (local.get $h) (local.get $hs))) (i32.const 2))))
        (local.set $op (i32.add (local.get $out) (i32.shl (i32.mul (i32.add (i32.mul (local.get $r) (local.get $nHeads)) (local.get $h)) (local.get $hs)) (i32.const 2))))
        (if (i32.lt_u (i32.add (local.get $h) (i32.const 1)) (local.get $nHeads))
          (then
            (local.set $head1 (call $headAt (local.get $slots) (local.get $r) (local.get $nKv) (i32.add (local.get $h) (i32.const 1)) (local.get $headOffset) (local.get $kvMul) (local.get $maxSeq) (local.get $hs) (local.get $dtype)))
            (local.set $hb (i32.shl (local.get $hs) (i32.const 2)))
            (if (local.get $dtype)
              (then (call $head2_f16 (local.get $op) (local.get $qp) (i32.add (local.get $kc) (local.get $head)) (i32.add (local.get $vc) (local.get $head))
                (i32.add (local.get $op) (local.get $hb)) (i32.add (local.get $qp) (local.get $hb)) (i32.add (local.get $kc) (local.get $head1)) (i32.add (local.get $vc) (local.get $head1))
                (local.get $pos) (local.get $hs) (local.get $scale)))
              (else (call $head2_f32 (local.get $op) (local.get $qp) (i32.add (local.get $kc) (local.get $head)) (i32.add (local.get $vc) (local.get $head))
                (i32.add (local.get $op) (local.get $hb)) (i32.add (local.get $qp) (local.get $hb)) (i32.add (local.get $kc) (local.get $head1)) (i32.add (local.get $vc) (local.get $head1))
                (local.get $pos) (local.get $hs) (local.get $scale))))
            (local.set $h (i32.add (local.get $h) (i32.const 2))))
          (else
            (if (local.get $dtype)
              (then (call $head_f16 (local.get $op) (local.get $qp) (i32.add (local.get $kc) (local.get $head)) (i32.add (local.get $vc) (local.get $head)) (local.get $pos) (local.get $hs) (local.get $scale)))
              (else (call $head_f32 (local.get $op) (local.get $qp) (i32.add (local.get $kc) (local.get $head)) (i32.add (local.get $vc) (local.get $head)) (local.get $pos) (local.get $hs) (local.get $scale))))
            (local.set $h (i32.add (local.get $h) (i32.const 1)))))
        (br $heads)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))
