// Parent and child runs: MLflow's tag mlflow.parentRunId, and a sweep's
// trials (and its "(continued)" runs) under the sweep's own run, whose id is
// their tag cohort.sweep.id. Pure functions: tests/web/columns_test.mjs.
import { Run } from "./api";

function tagOf(run: Run, key: string): string | undefined {
  return (run.data.tags || []).find((t) => t.key === key)?.value;
}

// The run this one is a child of, or undefined for a top-level run.
export function parentOf(run: Run): string | undefined {
  const parent = tagOf(run, "mlflow.parentRunId");
  if (parent && parent !== run.info.run_id) return parent;
  const sweep = tagOf(run, "cohort.sweep.id");
  if (sweep && sweep !== run.info.run_id && tagOf(run, "cohort.sweep.role")) return sweep;
  return undefined;
}

export interface Nested<T> { item: T; depth: number; children: number; expanded: boolean; }

// `items` in their order with each child listed under its parent (in the
// order it came), the children of a parent not in `expanded` left out. A run
// whose parent is not among the items stays at the top; a cycle of parents
// is broken where it closes.
export function nest<T>(items: T[], runOf: (t: T) => Run, expanded: Set<string>): Nested<T>[] {
  const ids = new Set(items.map((t) => runOf(t).info.run_id));
  const children = new Map<string, T[]>();
  const top: T[] = [];
  for (const t of items) {
    const parent = parentOf(runOf(t));
    if (parent && ids.has(parent)) (children.get(parent) || children.set(parent, []).get(parent)!).push(t);
    else top.push(t);
  }
  // Runs in a cycle of parents reach no top-level run: the first of each
  // cycle goes to the top, so none is lost.
  const reached = new Set<string>();
  const reach = (t: T) => {
    const id = runOf(t).info.run_id;
    if (reached.has(id)) return;
    reached.add(id);
    for (const k of children.get(id) || []) reach(k);
  };
  top.forEach(reach);
  for (const t of items) {
    if (!reached.has(runOf(t).info.run_id)) { top.push(t); reach(t); }
  }
  const out: Nested<T>[] = [];
  const shown = new Set<string>();
  const visit = (t: T, depth: number) => {
    const id = runOf(t).info.run_id;
    if (shown.has(id)) return;
    shown.add(id);
    const kids = children.get(id) || [];
    const open = expanded.has(id);
    out.push({ item: t, depth, children: kids.length, expanded: open });
    if (open) for (const k of kids) visit(k, depth + 1);
  };
  for (const t of top) visit(t, 0);
  return out;
}
