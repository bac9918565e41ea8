;; The memory roofline of CPU ranks: one thread's read of a byte range, 64 bytes a turn into four
;; f32x4 accumulators (as a bandwidth-bound gemv streams its weights), over a shared memory so that
;; one thread can read all the bytes and two threads a half each. `read2` reads the same bytes as
;; two streams, the range's halves in alternating chunks: on some machines that reads faster than
;; one stream, and the roofline is the faster of the two. The returned sums keep the loads
;; observable. Compiled into wasm-read-wasm.ts by scripts/build-wasm.mjs (npm run build:wasm).
(module
  (import "env" "memory" (memory 1 65536 shared))

  ;; Sums the f32 lanes of [at, at + bytes); bytes is a multiple of 64.
  (func (export "read") (param $at i32) (param $bytes i32) (result f32)
    (local $end i32) (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local.set $end (i32.add (local.get $at) (local.get $bytes)))
    (block $done (loop $turn
      (br_if $done (i32.ge_u (local.get $at) (local.get $end)))
      (local.set $a (f32x4.add (local.get $a) (v128.load offset=0 (local.get $at))))
      (local.set $b (f32x4.add (local.get $b) (v128.load offset=16 (local.get $at))))
      (local.set $c (f32x4.add (local.get $c) (v128.load offset=32 (local.get $at))))
      (local.set $d (f32x4.add (local.get $d) (v128.load offset=48 (local.get $at))))
      (local.set $at (i32.add (local.get $at) (i32.const 64)))
      (br $turn)))
    (local.set $a (f32x4.add (f32x4.add (local.get $a) (local.get $b)) (f32x4.add (local.get $c) (local.get $d))))
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $a)) (f32x4.extract_lane 1 (local.get $a)))
      (f32.add (f32x4.extract_lane 2 (local.get $a)) (f32x4.extract_lane 3 (local.get $a)))))

  ;; Sums the f32 lanes of [at, at + bytes) as two streams: `chunk` bytes of the first half, then
  ;; the same offsets of the second half, and so on. bytes is a multiple of 128, chunk of 64.
  (func (export "read2") (param $at i32) (param $bytes i32) (param $chunk i32) (result f32)
    (local $half i32) (local $end i32) (local $stop i32) (local $p i32)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local.set $half (i32.shr_u (local.get $bytes) (i32.const 1)))
    (local.set $end (i32.add (local.get $at) (local.get $half)))
    (block $done (loop $chunks
      (br_if $done (i32.ge_u (local.get $at) (local.get $end)))
      (local.set $stop (i32.add (local.get $at) (local.get $chunk)))
      (if (i32.gt_u (local.get $stop) (local.get $end)) (then (local.set $stop (local.get $end))))
      ;; The first half's chunk, then the second half's, 64 bytes a turn.
      (local.set $p (local.get $at))
      (loop $first
        (local.set $a (f32x4.add (local.get $a) (v128.load offset=0 (local.get $p))))
        (local.set $b (f32x4.add (local.get $b) (v128.load offset=16 (local.get $p))))
        (local.set $c (f32x4.add (local.get $c) (v128.load offset=32 (local.get $p))))
        (local.set $d (f32x4.add (local.get $d) (v128.load offset=48 (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br_if $first (i32.lt_u (local.get $p) (local.get $stop))))
      (local.set $p (i32.add (local.get $at) (local.get $half)))
      (local.set $stop (i32.add (local.get $stop) (local.get $half)))
      (loop $second
        (local.set $a (f32x4.add (local.get $a) (v128.load offset=0 (local.get $p))))
        (local.set $b (f32x4.add (local.get $b) (v128.load offset=16 (local.get $p))))
        (local.set $c (f32x4.add (local.get $c) (v128.load offset=32 (local.get $p))))
        (local.set $d (f32x4.add (local.get $d) (v128.load offset=48 (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br_if $second (i32.lt_u (local.get $p) (local.get $stop))))
      (local.set $at (i32.sub (local.get $stop) (local.get $half)))
      (br $chunks)))
    (local.set $a (f32x4.add (f32x4.add (local.get $a) (local.get $b)) (f32x4.add (local.get $c) (local.get $d))))
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $a)) (f32x4.extract_lane 1 (local.get $a)))
      (f32.add (f32x4.extract_lane 2 (local.get $a)) (f32x4.extract_lane 3 (local.get $a))))))
