;; Element-wise float32 sums over the group's shared memory, four lanes at a time (f32x4.add is
;; IEEE float32 addition per lane, so the results are bitwise those of the scalar JS loop).
;; Arguments are byte addresses in the imported memory and an element count; `d` may equal `x`.
;; add3/add4 keep the summation order ((x + y) + z) + w in registers, one pass over memory.
;; Compiled into simd-sum-wasm.ts by scripts/build-wasm.mjs (npm run build:wasm).
(module
  (import "env" "memory" (memory 1 65536 shared))

  ;; add2 is the two-rank all-reduce's whole sum, so its main loop does 16 floats per turn: the
  ;; loop overhead of the 4-float loop cost ~25% of its speed in L2 (Chromium, 64 KB operands).
  (func (export "add2") (param $d i32) (param $x i32) (param $y i32) (param $n i32)
    (local $end i32) (local $end4 i32) (local $end16 i32)
    (local.set $end (i32.add (local.get $d) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $end4 (i32.add (local.get $d) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (local.set $end16 (i32.add (local.get $d) (i32.shl (i32.and (local.get $n) (i32.const -16)) (i32.const 2))))
    (block $done16 (loop $sixteen
      (br_if $done16 (i32.ge_u (local.get $d) (local.get $end16)))
      (v128.store offset=0 (local.get $d) (f32x4.add (v128.load offset=0 (local.get $x)) (v128.load offset=0 (local.get $y))))
      (v128.store offset=16 (local.get $d) (f32x4.add (v128.load offset=16 (local.get $x)) (v128.load offset=16 (local.get $y))))
      (v128.store offset=32 (local.get $d) (f32x4.add (v128.load offset=32 (local.get $x)) (v128.load offset=32 (local.get $y))))
      (v128.store offset=48 (local.get $d) (f32x4.add (v128.load offset=48 (local.get $x)) (v128.load offset=48 (local.get $y))))
      (local.set $d (i32.add (local.get $d) (i32.const 64)))
      (local.set $x (i32.add (local.get $x) (i32.const 64)))
      (local.set $y (i32.add (local.get $y) (i32.const 64)))
      (br $sixteen)))
    (block $done4 (loop $four
      (br_if $done4 (i32.ge_u (local.get $d) (local.get $end4)))
      (v128.store (local.get $d) (f32x4.add (v128.load (local.get $x)) (v128.load (local.get $y))))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $y (i32.add (local.get $y) (i32.const 16)))
      (br $four)))
    (block $done1 (loop $one
      (br_if $done1 (i32.ge_u (local.get $d) (local.get $end)))
      (f32.store (local.get $d) (f32.add (f32.load (local.get $x)) (f32.load (local.get $y))))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $y (i32.add (local.get $y) (i32.const 4)))
      (br $one))))

  (func (export "add3") (param $d i32) (param $x i32) (param $y i32) (param $z i32) (param $n i32)
    (local $end i32) (local $end4 i32)
    (local.set $end (i32.add (local.get $d) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $end4 (i32.add (local.get $d) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $done4 (loop $four
      (br_if $done4 (i32.ge_u (local.get $d) (local.get $end4)))
      (v128.store (local.get $d)
        (f32x4.add (f32x4.add (v128.load (local.get $x)) (v128.load (local.get $y))) (v128.load (local.get $z))))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $y (i32.add (local.get $y) (i32.const 16)))
      (local.set $z (i32.add (local.get $z) (i32.const 16)))
      (br $four)))
    (block $done1 (loop $one
      (br_if $done1 (i32.ge_u (local.get $d) (local.get $end)))
      (f32.store (local.get $d)
        (f32.add (f32.add (f32.load (local.get $x)) (f32.load (local.get $y))) (f32.load (local.get $z))))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $y (i32.add (local.get $y) (i32.const 4)))
      (local.set $z (i32.add (local.get $z) (i32.const 4)))
      (br $one))))

  (func (export "add4") (param $d i32) (param $x i32) (param $y i32) (param $z i32) (param $w i32) (param $n i32)
    (local $end i32) (local $end4 i32)
    (local.set $end (i32.add (local.get $d) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $end4 (i32.add (local.get $d) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $done4 (loop $four
      (br_if $done4 (i32.ge_u (local.get $d) (local.get $end4)))
      (v128.store (local.get $d)
        (f32x4.add
          (f32x4.add (f32x4.add (v128.load (local.get $x)) (v128.load (local.get $y))) (v128.load (local.get $z)))
          (v128.load (local.get $w))))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $y (i32.add (local.get $y) (i32.const 16)))
      (local.set $z (i32.add (local.get $z) (i32.const 16)))
      (local.set $w (i32.add (local.get $w) (i32.const 16)))
      (br $four)))
    (block $done1 (loop $one
      (br_if $done1 (i32.ge_u (local.get $d) (local.get $end)))
      (f32.store (local.get $d)
        (f32.add
          (f32.add (f32.add (f32.load (local.get $x)) (f32.load (local.get $y))) (f32.load (local.get $z)))
          (f32.load (local.get $w))))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $y (i32.add (local.get $y) (i32.const 4)))
      (local.set $z (i32.add (local.get $z) (i32.const 4)))
      (local.set $w (i32.add (local.get $w) (i32.const 4)))
      (br $one))))
)
