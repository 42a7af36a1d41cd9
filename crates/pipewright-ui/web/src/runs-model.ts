// The runs page's list: what the filter keeps, in what order. Pure.
import type { RunRow } from "./types";

export const STATUS_FILTERS = [
  "all",
  "running",
  "waiting",
  "paused",
  "ok",
  "failed",
  "cancelled",
  "stopped",
] as const;
export type StatusFilter = (typeof STATUS_FILTERS)[number];

export function parseFilter(s: string | null): StatusFilter {
  return (STATUS_FILTERS as readonly string[]).includes(s ?? "") ? (s as StatusFilter) : "all";
}

/** `waiting` is a marker, not a status: a paused recipe and a live run at an approval both wait. */
export function keepRun(row: RunRow, filter: StatusFilter): boolean {
  if (filter === "all") return true;
  if (filter === "waiting") return row.waiting;
  return row.status === filter;
}

/** Newest first; the server already sends that order, this keeps it when rows arrive apart. */
export function visibleRuns(rows: readonly RunRow[], filter: StatusFilter): RunRow[] {
  const kept = rows.filter((r) => keepRun(r, filter));
  // Array.prototype.sort is stable: runs started in the same millisecond keep the server's order.
  return kept.sort((a, b) => b.created_ms - a.created_ms);
}
