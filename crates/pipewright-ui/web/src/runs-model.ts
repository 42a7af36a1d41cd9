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
  "interrupted",
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

/** Up to this many rows the table holds them all (find-in-page works); past it, a window. */
export const FULL_TABLE_ROWS = 200;

/**
 * The rows to put in the table when only those near the screen are drawn: a 10,000-row table
 * costs the browser seconds of style and layout, the window a few milliseconds. `top` is how far
 * the table's first row is scrolled above the top of the screen (negative: still below it).
 */
export function rowWindow(
  total: number,
  rowHeight: number,
  top: number,
  viewHeight: number,
  overscan = 30,
): { start: number; end: number } {
  if (total <= FULL_TABLE_ROWS || rowHeight <= 0) return { start: 0, end: total };
  const first = Math.floor(Math.max(0, top) / rowHeight);
  const visible = Math.ceil(viewHeight / rowHeight) + 1;
  const start = Math.max(0, Math.min(total, first - overscan));
  const end = Math.min(total, first + visible + overscan);
  return { start, end: Math.max(start, end) };
}
