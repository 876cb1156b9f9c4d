// Parameter importance for a sweep: how much of the spread of the trials'
// final values each parameter's main effect explains.
//
// The method. fANOVA (Hutter et al. 2014; Optuna's default evaluator) fits a
// random forest f to the trials and scores parameter i by Var(E[f | x_i]) /
// Var(f): the share of the objective's variance that x_i's marginal explains.
// We estimate the same quantity from the trials directly, with no model: the
// trials are grouped by x_i (each category or distinct value its own group
// when there are at most MAX_LEVELS of them, else MAX_BINS groups of equal
// count by rank, so the result does not depend on a log or linear scale),
// and the between-group variance is taken over the total: the correlation
// ratio η², corrected for the number of groups as ε² (Kelley 1935), which is
// unbiased for an x_i that does not matter (η² grows with the groups alone).
// Like Optuna's get_param_importances we report each parameter's share of
// the sum. It needs no fitting in the browser, is deterministic, and reads
// only the trials; with sampled (independent) parameters, as random search
// and TPE's start give, E[y | x_i] is the fANOVA marginal. It cannot see
// interactions (neither does the main-effect fANOVA score Optuna returns).
// tests/web/test_dashboard.py checks it against Optuna's fANOVA on one sweep.

export interface Importance { param: string; share: number; explained: number; levels: number; }

const MAX_LEVELS = 10;
export const MIN_TRIALS = 8;

function groupsOf(values: string[]): number[] {
  const distinct = [...new Set(values)];
  const numeric = values.every((v) => v.trim() !== "" && isFinite(Number(v)));
  if (!numeric || distinct.length <= MAX_LEVELS) {
    const index = new Map(distinct.map((v, i) => [v, i]));
    return values.map((v) => index.get(v)!);
  }
  // Equal-count bins by rank; equal values share a bin (the first's).
  const n = values.length, bins = Math.max(2, Math.min(MAX_LEVELS, Math.round(Math.sqrt(n))));
  const sorted = values.map(Number).sort((a, b) => a - b);
  return values.map((v) => Math.min(bins - 1, Math.floor((sorted.indexOf(Number(v)) * bins) / n)));
}

// ε² of `ys` grouped by `groups` (0 when the groups explain nothing).
export function explainedVariance(groups: number[], ys: number[]): number {
  const n = ys.length;
  const mean = ys.reduce((a, b) => a + b, 0) / n;
  const total = ys.reduce((a, y) => a + (y - mean) ** 2, 0);
  const sums = new Map<number, [number, number]>();
  groups.forEach((g, i) => { const s = sums.get(g) || [0, 0]; s[0] += ys[i]; s[1] += 1; sums.set(g, s); });
  const k = sums.size;
  if (!(total > 0) || k < 2 || n <= k) return 0;
  let between = 0;
  for (const [sum, count] of sums.values()) between += count * (sum / count - mean) ** 2;
  const within = total - between;
  return Math.max(0, (between - (k - 1) * (within / (n - k))) / total);
}

// Each param's importance over the trials (params[p][i]: trial i's value of
// p as text; ys[i]: its final value), most important first; null with fewer
// than MIN_TRIALS trials.
export function paramImportances(params: Map<string, string[]>, ys: number[]): Importance[] | null {
  if (ys.length < MIN_TRIALS) return null;
  const out: Importance[] = [];
  for (const [param, values] of params) {
    const groups = groupsOf(values);
    out.push({ param, explained: explainedVariance(groups, ys), share: 0, levels: new Set(groups).size });
  }
  const sum = out.reduce((a, x) => a + x.explained, 0);
  for (const x of out) x.share = sum > 0 ? x.explained / sum : 0;
  return out.sort((a, b) => b.share - a.share || (a.param < b.param ? -1 : 1));
}
