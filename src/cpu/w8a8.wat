;; runq.c's W8A8 matmul, bit for bit: for each row r and output i, the sum over the groups of
;; (float)(Σ x.q·w.q) · w.s · x.s, the groups in order, each step rounded to f32 as runq.c's
;; `val += ((float) ival) * w->s[..] * x->s[..]`. The int8 products go through
;; i32x4.dot_i16x8_s on the sign-extended values: exact (relaxed SIMD's i8 dot is i8 × i7).
;; A group's integer sum is exact in any order, so its lanes are added at the end. It runs on a
;; CPU rank's memory (src/cpu/kernels.ts), whose allocator hands out the operands.
(module
  (import "env" "memory" (memory 1 65536))

  ;; y (m, n) f32; xq (m, k) i8 and xs (m, k/gs) f32; wq (n, k) i8 and ws (n, k/gs) f32.
  ;; gs is a multiple of 4 dividing k. mode 0: y = Σ; 1: y += Σ (runq.c's residual add after
  ;; its sum); 2: Σ continues from y (an earlier rank's sum over the earlier groups).
  (func (export "matmul") (param $y i32) (param $xq i32) (param $xs i32) (param $wq i32) (param $ws i32)
        (param $m i32) (param $k i32) (param $n i32) (param $gs i32) (param $mode i32)
    (local $r i32) (local $i i32) (local $g i32) (local $groups i32) (local $xp i32) (local $wp i32)
    (local $yp i32) (local $end i32) (local $xsr i32) (local $wsi i32) (local $acc v128) (local $val f32)
    (local.set $groups (i32.div_u (local.get $k) (local.get $gs)))
    (block $rowsDone (loop $rows
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $m)))
      (local.set $xsr (i32.add (local.get $xs) (i32.shl (i32.mul (local.get $r) (local.get $groups)) (i32.const 2))))
      (local.set $i (i32.const 0))
      (block $outsDone (loop $outs
        (br_if $outsDone (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $yp (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $n)) (local.get $i)) (i32.const 2))))
        (local.set $val (select (f32.load (local.get $yp)) (f32.const 0) (i32.eq (local.get $mode) (i32.const 2))))
        (local.set $xp (i32.add (local.get $xq) (i32.mul (local.get $r) (local.get $k))))
        (local.set $wp (i32.add (local.get $wq) (i32.mul (local.get $i) (local.get $k))))
        (local.set $wsi (i32.add (local.get $ws) (i32.shl (i32.mul (local.get $i) (local.get $groups)) (i32.const 2))))
        (local.set $g (i32.const 0))
        (block $groupsDone (loop $group
          (br_if $groupsDone (i32.ge_u (local.get $g) (local.get $groups)))
          (local.set $acc (v128.const i32x4 0 0 0 0))
          (local.set $end (i32.add (local.get $xp) (local.get $gs)))
          (block $eightsDone (loop $eights
            (br_if $eightsDone (i32.gt_u (i32.add (local.get $xp) (i32.const 8)) (local.get $end)))
            (local.set $acc (i32x4.add (local.get $acc) (i32x4.dot_i16x8_s
              (i16x8.extend_low_i8x16_s (v128.load64_zero (local.get $xp)))
              (i16x8.extend_low_i8x16_s (v128.load64_zero (local.get $wp))))))
            (local.set $xp (i32.add (local.get $xp) (i32.const 8)))
            (local.set $wp (i32.add (local.get $wp) (i32.const 8)))
            (br $eights)))
          (if (i32.lt_u (local.get $xp) (local.get $end)) (then
            (local.set $acc (i32x4.add (local.get $acc) (i32x4.dot_i16x8_s
              (i16x8.extend_low_i8x16_s (v128.load32_zero (local.get $xp)))
              (i16x8.extend_low_i8x16_s (v128.load32_zero (local.get $wp))))))
            (local.set $xp (i32.add (local.get $xp) (i32.const 4)))
            (local.set $wp (i32.add (local.get $wp) (i32.const 4)))))
          (local.set $val (f32.add (local.get $val) (f32.mul
            (f32.mul
              (f32.convert_i32_s (i32.add
                (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
                (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc)))))
              (f32.load (i32.add (local.get $wsi) (i32.shl (local.get $g) (i32.const 2)))))
            (f32.load (i32.add (local.get $xsr) (i32.shl (local.get $g) (i32.const 2)))))))
          (local.set $g (i32.add (local.get $g) (i32.const 1)))
          (br $group)))
        (if (i32.eq (local.get $mode) (i32.const 1)) (then
          (local.set $val (f32.add (f32.load (local.get $yp)) (local.get $val)))))
        (f32.store (local.get $yp) (local.get $val))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $outs)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))
)
