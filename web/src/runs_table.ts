// The runs table of one project: server-side sort, filter and grouping
// (runs/search), pages loaded in the background, only the rows and columns
// in view built (virtualized), a column picker, selection for compare view.
import { get, post, Run } from "./api";
import { defaultColumns, metricGroup } from "./columns";
import { Nested, nest } from "./run_tree";
import { el, formatDuration, formatNumber, formatTime } from "./format";

const ROW_HEIGHT = 28;
// A small first page draws rows at once; the rest comes in pages as big as
// the server allows: fewer queries, each of which sorts the whole filtered set.
const FIRST_PAGE = 300;
const PAGE_SIZE = 50000;

interface Row { run: Run; values: Map<string, string | number>; }
// A run's row nests under its parent's (run_tree.ts) unless rows are grouped.
type Item = { group: string; count: number } | Nested<Row>;

// "metrics.loss" → metrics.`loss` (MLflow's quoting for keys with dots or spaces).
export function searchIdentifier(column: string): string {
  const dot = column.indexOf(".");
  const kind = column.slice(0, dot), key = column.slice(dot + 1);
  if (kind === "attributes") return `attributes.${key}`;
  return `${kind}.\`${key.replace(/`/g, "")}\``;
}

function rowOf(run: Run): Row {
  const values = new Map<string, string | number>();
  for (const m of run.data.metrics || []) values.set("metrics." + m.key, m.value);
  for (const p of run.data.params || []) values.set("params." + p.key, p.value);
  for (const t of run.data.tags || []) values.set("tags." + t.key, t.value);
  return { run, values };
}

function columnLabel(c: string): string {
  return c.replace(/^metrics\./, "").replace(/^params\./, "").replace(/^tags\./, "#").replace(/^attributes\./, "");
}

export class RunsTable {
  private rows: Row[] = [];
  private items: Item[] = [];
  private columns = new Set<string>();  // every key seen in loaded runs
  private visible: string[] = [];
  private userPickedColumns = false;
  private orderColumn = "attributes.start_time";
  private descending = true;
  private groupColumn = "";
  private generation = 0;
  private done = false;
  private selected = new Set<string>();
  private expanded = new Set<string>();  // parents whose children show
  private viewport = el("div", { class: "viewport", id: "runs-viewport" });
  private spacer = el("div", { class: "spacer" });
  private header = el("div", { class: "row header", id: "runs-header" });
  private status = el("span", { id: "run-count", class: "muted" });
  private error = el("div", { class: "error", id: "runs-error" });
  private picker = el("div", { class: "picker-list" });
  private groupSelect = el("select", { id: "group-by" });
  private compareButton = el("button", { id: "compare-selected", disabled: "" }, "Compare selected");
  // MLflow's lifecycle: a deleted run is hidden (ACTIVE_ONLY) until restored.
  private viewSelect = el("select", { id: "run-view" }, el("option", { value: "ACTIVE_ONLY" }, "Active runs"),
                          el("option", { value: "DELETED_ONLY" }, "Deleted runs"), el("option", { value: "ALL" }, "All runs"));
  private deleteButton = el("button", { id: "delete-selected", class: "secondary", disabled: "" }, "Delete");
  private restoreButton = el("button", { id: "restore-selected", class: "secondary", disabled: "" }, "Restore");

  // `filter`: the search to start with (a link such as the sweep page's gives one).
  constructor(private root: HTMLElement, private experimentId: string, private filter = "") {}

