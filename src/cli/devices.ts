/**
 * `--devices`, as `generate` and `bench generate` take it:
 * - `auto`, `gpu` or `cpu`: the engine's `devices` kind, with `--tp` ranks (the engine decides
 *   when `--tp` is absent);
 * - `high-performance`, `low-power` or `fallback`: `--tp` GPU ranks, each asking for that adapter;
 * - `N`: N ranks on the default adapter (the engine's `devices: N`);
 * - a list, `gpu,cpu` or `cpu,cpu`: one rank per item, so the list is the TP degree (an item is
 *   `cpu`, or a GPU rank: `gpu`, the high-performance adapter, or one of the adapter words).
 * `bench generate` takes `--devices` more than once to compare kinds in one run.
 */
import type { DeviceSpec } from '../gpu/core/adapter.js';
import { UsageError } from './usage-error.js';

/** What the page passes to the engine as `devices`: the engine's option, `'gpu'` included. */
export type CliDevicesOption = 'auto' | 'gpu' | 'cpu' | number | DeviceSpec[];

export interface CliDevices {
  /** The flag's text, which names the configuration in reports. */
  text: string;
  /** The engine option; a function of the rank count for the adapter words. */
  option: CliDevicesOption | ((tp: number) => DeviceSpec[]);
  /** Ranks the value itself fixes (a count or a list); undefined: `--tp` says. */
  ranks?: number;
}

const KINDS = ['auto', 'gpu', 'cpu'] as const;

/** A GPU rank's spec for each adapter word. */
const ADAPTER_WORDS: Record<string, DeviceSpec> = {
  'high-performance': { powerPreference: 'high-performance' },
  'low-power': { powerPreference: 'low-power' },
  fallback: { forceFallbackAdapter: true },
};

/** A list item's spec: `gpu` is the high-performance adapter, whatever `auto` would pick. */
function itemSpec(item: string): DeviceSpec | undefined {
  if (item === 'cpu') return { cpu: true };
  if (item === 'gpu') return { powerPreference: 'high-performance' };
  return ADAPTER_WORDS[item];
}

const EXPECTED = 'auto, gpu, cpu, high-performance, low-power, fallback, a rank count, or a comma list of cpu / gpu / adapter words (gpu,cpu)';

export function parseDevices(value: string): CliDevices {
  const text = value.trim();
  if ((KINDS as readonly string[]).includes(text)) return { text, option: text as (typeof KINDS)[number] };
  const word = ADAPTER_WORDS[text];
  if (word) return { text, option: (tp) => Array.from({ length: tp }, () => word) };
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    if (n < 1) throw new UsageError(`--devices: a rank count is ≥ 1; got ${JSON.stringify(value)}`);
    return { text, option: n, ranks: n };
  }
  const items = text.split(',').map((x) => x.trim());
  const specs = items.map(itemSpec);
  if (items.length < 2 || specs.some((s) => s === undefined)) throw new UsageError(`--devices is ${EXPECTED}; got ${JSON.stringify(value)}`);
  return { text: items.join(','), option: specs as DeviceSpec[], ranks: items.length };
}

/** The engine option for `tp` ranks (tp 0: the engine decides, where the value lets it). */
export function devicesFor(d: CliDevices, tp: number): CliDevicesOption {
  return typeof d.option === 'function' ? d.option(Math.max(1, tp)) : d.option;
}

/**
 * The (devices, tp) cases of a `bench generate` run, in order: each `--devices` value at each
 * `--tp` degree, except that a count or a list is its own degree, and `auto` without `--tp` is
 * whatever the engine picks (tp 0). No `--devices`: the engine's default devices, at each degree.
 */
export function benchCases(devices: CliDevices[] | undefined, tp: number[] | undefined): { devices?: CliDevices; tp: number }[] {
  const degrees = tp ?? [1, 2];
  if (!devices?.length) return degrees.map((t) => ({ tp: t }));
  const out: { devices?: CliDevices; tp: number }[] = [];
  for (const d of devices) {
    const ts = d.ranks !== undefined ? [d.ranks] : d.option === 'auto' && tp === undefined ? [0] : degrees;
    for (const t of ts) if (!out.some((c) => c.devices?.text === d.text && c.tp === t)) out.push({ devices: d, tp: t });
  }
  return out;
}
