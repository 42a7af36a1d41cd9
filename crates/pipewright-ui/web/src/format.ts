// Text for times, durations and costs, as the CLI writes them (UTC times; `-` for no agent
// calls, `?` for an unknown cost: docs/run.md, "Usage and budgets").
import type { Usage } from "./types";

export function formatDuration(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const whole = Math.floor(s);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const sec = whole % 60;
  if (h > 0) return `${h} h ${String(m).padStart(2, "0")} min`;
  return `${m} min ${String(sec).padStart(2, "0")} s`;
}

/** `2026-11-29 11:33:10` in UTC, like `pipewright runs`. */
export function formatTime(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return "";
  return new Date(ms).toISOString().slice(0, 19).replace("T", " ");
}

export function formatCost(usage: Usage | null | undefined): string {
  if (!usage || usage.agent_calls === 0) return "-";
  if (usage.cost_usd == null) return "?";
  return usage.cost_usd < 0.01 ? `$${usage.cost_usd.toFixed(4)}` : `$${usage.cost_usd.toFixed(2)}`;
}

export function formatSteps(done: number | null, total: number | null): string {
  if (total == null) return done == null ? "" : `${done}`;
  return `${done ?? 0}/${total}`;
}

/** Any JSON value as a reader wants it in the detail panel: strings as they are. */
export function formatValue(v: unknown): string {
  if (v === undefined) return "";
  if (typeof v === "string") return v;
  return JSON.stringify(v, null, 2);
}
