// What the pages say about the run engine a server serves (`engine` in the runs document and a
// run's detail; absent for the local store). Pure.
import { formatTime } from "./format";

export interface EngineInfo {
  /** `the Restate engine at http://… (admin http://…)` */
  at: string;
  /** Why the server cannot read the engine now; null while it can. */
  error: string | null;
  /** When the server last held everything the engine had. */
  refreshed_ms: number | null;
}

/** The line above the runs (null for the local store), and whether it is an error. */
export function engineLine(e: EngineInfo | null | undefined): { text: string; error: boolean } | null {
  if (!e) return null;
  if (e.error) {
    const asOf = e.refreshed_ms == null ? "" : ` What is shown is as of ${formatTime(e.refreshed_ms)} UTC.`;
    return { text: `${e.error}.${asOf} The server tries again every second.`, error: true };
  }
  return { text: `Runs of ${e.at}, read every second.`, error: false };
}

/** What the runs page says when it has no run to show. */
export function noRunsText(e: EngineInfo | null | undefined): string {
  return e
    ? "No runs on the engine yet: start one with `pipewright run FILE --engine restate`."
    : "No runs in this store yet: start one with `pipewright run FILE`.";
}
