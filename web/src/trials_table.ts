// A sweep's trials table: one row per trial, sorted in the browser by any
// column. The runs table sorts on the server (runs/search), which cannot sort
// by what this table works out from the history (best value, steps reached,
// time over a trial's runs) nor by trial number as a number.
import { el, formatNumber, formatSeconds } from "./format";
import { param, Trial } from "./sweep_data";

type Value = string | number | undefined;

interface Column { id: string; label: string; value: (t: Trial) => Value; cell?: (t: Trial) => Node | string; }

export class TrialsTable {
  readonly element = el("table", { class: "list trials", id: "trials" });
  private columns: Column[];
  private order = "trial";
  private descending = false;

  // `sorting`: the order to start with (the table a refresh replaces had it).
  // `parents`: a column of the trial each started from (PBT).
  constructor(private trials: Trial[], params: string[], metric: string, private maximize: boolean,
              sorting?: { order: string; descending: boolean }, parents = false) {
    if (sorting) { this.order = sorting.order; this.descending = sorting.descending; }
    this.columns = [
      { id: "trial", label: "Trial", value: (t) => t.trial,
        cell: (t) => el("a", { href: `#/run/${t.latest.info.run_id}` }, String(t.trial)) },
      ...(parents ? [this.parentColumn()] : []),
      { id: "state", label: "State", value: (t) => t.state,
        cell: (t) => el("span", { class: `state state-${t.state}` }, t.state) },
      { id: "status", label: "Status", value: (t) => t.latest.info.status,
        cell: (t) => el("span", { class: `status-${t.latest.info.status}` }, t.latest.info.status) },
      ...params.map((p): Column => ({ id: `params.${p}`, label: p, value: (t) => numberOrText(param(t.latest, p)) })),
      { id: "last", label: `${metric} (last)`, value: (t) => t.last },
      { id: "best", label: `${metric} (${maximize ? "max" : "min"})`, value: (t) => t.best },
      { id: "steps", label: "Steps", value: (t) => t.steps },
      { id: "duration", label: "Duration", value: (t) => t.durationS, cell: (t) => formatSeconds(t.durationS) },
    ];
    this.render();
  }

  // The parent's number, linked to its run, and the step it forked at.
  private parentColumn(): Column {
    const runOf = new Map(this.trials.map((t) => [t.trial, t.latest.info.run_id]));
    return { id: "parent", label: "Parent", value: (t) => t.parent,
      cell: (t) => (t.parent === undefined ? "" : el("span", {},
        runOf.has(t.parent) ? el("a", { href: `#/run/${runOf.get(t.parent)}` }, String(t.parent)) : String(t.parent),
        el("span", { class: "muted" }, ` @ ${t.forkStep}`))) };
  }

  sorting(): { order: string; descending: boolean } {
    return { order: this.order, descending: this.descending };
  }

  private render(): void {
    const head = el("tr", {}, ...this.columns.map((c) => {
      const arrow = c.id === this.order ? (this.descending ? " ▼" : " ▲") : "";
      const th = el("th", { class: "sortable", "data-col": c.id }, c.label + arrow);
      th.addEventListener("click", () => {
        // The first click on a metric column puts the best trials first.
        const first = (c.id === "last" || c.id === "best") ? this.maximize : false;
        this.descending = c.id === this.order ? !this.descending : first;
        this.order = c.id;
        this.render();
      });
      return th;
    }));
    // A param column may be gone after a refresh: then by trial.
    const column = this.columns.find((c) => c.id === this.order) || this.columns[0];
    const rows = [...this.trials].sort((a, b) => compare(column.value(a), column.value(b), this.descending) || a.trial - b.trial);
    this.element.replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows.map((t) =>
      el("tr", { "data-trial": String(t.trial), "data-run-id": t.latest.info.run_id }, ...this.columns.map((c) => {
        const v = c.value(t);
        const content = c.cell ? c.cell(t) : typeof v === "number" ? formatNumber(v) : v ?? "";
        // data-value: the exact number, for tests and copying.
        const attrs: Record<string, string> = { "data-col": c.id };
        if (typeof v === "number") { attrs.class = "num"; attrs["data-value"] = String(v); }
        return el("td", attrs, content);
      })))));
  }
}

function numberOrText(v: string | undefined): Value {
  return v !== undefined && v.trim() !== "" && !isNaN(Number(v)) ? Number(v) : v;
}

// Missing values last in either direction; numbers before text.
function compare(a: Value, b: Value, descending: boolean): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? 1 : -1;
  const c = typeof a === "number" && typeof b === "number" ? a - b
          : typeof a === "number" ? -1 : typeof b === "number" ? 1 : String(a).localeCompare(String(b));
  return descending ? -c : c;
}
