// The job queue (#/queue): every job the caller may see with its state,
// slots, owner, priority and place in the queue, redrawn every few seconds;
// #/queue/ID: one job and its log, which follows the job while it runs.
import { getJob, Job, jobLog, listJobs, NeedsToken, queueToken, setQueueToken } from "./api";
import { el, formatSeconds, formatTime, table } from "./format";

const REFRESH_MS = 2000;
const LOG_POLL_MS = 500;
const FINAL = new Set(["succeeded", "failed", "cancelled"]);

// The form that asks for the queue's token after a 401 (the server's message says where it is).
function tokenForm(root: HTMLElement, message: string, then: () => void): void {
  const input = el("input", { id: "queue-token", type: "password", size: "48", autocomplete: "off",
                              placeholder: "the queue's token, or your user token under --auth" });
  const form = el("form", { id: "queue-token-form", class: "toolbar" }, el("label", {}, "Token ", input),
                  el("button", { type: "submit" }, "Use"));
  form.addEventListener("submit", (e) => { e.preventDefault(); setQueueToken(input.value.trim()); then(); });
  root.append(el("p", { class: "error", id: "queue-error" }, message), form,
              el("p", { class: "muted" }, "Kept in this tab only (sessionStorage), sent as a bearer token."));
}

function seconds(t?: number | null): number | undefined { return t ? t * 1000 : undefined; }

function runtime(j: Job): string {
  if (!j.started) return "";
  return formatSeconds(Math.max(0, (j.finished || Date.now() / 1000) - j.started));
}

export class QueuePage {
  private timer = 0;
  private stopped = false;
  private host = el("div", { id: "queue" });

  constructor(private root: HTMLElement) {}

  async mount(): Promise<void> {
    this.root.append(el("h1", {}, "Queue"), this.host);
    await this.refresh();
  }

  unmount(): void { this.stopped = true; window.clearTimeout(this.timer); }

  private async refresh(): Promise<void> {
    let jobs: Job[];
    try {
      jobs = await listJobs();
    } catch (e) {
      if (!(e instanceof NeedsToken)) throw e;
      this.host.replaceChildren();
      tokenForm(this.host, e.message + (queueToken() ? " (the token given was refused)" : ""), () => void this.refresh());
      return;
    }
    if (this.stopped) return;
    const head = el("tr", {}, ...["Job", "State", "Slots", "Owner", "Priority", "Project", "Pool", "Host", "Submitted",
                                   "Runtime", "Queue", "Command"].map((h) => el("th", {}, h)));
    const rows = jobs.map((j) => el("tr", { "data-job-id": String(j.id), "data-state": j.state },
      el("td", {}, el("a", { href: `#/queue/${j.id}` }, String(j.id))),
      el("td", {}, el("span", { class: `job-state job-${j.state}` }, j.state)),
      el("td", { class: "num", "data-col": "slots" }, String(j.slots)),
      el("td", { "data-col": "user" }, j.user), el("td", { "data-col": "priority" }, j.priority),
      el("td", {}, j.project), el("td", {}, j.pool), el("td", {}, j.host),
      el("td", {}, formatTime(seconds(j.submitted))), el("td", {}, runtime(j)),
      el("td", { class: "reason" }, j.position != null ? `#${j.position}${j.reason ? ": " + j.reason : ""}`
                                    : j.exit_code != null ? `exit ${j.exit_code}` : j.reason),
      el("td", { class: "command", title: j.command.join(" ") }, j.command.join(" "))));
    this.host.replaceChildren(
      el("p", { class: "muted", id: "job-count" }, `${jobs.length} job${jobs.length === 1 ? "" : "s"}`),
      jobs.length ? el("div", { class: "scroll-x" }, el("table", { class: "list jobs", id: "jobs" }, head, ...rows))
                  : el("p", { class: "muted" }, "No jobs: cohort submit -- COMMAND adds one."));
    this.timer = window.setTimeout(() => void this.refresh().catch(() => undefined), REFRESH_MS);
  }
}

export class JobPage {
  private timer = 0;
  private stopped = false;
  private offset = 0;
  private decoder = new TextDecoder();
  private log = el("pre", { class: "job-log", id: "job-log" });
  private follow = el("input", { type: "checkbox", id: "job-follow" });
  private summary = el("div", { id: "job-summary" });

  constructor(private root: HTMLElement, private id: number) {}

  async mount(): Promise<void> {
    let job: Job;
    try {
      job = await getJob(this.id);
    } catch (e) {
      if (!(e instanceof NeedsToken)) throw e;
      tokenForm(this.root, e.message, () => { this.root.replaceChildren(); void this.mount(); });
      return;
    }
    this.follow.checked = true;
    // Scrolling up to read stops following; back at the end follows again.
    this.log.addEventListener("scroll", () => {
      this.follow.checked = this.log.scrollTop + this.log.clientHeight >= this.log.scrollHeight - 4;
    });
    this.root.append(el("h1", {}, `Job ${job.id} `, el("span", { class: `badge job-${job.state}`, id: "job-state" }, job.state)),
      this.summary, el("div", { class: "toolbar" }, el("label", {}, this.follow, " Follow the log"),
                       el("a", { href: "#/queue" }, "All jobs")), this.log);
    this.showSummary(job);
    await this.poll();
  }

  unmount(): void { this.stopped = true; window.clearTimeout(this.timer); }

  private showSummary(j: Job): void {
    this.summary.replaceChildren(table([
      ["Command", el("code", {}, j.command.join(" "))], ["Owner", j.user], ["Slots", String(j.slots)],
      ["Priority", j.priority], ["Project", j.project], ["Pool", j.pool], ["Host", j.host],
      ["Submitted", formatTime(seconds(j.submitted))], ["Started", formatTime(seconds(j.started))],
      ["Finished", formatTime(seconds(j.finished))], ["Runtime", runtime(j)],
      ["Exit code", j.exit_code == null ? "" : String(j.exit_code)], ["Restarts", String(j.restarts)],
      ["Reason", j.reason]].filter(([, v]) => v !== "") as [string, string | Node][], ""));
  }

  // Reads the log on from where it left off until the job has ended and the
  // log is read to its end (a final state read before the bytes).
  private async poll(): Promise<void> {
    if (this.stopped) return;
    let state = "";
    try {
      for (;;) {
        const chunk = await jobLog(this.id, this.offset);
        if (this.stopped) return;
        state = chunk.state;
        this.offset = chunk.next;
        if (chunk.bytes.length) {
          this.log.append(this.decoder.decode(chunk.bytes, { stream: true }));
          if (this.follow.checked) this.log.scrollTop = this.log.scrollHeight;
        }
        if (!chunk.bytes.length) break;
      }
      const badge = document.getElementById("job-state");
      if (badge && badge.textContent !== state) {
        badge.textContent = state; badge.className = `badge job-${state}`;
        this.showSummary(await getJob(this.id));
      }
    } catch {
      // the server restarting: the next poll tries again
    }
    if (FINAL.has(state)) { this.log.dataset.complete = "true"; return; }
    this.timer = window.setTimeout(() => void this.poll(), LOG_POLL_MS);
  }
}