  async mount(): Promise<void> {
    const filterInput = el("input", {
      id: "runs-filter", type: "search", size: "60",
      placeholder: "filter, e.g. metrics.loss < 0.5 AND params.lr = '0.01'  (Enter)",
    });
    filterInput.value = this.filter;
    filterInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { this.filter = filterInput.value.trim(); void this.reload(); }
    });
    this.groupSelect.addEventListener("change", () => { this.groupColumn = this.groupSelect.value; void this.reload(); });
    this.compareButton.addEventListener("click", () => {
      location.hash = `#/compare?runs=${[...this.selected].join(",")}`;
    });
    this.viewSelect.addEventListener("change", () => void this.reload());
    this.deleteButton.addEventListener("click", () => void this.lifecycle("runs/delete"));
    this.restoreButton.addEventListener("click", () => void this.lifecycle("runs/restore"));
    const picker = el("details", { class: "picker", id: "column-picker" }, el("summary", {}, "Columns"), this.picker);
    this.root.append(
      el("div", { class: "toolbar" }, filterInput, el("label", {}, "Group by ", this.groupSelect), picker,
         this.viewSelect, this.compareButton, this.deleteButton, this.restoreButton, this.status),
      this.error, this.viewport);
    this.viewport.append(this.header, this.spacer);
    this.viewport.addEventListener("scroll", () => this.renderRows());
    this.spacer.addEventListener("change", (e) => this.onSelect(e));
    await this.reload();
  }

  // Deletes or restores the selected runs, then reads the table again.
  private async lifecycle(endpoint: string): Promise<void> {
    let failure = "";
    try {
      for (const id of this.selected) await post(endpoint, { run_id: id });
    } catch (e) {
      failure = `${endpoint === "runs/delete" ? "Delete" : "Restore"} failed: ${(e as Error).message}`;
    }
    this.selected.clear();
    this.selectionChanged();
    await this.reload();
    if (failure) this.error.textContent = failure;
  }

  private orderBy(): string[] {
    const order = [`${searchIdentifier(this.orderColumn)} ${this.descending ? "DESC" : "ASC"}`];
    if (this.groupColumn) order.unshift(`${searchIdentifier(this.groupColumn)} ASC`);
    return order;
  }

  // Loads every page of the current query; a newer reload abandons an older one.
  async reload(): Promise<void> {
    const generation = ++this.generation;
    this.rows = []; this.done = false; this.error.textContent = "";
    this.rebuild();
    let token: string | undefined;
    try {
      do {
        const page = await get<{ runs?: Run[]; next_page_token?: string }>("runs/search", {
          experiment_ids: [this.experimentId], filter: this.filter || undefined,
          order_by: this.orderBy(), max_results: token ? PAGE_SIZE : FIRST_PAGE, page_token: token,
          run_view_type: this.viewSelect.value,
        });
        if (generation !== this.generation) return;
        for (const run of page.runs || []) this.rows.push(rowOf(run));
        token = page.next_page_token || undefined;
        this.done = !token;
        this.rebuild();
      } while (token);
    } catch (e) {
      if (generation !== this.generation) return;
      this.error.textContent = `Search failed: ${(e as Error).message}`;
      this.done = true;
      this.rebuild();
    }
  }

  private rebuild(): void {
    const before = this.columns.size;
    for (const r of this.rows) for (const k of r.values.keys()) this.columns.add(k);
    if (this.columns.size !== before) this.refreshColumnChoices();
    this.items = this.groupColumn ? this.grouped() : nest(this.rows, (r) => r.run, this.expanded);
    this.status.textContent = `${this.rows.length.toLocaleString("en-US")} runs${this.done ? "" : " (loading…)"}`;
    this.spacer.style.height = `${this.items.length * ROW_HEIGHT}px`;
    this.renderHeader();
    this.renderRows();
  }

  private grouped(): Item[] {
    const counts = new Map<string, number>();
    const valueOf = (r: Row) => String(r.values.get(this.groupColumn) ?? "(none)");
    for (const r of this.rows) counts.set(valueOf(r), (counts.get(valueOf(r)) || 0) + 1);
    const items: Item[] = [];
    let last: string | undefined;
    for (const r of this.rows) {
      const v = valueOf(r);
      if (v !== last) items.push({ group: `${columnLabel(this.groupColumn)} = ${v}`, count: counts.get(v)! });
      last = v;
      items.push({ item: r, depth: 0, children: 0, expanded: false });
    }
    return items;
  }

  private refreshColumnChoices(): void {
    const all = [...this.columns].sort();
    if (!this.userPickedColumns) {
      const room = this.viewport.clientWidth || this.root.clientWidth;
      this.visible = defaultColumns(all, Math.floor((room - rowWidth(0, this.compact())) / valueWidth(this.compact())));
    }
    // The user's metrics and the params open; cohort's own metrics and the
    // tags in sections of their own, closed until asked for.
    const sections: [string, string, (c: string) => boolean, boolean][] = [
      ["metrics", "Metrics", (c) => c.startsWith("metrics.") && metricGroup(c.slice(8)) === "user", true],
      ["params", "Params", (c) => c.startsWith("params."), true],
      ["engine", "Engine metrics", (c) => c.startsWith("metrics.") && metricGroup(c.slice(8)) === "engine", false],
      ["system", "System metrics", (c) => c.startsWith("metrics.") && metricGroup(c.slice(8)) === "system", false],
      ["tags", "Tags", (c) => c.startsWith("tags."), false],
    ];
    const open = new Set(Array.from(this.picker.querySelectorAll("details[open]")).map((d) => (d as HTMLElement).dataset.section));
    this.picker.replaceChildren(...sections.map(([id, title, has, opened]) => {
      const cols = all.filter(has);
      if (!cols.length) return "";
      const section = el("details", { class: "picker-section", "data-section": id },
                         el("summary", {}, `${title} (${cols.length})`), ...cols.map((c) => this.columnBox(c)));
      section.open = open.size ? open.has(id) : opened;
      return section;
    }));
    const current = this.groupSelect.value;
    this.groupSelect.replaceChildren(el("option", { value: "" }, "(none)"),
      ...all.filter((c) => !c.startsWith("tags.mlflow.") && c !== "tags.cohort.command")
        .map((c) => el("option", { value: c }, c)));
    this.groupSelect.value = current;
  }

  // A narrow window (800 px) drops the start time (Duration stays) and
  // narrows the name and value cells, so params show beside the metrics.
  private compact(): boolean {
    return (this.viewport.clientWidth || this.root.clientWidth) < COMPACT_BELOW;
  }

  private columnBox(c: string): HTMLElement {
    const box = el("input", { type: "checkbox", "data-col": c });
    box.checked = this.visible.includes(c);
    box.addEventListener("change", () => {
      this.userPickedColumns = true;
      this.visible = box.checked ? [...this.visible, c] : this.visible.filter((v) => v !== c);
      this.renderHeader(); this.renderRows();
    });
    return el("label", {}, box, " " + columnLabel(c));
  }

  private renderHeader(): void {
    const cells: HTMLElement[] = [el("span", { class: "c-select" })];
    const sortable: [string, string, string][] = [
      ["attributes.run_name", "Name", "c-name"], ["attributes.status", "Status", "c-status"],
      ["attributes.start_time", "Started", "c-start"], ["attributes.end_time", "Duration", "c-duration"],
      ...this.visible.map((c): [string, string, string] => [c, columnLabel(c), "c-value"])];
    for (const [col, label, cls] of sortable) {
      const arrow = col === this.orderColumn ? (this.descending ? " ▼" : " ▲") : "";
      const cell = el("span", { class: `${cls} sortable`, "data-col": col, title: col }, label + arrow);
      cell.addEventListener("click", () => {
        this.descending = col === this.orderColumn ? !this.descending : true;
        this.orderColumn = col;
        void this.reload();
      });
      cells.push(cell);
    }
    this.header.replaceChildren(...cells);
    this.viewport.classList.toggle("compact", this.compact());
    this.header.style.minWidth = this.spacer.style.minWidth = `${rowWidth(this.visible.length, this.compact())}px`;
  }

  // Only the rows in view (plus a margin) exist in the DOM.
  private renderRows(): void {
    const top = this.viewport.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - 10);
    const last = Math.min(this.items.length, Math.ceil((top + this.viewport.clientHeight) / ROW_HEIGHT) + 10);
    const rows: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const item = this.items[i];
      const row = "group" in item ? this.groupRow(item) : this.runRow(item);
      row.style.transform = `translateY(${i * ROW_HEIGHT}px)`;
      rows.push(row);
    }
    this.spacer.replaceChildren(...rows);
  }

  private groupRow(item: { group: string; count: number }): HTMLElement {
    return el("div", { class: "row group-row" }, `${item.group}  (${item.count} run${item.count === 1 ? "" : "s"})`);
  }

  private runRow(n: Nested<Row>): HTMLElement {
    const r = n.item;
    const info = r.run.info;
    const toggle = n.children ? el("button", { class: "nest-toggle", "data-run-id": info.run_id, "aria-expanded": String(n.expanded),
                                               title: `${n.children} child run${n.children === 1 ? "" : "s"}` },
                                   `${n.expanded ? "▾" : "▸"} ${n.children}`) : "";
    if (toggle) toggle.addEventListener("click", () => {
      if (this.expanded.has(info.run_id)) this.expanded.delete(info.run_id); else this.expanded.add(info.run_id);
      this.rebuild();
    });
    const box = el("input", { type: "checkbox", "data-run-id": info.run_id });
    box.checked = this.selected.has(info.run_id);
    const cells: (HTMLElement)[] = [
      el("span", { class: "c-select" }, box),
      // The badge first: a long name is cut off at the cell's end, the badge is not.
      el("span", { class: "c-name", style: `padding-left: ${8 + 16 * n.depth}px` }, toggle, sweepLink(r),
         el("a", { href: `#/run/${info.run_id}` }, info.run_name || info.run_id)),
      el("span", { class: `c-status status-${info.status}` }, info.status),
      el("span", { class: "c-start" }, formatTime(info.start_time)),
      el("span", { class: "c-duration" }, formatDuration(info.start_time, info.end_time)),
    ];
    for (const c of this.visible) {
      const v = r.values.get(c);
      cells.push(el("span", { class: "c-value" }, typeof v === "number" ? formatNumber(v) : v ?? ""));
    }
    const row = el("div", { class: `row run-row${info.lifecycle_stage === "deleted" ? " deleted" : ""}`,
                            "data-run-id": info.run_id, "data-depth": String(n.depth) });
    row.append(...cells);
    return row;
  }

  private onSelect(e: Event): void {
    const box = e.target as HTMLInputElement;
    const id = box.getAttribute("data-run-id");
    if (!id) return;
    if (box.checked) this.selected.add(id); else this.selected.delete(id);
    this.selectionChanged();
  }

  private selectionChanged(): void {
    const n = this.selected.size;
    this.compareButton.textContent = n ? `Compare selected (${n})` : "Compare selected";
    for (const b of [this.compareButton, this.deleteButton, this.restoreButton]) b.toggleAttribute("disabled", n === 0);
  }

}

// A sweep's own run (cohort sweep --tracking) links to the sweep's page.
function sweepLink(r: Row): HTMLElement | string {
  const id = r.values.get("tags.cohort.sweep.id");
  if (r.values.get("tags.cohort.sweep.role") !== "sweep" || !id) return "";
  return el("a", { class: "badge sweep-link", href: `#/sweep/${id}`, title: "the sweep's page" }, "sweep");
}

// Cell widths in px, as style.css gives them (.compact: narrower ones).
const COMPACT_BELOW = 1000;

function valueWidth(compact: boolean): number {
  return compact ? 96 : 120;
}

function rowWidth(valueColumns: number, compact: boolean): number {
  const fixed = compact ? 30 + 170 + 90 + 80 : 30 + 240 + 90 + 170 + 100;
  return fixed + valueColumns * valueWidth(compact) + 2;
}

