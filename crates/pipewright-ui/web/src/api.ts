// The server's HTTP API (docs/ui.md, "HTTP API"): JSON requests and the SSE streams.

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function errorOf(res: Response): Promise<HttpError> {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && typeof body.error === "string") message = body.error;
  } catch {
    // Not JSON (a proxy's page, say): the status line says enough.
  }
  return new HttpError(res.status, message);
}

export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

/** POSTs JSON; the browser adds our own Origin, which the server requires of every POST. */
export async function postJson<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    credentials: "same-origin",
    body: JSON.stringify(body),
  });
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

export const runUrl = (id: string) => `/api/runs/${encodeURIComponent(id)}`;

export type Connection = "connecting" | "live" | "reconnecting";

export interface StreamHandlers {
  /** SSE event name → what to do with its parsed data (and its id, for `log`). */
  on: Record<string, (data: unknown, lastEventId: string) => void>;
  onConnection: (c: Connection, reconnected: boolean) => void;
}

/** How long to wait before opening a new stream when the server refused or closed the last. */
const RETRY_MS = 2000;

/**
 * An EventSource that outlives server restarts. The browser reconnects by itself after a dropped
 * connection (sending Last-Event-ID), but gives up for good when a reconnect gets an HTTP error;
 * then a new stream is opened every RETRY_MS with `url(lastEventId)` so it resumes where it was.
 * Returns the function that closes it.
 */
export function openStream(url: (lastEventId: string) => string, h: StreamHandlers): () => void {
  let source: EventSource | null = null;
  let lastId = "";
  let opened = false;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | null = null;

  const connect = () => {
    if (closed) return;
    const es = new EventSource(url(lastId));
    source = es;
    es.onopen = () => {
      h.onConnection("live", opened);
      opened = true;
    };
    es.onerror = () => {
      if (closed) return;
      h.onConnection("reconnecting", false);
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        retry = setTimeout(connect, RETRY_MS);
      }
    };
    for (const [name, handler] of Object.entries(h.on)) {
      es.addEventListener(name, (ev) => {
        const msg = ev as MessageEvent<string>;
        if (msg.lastEventId) lastId = msg.lastEventId;
        let data: unknown;
        try {
          data = JSON.parse(msg.data);
        } catch {
          console.warn(`pipewright ui: ignored a ${name} message that is not JSON`);
          return;
        }
        handler(data, msg.lastEventId);
      });
    }
  };
  h.onConnection("connecting", false);
  connect();
  return () => {
    closed = true;
    if (retry) clearTimeout(retry);
    source?.close();
  };
}
