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

  ;; $exp's steps on two f64 lanes, each in [-150, 100] ($expf4 clamps), where $exp neither
  ;; overflows nor goes subnormal: its branches become selects of the reduction's k (0 for
  ;; |x| ≤ ln2/2, ±1 up to 1.5·ln2, else rounded x/ln2) and of its two early results (x = 1, |x| <
  ;; 2^-28), and with k = 0 the general last step gives the k = 0 one's bits. Same operations on
  ;; the same values: the same bits. $exp's tests of |x|'s high word are tests of |x| against the
  ;; double of that high word (non-negative doubles order as their bits do).
  (func $exp2 (param $x v128) (result v128)
    (local $ax v128) (local $t v128) (local $hi v128) (local $lo v128) (local $r v128) (local $z v128) (local $c v128) (local $y v128) (local $sign v128)
    (local.set $sign (v128.and (local.get $x) (v128.const i64x2 0x8000000000000000 0x8000000000000000)))
    (local.set $ax (v128.xor (local.get $x) (local.get $sign)))
    ;; k as a float: rounded x/ln2, ±1 in the middle range, 0 in the small one.
    (local.set $t (f64x2.trunc (f64x2.add (f64x2.mul (local.get $x) (v128.const i64x2 0x3FF71547652B82FE 0x3FF71547652B82FE))
      (v128.or (local.get $sign) (v128.const f64x2 0.5 0.5)))))
    (local.set $t (v128.bitselect (v128.or (local.get $sign) (v128.const f64x2 1 1)) (local.get $t)
      (f64x2.lt (local.get $ax) (v128.const i64x2 0x3FF0A2B200000000 0x3FF0A2B200000000))))
    (local.set $t (v128.andnot (local.get $t) (f64x2.lt (local.get $ax) (v128.const i64x2 0x3FD62E4300000000 0x3FD62E4300000000))))
    ;; x = k·ln2 + (hi − lo)
    (local.set $hi (f64x2.sub (local.get $x) (f64x2.mul (local.get $t) (v128.const i64x2 0x3FE62E42FEE00000 0x3FE62E42FEE00000))))
    (local.set $lo (f64x2.mul (local.get $t) (v128.const i64x2 0x3DEA39EF35793C76 0x3DEA39EF35793C76)))
    (local.set $r (f64x2.sub (local.get $hi) (local.get $lo)))
    (local.set $z (f64x2.mul (local.get $r) (local.get $r)))
    (local.set $c (f64x2.sub (local.get $r) (f64x2.mul (local.get $z)
      (f64x2.add (v128.const i64x2 0x3FC555555555553E 0x3FC555555555553E) (f64x2.mul (local.get $z)
      (f64x2.add (v128.const i64x2 0xBF66C16C16BEBD93 0xBF66C16C16BEBD93) (f64x2.mul (local.get $z)
      (f64x2.add (v128.const i64x2 0x3F11566AAF25DE2C 0x3F11566AAF25DE2C) (f64x2.mul (local.get $z)
      (f64x2.add (v128.const i64x2 0xBEBBBD41C5D26BF1 0xBEBBBD41C5D26BF1) (f64x2.mul (local.get $z) (v128.const i64x2 0x3E66376972BEA4D0 0x3E66376972BEA4D0))))))))))))
    (local.set $y (f64x2.sub (v128.const f64x2 1 1) (f64x2.sub (f64x2.sub (local.get $lo)
      (f64x2.div (f64x2.mul (local.get $r) (local.get $c)) (f64x2.sub (v128.const f64x2 2 2) (local.get $c)))) (local.get $hi))))
    ;; y·2^k, k ≥ −217 here (2^k a normal): k + 1.5·2^52 holds k in its low bits, so k + 1023
    ;; shifted into the exponent field is 2^k.
    (local.set $y (f64x2.mul (local.get $y) (i64x2.shl (i64x2.add
      (f64x2.add (local.get $t) (v128.const i64x2 0x4338000000000000 0x4338000000000000)) (v128.const i64x2 1023 1023)) (i32.const 52))))
    (local.set $y (v128.bitselect (f64x2.add (v128.const f64x2 1 1) (local.get $x)) (local.get $y)
      (f64x2.lt (local.get $ax) (v128.const i64x2 0x3E30000000000000 0x3E30000000000000))))
    (v128.bitselect (v128.const i64x2 0x4005BF0A8B145769 0x4005BF0A8B145769) (local.get $y) (f64x2.eq (local.get $x) (v128.const f64x2 1 1))))

  ;; $expf of four lanes. Clamping to [-150, 100] first keeps every f32 result: below, $exp's
  ;; value rounds to 0 in f32; above, to inf.
  (func $expf4 (param $x v128) (result v128)
    (local.set $x (f32x4.pmin (f32x4.pmax (local.get $x) (v128.const f32x4 -150 -150 -150 -150)) (v128.const f32x4 100 100 100 100)))
    (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
      (f32x4.demote_f64x2_zero (call $exp2 (f64x2.promote_low_f32x4 (local.get $x))))
      (f32x4.demote_f64x2_zero (call $exp2 (f64x2.promote_low_f32x4
        (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $x) (local.get $x)))))))

  ;; y[i] = $expf(x[i]), i < n, in lanes of four (then one by one): for the tests.
  (func (export "expf") (param $y i32) (param $x i32) (param $n i32)
    (local $j i32)
    (block $d (loop $l
      (br_if $d (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $n)))
      (v128.store (local.get $y) (call $expf4 (v128.load (local.get $x))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $y (i32.add (local.get $y) (i32.const 16)))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br $l)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n)))
      (f32.store (local.get $y) (call $expf (f32.load (local.get $x))))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $y (i32.add (local.get $y) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l))))

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

  ;; [q·k_t, j < n, for the four rows t of k (row bytes apart)]: $qk_@DT@'s sums, one q load for four.
  (func $qk4_@DT@ (param $q i32) (param $k i32) (param $row i32) (param $n i32) (result v128)
    (local $a0 v128) (local $b0 v128) (local $a1 v128) (local $b1 v128) (local $a2 v128) (local $b2 v128) (local $a3 v128) (local $b3 v128) (local $ql v128) (local $qh v128) (local $lo v128) (local $hi v128) (local $hv v128) (local $hl v128) (local $hh v128)
    (local $j i32) (local $n8 i32) (local $x f32) (local $s0 f32) (local $s1 f32) (local $s2 f32) (local $s3 f32)
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n8)))
      (local.set $ql (v128.load (local.get $q)))
      (local.set $qh (v128.load offset=16 (local.get $q)))
      (WLOAD8 $lo $hi (i32.add (local.get $k) (i32.mul (local.get $row) (i32.const 0))))
      (local.set $a0 (MADD (local.get $lo) (local.get $ql) (local.get $a0)))
      (local.set $b0 (MADD (local.get $hi) (local.get $qh) (local.get $b0)))
      (WLOAD8 $lo $hi (i32.add (local.get $k) (i32.mul (local.get $row) (i32.const 1))))
      (local.set $a1 (MADD (local.get $lo) (local.get $ql) (local.get $a1)))
      (local.set $b1 (MADD (local.get $hi) (local.get $qh) (local.get $b1)))
      (WLOAD8 $lo $hi (i32.add (local.get $k) (i32.mul (local.get $row) (i32.const 2))))
      (local.set $a2 (MADD (local.get $lo) (local.get $ql) (local.get $a2)))
      (local.set $b2 (MADD (local.get $hi) (local.get $qh) (local.get $b2)))
      (WLOAD8 $lo $hi (i32.add (local.get $k) (i32.mul (local.get $row) (i32.const 3))))
      (local.set $a3 (MADD (local.get $lo) (local.get $ql) (local.get $a3)))
      (local.set $b3 (MADD (local.get $hi) (local.get $qh) (local.get $b3)))
      (local.set $k (i32.add (local.get $k) (i32.const @WB8@)))
      (local.set $q (i32.add (local.get $q) (i32.const 32)))
      (local.set $j (i32.add (local.get $j) (i32.const 8)))
      (br $l)))
    (local.set $s0 (call $hsum (f32x4.add (local.get $a0) (local.get $b0))))
    (local.set $s1 (call $hsum (f32x4.add (local.get $a1) (local.get $b1))))
    (local.set $s2 (call $hsum (f32x4.add (local.get $a2) (local.get $b2))))
    (local.set $s3 (call $hsum (f32x4.add (local.get $a3) (local.get $b3))))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $x (f32.load (local.get $q)))
      (local.set $s0 (f32.add (local.get $s0) (f32.mul (local.get $x) (WLOAD1 (i32.add (local.get $k) (i32.mul (local.get $row) (i32.const 0)))))))
      (local.set $s1 (f32.add (local.get $s1) (f32.mul (local.get $x) (WLOAD1 (i32.add (local.get $k) (i32.mul (local.get $row) (i32.const 1)))))))
      (local.set $s2 (f32.add (local.get $s2) (f32.mul (local.get $x) (WLOAD1 (i32.add (local.get $k) (i32.mul (local.get $row) (i32.const 2)))))))
      (local.set $s3 (f32.add (local.get $s3) (f32.mul (local.get $x) (WLOAD1 (i32.add (local.get $k) (i32.mul (local.get $row) (i32.const 3)))))))
      (local.set $k (i32.add (local.get $k) (i32.const @WB1@)))
      (local.set $q (i32.add (local.get $q) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l)))
    (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1 (f32x4.splat (local.get $s0)) (local.get $s1)) (local.get $s2)) (local.get $s3)))

  ;; o[j] += e_t·v_t[j] for the four rows t of v (row bytes apart) in turn, e_t lane t of e: four
  ;; $axpy_@DT@ calls' values, o read and written once.
  (func $axpy4_@DT@ (param $o i32) (param $v i32) (param $row i32) (param $n i32) (param $e v128)
    (local $e0 v128) (local $e1 v128) (local $e2 v128) (local $e3 v128) (local $ol v128) (local $oh v128)
    (local $lo v128) (local $hi v128) (local $hv v128) (local $hl v128) (local $hh v128) (local $j i32) (local $n8 i32) (local $x f32)
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (local.set $e0 (i8x16.shuffle 0 1 2 3 0 1 2 3 0 1 2 3 0 1 2 3 (local.get $e) (local.get $e)))
    (local.set $e1 (i8x16.shuffle 4 5 6 7 4 5 6 7 4 5 6 7 4 5 6 7 (local.get $e) (local.get $e)))
    (local.set $e2 (i8x16.shuffle 8 9 10 11 8 9 10 11 8 9 10 11 8 9 10 11 (local.get $e) (local.get $e)))
    (local.set $e3 (i8x16.shuffle 12 13 14 15 12 13 14 15 12 13 14 15 12 13 14 15 (local.get $e) (local.get $e)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n8)))
      (local.set $ol (v128.load (local.get $o)))
      (local.set $oh (v128.load offset=16 (local.get $o)))
      (WLOAD8 $lo $hi (i32.add (local.get $v) (i32.mul (local.get $row) (i32.const 0))))
      (local.set $ol (MADD (local.get $e0) (local.get $lo) (local.get $ol)))
      (local.set $oh (MADD (local.get $e0) (local.get $hi) (local.get $oh)))
      (WLOAD8 $lo $hi (i32.add (local.get $v) (i32.mul (local.get $row) (i32.const 1))))
      (local.set $ol (MADD (local.get $e1) (local.get $lo) (local.get $ol)))
      (local.set $oh (MADD (local.get $e1) (local.get $hi) (local.get $oh)))
      (WLOAD8 $lo $hi (i32.add (local.get $v) (i32.mul (local.get $row) (i32.const 2))))
      (local.set $ol (MADD (local.get $e2) (local.get $lo) (local.get $ol)))
      (local.set $oh (MADD (local.get $e2) (local.get $hi) (local.get $oh)))
      (WLOAD8 $lo $hi (i32.add (local.get $v) (i32.mul (local.get $row) (i32.const 3))))
      (local.set $ol (MADD (local.get $e3) (local.get $lo) (local.get $ol)))
      (local.set $oh (MADD (local.get $e3) (local.get $hi) (local.get $oh)))
      (v128.store (local.get $o) (local.get $ol))
      (v128.store offset=16 (local.get $o) (local.get $oh))
      (local.set $v (i32.add (local.get $v) (i32.const @WB8@)))
      (local.set $o (i32.add (local.get $o) (i32.const 32)))
      (local.set $j (i32.add (local.get $j) (i32.const 8)))
      (br $l)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $x (f32.load (local.get $o)))
      (local.set $x (f32.add (local.get $x) (f32.mul (f32x4.extract_lane 0 (local.get $e)) (WLOAD1 (i32.add (local.get $v) (i32.mul (local.get $row) (i32.const 0)))))))
      (local.set $x (f32.add (local.get $x) (f32.mul (f32x4.extract_lane 1 (local.get $e)) (WLOAD1 (i32.add (local.get $v) (i32.mul (local.get $row) (i32.const 1)))))))
      (local.set $x (f32.add (local.get $x) (f32.mul (f32x4.extract_lane 2 (local.get $e)) (WLOAD1 (i32.add (local.get $v) (i32.mul (local.get $row) (i32.const 2)))))))
      (local.set $x (f32.add (local.get $x) (f32.mul (f32x4.extract_lane 3 (local.get $e)) (WLOAD1 (i32.add (local.get $v) (i32.mul (local.get $row) (i32.const 3)))))))
      (f32.store (local.get $o) (local.get $x))
      (local.set $v (i32.add (local.get $v) (i32.const @WB1@)))
      (local.set $o (i32.add (local.get $o) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $l))))

  ;; One query head over positions 0..pos of its kv head (kp, vp: position 0, rows hs apart), online
  ;; softmax: one pass over k and v, with the running max m, sum s and o = Σ exp(score − m)·v
  ;; rescaled whenever m grows; then o /= s. Four positions at a time: their scores ($qk4), the max
  ;; before (ps) and after (ms) each, exp(x − m) for all four and, if m grew at any, exp(m_before −
  ;; x) ($expf4); then the updates in the one-by-one order, o's four in one pass ($axpy4) unless m
  ;; grew after the first. Every value is the one-by-one loop's, which takes the last (pos + 1) mod 4.
  (func $head_@DT@ (param $o i32) (param $q i32) (param $kp i32) (param $vp i32) (param $pos i32) (param $hs i32) (param $scale f32)
    (local $t i32) (local $x f32) (local $m f32) (local $s f32) (local $e f32) (local $row i32) (local $n4 i32)
    (local $xs v128) (local $ps v128) (local $ms v128) (local $es v128) (local $rs v128) (local $grew v128)
    (local.set $m (f32.const -inf))
    (local.set $row (i32.mul (local.get $hs) (i32.const @WB1@)))
    (local.set $n4 (i32.and (i32.add (local.get $pos) (i32.const 1)) (i32.const -4)))
    (memory.fill (local.get $o) (i32.const 0) (i32.shl (local.get $hs) (i32.const 2)))
    (block $d (loop $l
      (br_if $d (i32.ge_u (local.get $t) (local.get $n4)))
        (local.set $xs (f32x4.div (call $qk4_@DT@ (local.get $q) (local.get $kp) (local.get $row) (local.get $hs)) (f32x4.splat (local.get $scale))))
        (local.set $x (f32x4.extract_lane 0 (local.get $xs)))
        (local.set $ps (f32x4.replace_lane 0 (local.get $ps) (local.get $m)))
        (if (f32.gt (local.get $x) (local.get $m)) (then (local.set $m (local.get $x))))
        (local.set $ms (f32x4.replace_lane 0 (local.get $ms) (local.get $m)))
        (local.set $x (f32x4.extract_lane 1 (local.get $xs)))
        (local.set $ps (f32x4.replace_lane 1 (local.get $ps) (local.get $m)))
        (if (f32.gt (local.get $x) (local.get $m)) (then (local.set $m (local.get $x))))
        (local.set $ms (f32x4.replace_lane 1 (local.get $ms) (local.get $m)))
        (local.set $x (f32x4.extract_lane 2 (local.get $xs)))
        (local.set $ps (f32x4.replace_lane 2 (local.get $ps) (local.get $m)))
        (if (f32.gt (local.get $x) (local.get $m)) (then (local.set $m (local.get $x))))
        (local.set $ms (f32x4.replace_lane 2 (local.get $ms) (local.get $m)))
        (local.set $x (f32x4.extract_lane 3 (local.get $xs)))
        (local.set $ps (f32x4.replace_lane 3 (local.get $ps) (local.get $m)))
        (if (f32.gt (local.get $x) (local.get $m)) (then (local.set $m (local.get $x))))
        (local.set $ms (f32x4.replace_lane 3 (local.get $ms) (local.get $m)))
        (local.set $es (call $expf4 (f32x4.sub (local.get $xs) (local.get $ms))))
        (local.set $grew (f32x4.gt (local.get $xs) (local.get $ps)))
        (if (v128.any_true (local.get $grew)) (then (local.set $rs (call $expf4 (f32x4.sub (local.get $ps) (local.get $xs))))))
        (if (v128.any_true (v128.and (local.get $grew) (v128.const i32x4 0 -1 -1 -1)))
          (then
          (if (i32x4.extract_lane 0 (local.get $grew)) (then
            (local.set $s (f32.mul (local.get $s) (f32x4.extract_lane 0 (local.get $rs))))
            (call $scale (local.get $o) (local.get $hs) (f32x4.extract_lane 0 (local.get $rs)))))
          (local.set $s (f32.add (local.get $s) (f32x4.extract_lane 0 (local.get $es))))
          (call $axpy_@DT@ (local.get $o) (i32.add (local.get $vp) (i32.mul (local.get $row) (i32.const 0))) (local.get $hs) (f32x4.extract_lane 0 (local.get $es)))
          (if (i32x4.extract_lane 1 (local.get $grew)) (then
            (local.set $s (f32.mul (local.get $s) (f32x4.extract_lane 1 (local.get $rs))))
            (call $scale (local.get $o) (local.get $hs) (f32x4.extract_lane 1 (local.get $rs)))))
          (local.set $s (f32.add (local.get $s) (f32x4.extract_lane 1 (local.get $es))))
          (call $axpy_@DT@ (local.get $o) (i32.add (local.get $vp) (i32.mul (local.get $row) (i32.const 1))) (local.get $hs) (f32x4.extract_lane 1 (local.get $es)))
          (if (i32x4.extract_lane 2 (local.get $grew)) (then
            (local.set $s (f32.mul (local.get $s) (f32x4.extract_lane 2 (local.get $rs))))
            (call $scale (local.get $o) (local.get $hs) (f32x4.extract_lane 2 (local.get $rs)))))
          (local.set $s (f32.add (local.get $s) (f32x4.extract_lane 2 (local.get $es))))
          (call $axpy_@DT@ (local.get $o) (i32.add (local.get $vp) (i32.mul (local.get $row) (i32.const 2))) (local.get $hs) (f32x4.extract_lane 2 (local.get $es)))
          (if (i32x4.extract_lane 3 (local.get $grew)) (then
            (local.set $s (f32.mul (local.get $s) (f32x4.extract_lane 3 (local.get $rs))))
            (call $scale (local.get $o) (local.get $hs) (f32x4.extract_lane 3 (local.get $rs)))))
          (local.set $s (f32.add (local.get $s) (f32x4.extract_lane 3 (local.get $es))))
          (call $axpy_@DT@ (local.get $o) (i32.add (local.get $vp) (i32.mul (local.get $row) (i32.const 3))) (local.get $hs) (f32x4.extract_lane 3 (local.get $es)))
          )
          (else
          (if (i32x4.extract_lane 0 (local.get $grew)) (then
            (local.set $s (f32.mul (local.get $s) (f32x4.extract_lane 0 (local.get $rs))))
            (call $scale (local.get $o) (local.get $hs) (f32x4.extract_lane 0 (local.get $rs)))))
          (local.set $s (f32.add (local.get $s) (f32x4.extract_lane 0 (local.get $es))))
          (local.set $s (f32.add (local.get $s) (f32x4.extract_lane 1 (local.get $es))))
          (local.set $s (f32.add (local.get $s) (f32x4.extract_lane 2 (local.get $es))))
          (local.set $s (f32.add (local.get $s) (f32x4.extract_lane 3 (local.get $es))))
          (call $axpy4_@DT@ (local.get $o) (local.get $vp) (local.get $row) (local.get $hs) (local.get $es))))
        (local.set $kp (i32.add (local.get $kp) (i32.shl (local.get $row) (i32.const 2))))
        (local.set $vp (i32.add (local.get $vp) (i32.shl (local.get $row) (i32.const 2))))
        (local.set $t (i32.add (local.get $t) (i32.const 4)))
        (br $l)))
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
;;@end

  ;; Causal attention over the caches (kvWrite's layout, f32 or halves by dtype): query head h of
  ;; row r (q rows qStride floats apart) reads kv head (h + headOffset) / kvMul over positions
  ;; 0..pos, scores q·k / √headSize, and out (m, nHeads·headSize) = softmax(scores)·v.
  (func (export "attention") (param $out i32) (param $q i32) (param $qStride i32) (param $kc i32) (param $vc i32)
    (param $maxSeq i32) (param $nKv i32) (param $positions i32) (param $slots i32) (param $m i32)
    (param $nHeads i32) (param $hs i32) (param $kvMul i32) (param $headOffset i32) (param $dtype i32)
    (local $r i32) (local $h i32) (local $pos i32) (local $head i32) (local $qp i32) (local $op i32) (local $scale f32)
    (local.set $scale (f32.sqrt (f32.convert_i32_u (local.get $hs))))
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $pos (i32.load (i32.add (local.get $positions) (i32.shl (local.get $r) (i32.const 2)))))
      (local.set $h (i32.const 0))
      (block $headsDone (loop $heads
        (br_if $headsDone (i32.ge_u (local.get $h) (local.get $nHeads)))
        ;; Byte offset of (slot, kv head, position 0) in either cache.
        (local.set $head (i32.shl (i32.mul (i32.mul
          (i32.add (i32.mul (i32.load (i32.add (local.get $slots) (i32.shl (local.get $r) (i32.const 2)))) (local.get $nKv))
            (i32.div_u (i32.add (local.get $h) (local.get $headOffset)) (local.get $kvMul)))
          (local.get $maxSeq)) (local.get $hs)) (i32.sub (i32.const 2) (local.get $dtype))))
        (local.set $qp (i32.add (local.get $q) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $qStride)) (i32.mul (local.get $h) (local.get $hs))) (i32.const 2))))
        (local.set $op (i32.add (local.get $out) (i32.shl (i32.mul (i32.add (i32.mul (local.get $r) (local.get $nHeads)) (local.get $h)) (local.get $hs)) (i32.const 2))))
        (if (local.get $dtype)
          (then (call $head_f16 (local.get $op) (local.get $qp) (i32.add (local.get $kc) (local.get $head)) (i32.add (local.get $vc) (local.get $head)) (local.get $pos) (local.get $hs) (local.get $scale)))
          (else (call $head_f32 (local.get $op) (local.get $qp) (i32.add (local.get $kc) (local.get $head)) (i32.add (local.get $vc) (local.get $head)) (local.get $pos) (local.get $hs) (local.get $scale))))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $heads)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))
