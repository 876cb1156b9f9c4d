// Small formatting and DOM helpers shared by the pages.

export function el<K extends keyof HTMLElementTagNameMap>(
    tag: K, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

export function formatTime(ms?: number): string {
  if (!ms) return "";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function formatDuration(startMs?: number, endMs?: number): string {
  if (!startMs) return "";
  return formatSeconds(Math.max(0, ((endMs || Date.now()) - startMs) / 1000));
}

export function formatSeconds(s: number): string {
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

export function formatNumber(v: number | undefined): string {
  if (v === undefined || v === null) return "";
  if (!isFinite(v)) return String(v);
  if (v !== 0 && (Math.abs(v) >= 1e6 || Math.abs(v) < 1e-3)) return v.toExponential(3);
  return String(Math.round(v * 1e4) / 1e4);
}

// Axis ticks: 1.2k, 3.4M, 5.6G; keeps large values inside a narrow axis.
export function shortNumber(v: number): string {
  const a = Math.abs(v);
  for (const [limit, suffix] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]] as [number, string][]) {
    if (a >= limit) return `${Math.round((v / limit) * 100) / 100}${suffix}`;
  }
  return String(Math.round(v * 1e6) / 1e6);
}

// Distinct colours for many series (golden-angle hues).
export function seriesColor(i: number): string {
  return `hsl(${(i * 137.508) % 360}, 65%, 45%)`;
}

export function table(rows: [string, string | Node][], emptyText: string): HTMLElement {
  if (!rows.length) return el("p", { class: "muted" }, emptyText);
  const t = el("table", { class: "kv" });
  for (const [k, v] of rows) t.append(el("tr", {}, el("th", {}, k), el("td", {}, v)));
  return t;
}

// The width of `e`'s content box (its padding taken off): what a chart
// drawn inside it may take.
export function contentWidth(e: HTMLElement): number {
  const s = getComputedStyle(e);
  return Math.max(0, e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight));
}
