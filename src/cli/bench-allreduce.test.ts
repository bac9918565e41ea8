import { describe, expect, it } from 'vitest';
import { formatAllReduceReport, type AllReduceBenchReport } from './bench-allreduce.js';

describe('formatAllReduceReport', () => {
  const report: AllReduceBenchReport = {
    results: [
      { workers: 2, floats: 4194304, algorithm: 'auto', picked: 'direct', in_place: false, median_us: 6400, busbw_gbs: 2.5, batch: 1, samples: 20 },
      { workers: 2, floats: 4194304, algorithm: 'auto', picked: 'direct', in_place: true, median_us: 5000, busbw_gbs: 3.2, batch: 1, samples: 20 },
    ],
    baselines: {
      memcpy_gbs: 5,
      postmessage: [{ workers: 2, floats: 4194304, median_us: 64000 }],
      copy_floor: [{ workers: 2, floats: 4194304, in_place: false, median_us: 5600, busbw_gbs: 3 }],
    },
    meta: { spin: 2000, hardwareConcurrency: 2, note: '' },
  };

  it('gives each row its place, its share of memcpy and its speed-up over postMessage', () => {
    const lines = formatAllReduceReport(report).split('\n');
    expect(lines[0]).toBe('memcpy (1 thread, SAB→SAB): 5.00 GB/s');
    expect(lines[2].split(/\s+/)).toEqual(['2', '4194304', 'auto', 'no', 'direct', '6400.00', '2.500', '50.0%', '10.0x']);
    expect(lines[3].split(/\s+/)).toEqual(['2', '4194304', 'auto', 'yes', 'direct', '5000.00', '3.200', '64.0%', '12.8x']);
  });

  it('states the copy floor with its share of memcpy', () => {
    expect(formatAllReduceReport(report)).toContain('2 workers, 4194304 floats, out of place: 5600.00 µs, busbw 3.000 GB/s (60.0% of memcpy)');
  });
});
