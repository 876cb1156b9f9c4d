// The dashboard's only way to the server: MLflow's REST API under /ajax-api/2.0.

export interface KeyValue { key: string; value: string; }
export interface Metric { key: string; value: number; timestamp: number; step: number; run_id?: string; }
export interface RunInfo {
  run_id: string; run_name?: string; experiment_id: string; status: string;
  start_time?: number; end_time?: number; artifact_uri?: string; lifecycle_stage?: string;
}
export interface Run {
  info: RunInfo;
  data: { metrics?: Metric[]; params?: KeyValue[]; tags?: KeyValue[] };
}
export interface Experiment {
  experiment_id: string; name: string; lifecycle_stage: string;
  creation_time?: number; last_update_time?: number; tags?: KeyValue[];
}
export interface ArtifactFile { path: string; is_dir?: boolean; file_size?: number; }

export class ApiError extends Error {}

type Query = Record<string, string | number | string[] | undefined>;

function queryString(query: Query): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) {
      parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(String(one)));
    }
  }
  return parts.join("&");
}

async function parse<T>(response: Response): Promise<T> {
  const text = await response.text();
  let body: any = {};
  try { body = text ? JSON.parse(text) : {}; } catch { body = { message: text }; }
  if (!response.ok) throw new ApiError(body.message || `HTTP ${response.status}`);
  return body as T;
}

export async function get<T>(endpoint: string, query: Query = {}): Promise<T> {
  return parse<T>(await fetch(`/ajax-api/2.0/mlflow/${endpoint}?${queryString(query)}`));
}

export async function post<T>(endpoint: string, body: object): Promise<T> {
  return parse<T>(await fetch(`/ajax-api/2.0/mlflow/${endpoint}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  }));
}

export async function listArtifacts(dir: string): Promise<ArtifactFile[]> {
  const r = await parse<{ files?: ArtifactFile[] }>(
    await fetch(`/ajax-api/2.0/mlflow-artifacts/artifacts?${queryString({ path: dir })}`));
  return r.files || [];
}

export function artifactUrl(path: string): string {
  return "/ajax-api/2.0/mlflow-artifacts/artifacts/" + path.split("/").map(encodeURIComponent).join("/");
}

// Where a run's artifacts live in the proxy: "<experiment>/<run>/artifacts".
export function artifactRoot(run: RunInfo): string {
  const uri = run.artifact_uri || "";
  const prefix = "mlflow-artifacts:/";
  return uri.startsWith(prefix) ? uri.slice(prefix.length).replace(/^\/+/, "")
                                : `${run.experiment_id}/${run.run_id}/artifacts`;
}

// Downsampled history (min/max buckets on the server): at most maxResults
// points per run, of the steps in `range` (both ends included) when given.
export async function history(runIds: string[], key: string, maxResults = 1000,
                              range?: [number, number]): Promise<Metric[]> {
  const r = await get<{ metrics?: Metric[] }>("metrics/get-history-bulk-interval", {
    run_ids: runIds, metric_key: key, max_results: maxResults,
    start_step: range?.[0], end_step: range?.[1] });
  return r.metrics || [];
}

export async function getRun(runId: string): Promise<Run> {
  return (await get<{ run: Run }>("runs/get", { run_id: runId })).run;
}

// The job queue (/api/queue, docs/queue.md). Every call carries a secret:
// the queue's token (without --auth) or the user's (with --auth), both sent
// as a bearer token. The page asks for it once and keeps it for the tab's
// life only (sessionStorage), never in the URL.
export interface Job {
  id: number; state: string; slots: number; priority: string; user: string; project: string; pool: string;
  command: string[]; submitted?: number | null; started?: number | null; finished?: number | null;
  reason: string; exit_code?: number | null; restarts: number; host: string; position?: number | null;
  estimated_start?: number | null;
}

export class NeedsToken extends ApiError {}

const QUEUE_TOKEN = "cohort.queue-token";

export function queueToken(): string { return sessionStorage.getItem(QUEUE_TOKEN) || ""; }
export function setQueueToken(token: string): void {
  if (token) sessionStorage.setItem(QUEUE_TOKEN, token); else sessionStorage.removeItem(QUEUE_TOKEN);
}

async function queueFetch(path: string): Promise<Response> {
  const token = queueToken();
  const response = await fetch(`/api/queue/${path}`, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  if (response.status === 401) {
    const body = await response.json().catch(() => ({}));
    throw new NeedsToken(body.message || "The queue needs a token");
  }
  return response;
}

export async function listJobs(): Promise<Job[]> {
  return (await parse<{ jobs?: Job[] }>(await queueFetch("jobs"))).jobs || [];
}

export async function getJob(id: number): Promise<Job> {
  return parse<Job>(await queueFetch(`jobs/${id}`));
}

// The log from byte `offset`: the bytes, the next offset, and the job's state
// read before them (a final state means the log is complete).
export async function jobLog(id: number, offset: number): Promise<{ bytes: Uint8Array; next: number; state: string }> {
  const response = await queueFetch(`jobs/${id}/log?offset=${offset}`);
  if (!response.ok) await parse(response);
  const bytes = new Uint8Array(await response.arrayBuffer());
  return { bytes, next: Number(response.headers.get("X-Cohort-Log-Offset") || offset + bytes.length),
           state: response.headers.get("X-Cohort-Job-State") || "" };
}

// Pipelines' status documents (/api/cohort/pipelines, docs/pipelines.md):
// what each pipeline's controller last posted.
export interface PipelineInput { name: string; dataset?: string; ref?: string; step?: string; }
export interface PipelineStep {
  name: string; state: string; inputs: PipelineInput[]; output: string; output_commit: string; run: string;
  datums: { done: number; total: number; failed: number }; failed_datums: Record<string, string>; jobs: number[];
  input_commits: { name: string; location: string; commit: string }[]; error?: string;
}
// The provenance record of an output commit (src/pipeline/provenance.h).
export interface PipelineCommitRecord {
  pipeline: string; step: string; run: string; output: string; output_commit: string; time?: number;
  inputs: { name: string; location: string; commit: string; split?: boolean }[];
  code?: { git_commit: string; dirty: boolean; diff_sha256: string }; params?: Record<string, unknown>;
  command?: string[]; jobs: number[];
}
export interface PipelineStatus {
  pipeline: string; state: string; controller_pid: number; started: number; ended: number; error?: string;
  steps: PipelineStep[];
  commits?: PipelineCommitRecord[];  // the latest output commits' records; absent from older controllers
}
export interface PipelineSummary { name: string; owner: string; update_time: number; state: string;
                                   steps: { name: string; state: string }[]; }

export async function listPipelines(): Promise<PipelineSummary[]> {
  return (await parse<{ pipelines?: PipelineSummary[] }>(await fetch("/api/cohort/pipelines/list"))).pipelines || [];
}

export async function getPipeline(name: string): Promise<{ update_time: number; status: PipelineStatus }> {
  return parse(await fetch(`/api/cohort/pipelines/status?${queryString({ name })}`));
}
