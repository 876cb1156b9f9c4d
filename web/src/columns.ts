// Which of a run's metrics are the user's own and which are cohort's
// (engine/* from DistributedOptimizer, system/* from cohort.track's sampler),
// the runs table's default columns, and when a numeric axis reads better on
// a log scale. Pure functions: tests/web/columns_test.mjs runs them in node.

export type MetricGroup = "user" | "engine" | "system";

export function metricGroup(key: string): MetricGroup {
  if (key.startsWith("engine/")) return "engine";
  if (key.startsWith("system/")) return "system";
  return "user";
}

const GROUP_ORDER: MetricGroup[] = ["user", "engine", "system"];

// The user's metrics first, then engine, then system; by name within each,
// so the same run always lists (and charts) its metrics in the same order.
export function userFirst(keys: string[]): string[] {
  return [...new Set(keys)].sort((a, b) =>
    GROUP_ORDER.indexOf(metricGroup(a)) - GROUP_ORDER.indexOf(metricGroup(b)) || (a < b ? -1 : a > b ? 1 : 0));
}

// The runs table's columns before the user picks any: the user's metrics and
// the params, as many as `slots` allows, half each when both have more (an
// unused half goes to the other). `columns` are "metrics.K", "params.K", ...
export function defaultColumns(columns: string[], slots: number): string[] {
  const sorted = [...new Set(columns)].sort();
  const metrics = sorted.filter((c) => c.startsWith("metrics.") && metricGroup(c.slice(8)) === "user");
  const params = sorted.filter((c) => c.startsWith("params."));
  const n = Math.max(2, slots);
  let m = Math.min(metrics.length, Math.ceil(n / 2));
  const p = Math.min(params.length, n - m);
  m = Math.min(metrics.length, n - p);
  return [...metrics.slice(0, m), ...params.slice(0, p)];
}

// A numeric axis reads better on a log scale when every value is positive
// and they span at least two decades (a learning rate of 1e-4..1e-1: on a
// linear axis all but the largest crowd at the bottom).
export function wantsLogScale(values: (number | string | undefined)[]): boolean {
  const present = values.filter((v) => v !== undefined && v !== "");
  if (present.length < 2 || !present.every((v) => typeof v === "number" || !isNaN(Number(v)))) return false;
  const nums = present.map(Number);
  if (!nums.every((v) => v > 0 && isFinite(v))) return false;
  return Math.max(...nums) / Math.min(...nums) >= 100;
}

// Where v falls on [lo, hi] (0..1), on a log scale or a linear one.
export function axisPosition(v: number, lo: number, hi: number, log: boolean): number {
  if (hi === lo) return 0.5;
  return log ? (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) : (v - lo) / (hi - lo);
}
