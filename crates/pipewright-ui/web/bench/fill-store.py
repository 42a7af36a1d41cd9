#!/usr/bin/env python3
"""Fills a real run store with copies of the runs it holds, for the UI benchmark (bench.mjs).

Usage: fill-store.py STORE COUNT

Every table that refers to a run (inputs, landings, events, approvals, usage, ...) is read from
the database's own schema, so the copies carry whatever a real run of this pipewright records:
copying rows costs seconds where 10,000 real `pipewright run`s would cost many minutes. Each
copy gets a new id and its own start time, one second apart, newest first.
"""
import sqlite3
import sys
import uuid


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, count = sys.argv[1], int(sys.argv[2])
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys = ON")
    run_cols = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
    if "seq" not in run_cols or "id" not in run_cols:
        print(f"{path}: not a pipewright run store (no runs.seq/runs.id)", file=sys.stderr)
        return 1
    children = []
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        cols = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        if table != "runs" and "run" in cols:
            # An INTEGER PRIMARY KEY other than the run (events.id, usage.id) is left to SQLite.
            pk = [r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[5] == 1]
            keep = [c for c in cols if not (c in pk and c != "run" and len(pk) == 1)]
            children.append((table, keep))
    templates = [r[0] for r in db.execute("SELECT seq FROM runs ORDER BY seq")]
    if not templates:
        print(f"{path}: no run to copy", file=sys.stderr)
        return 1
    (newest,) = db.execute("SELECT MAX(created_ms) FROM runs").fetchone()
    copy_cols = [c for c in run_cols if c != "seq"]
    with db:
        for i in range(count):
            template = templates[i % len(templates)]
            row = dict(zip(run_cols, db.execute("SELECT * FROM runs WHERE seq = ?", (template,)).fetchone()))
            started = newest - (i + 1) * 1000
            took = row["updated_ms"] - row["created_ms"]
            row.update(id=str(uuid.uuid4()), created_ms=started, updated_ms=started + took)
            cur = db.execute(
                f"INSERT INTO runs ({', '.join(copy_cols)}) VALUES ({', '.join('?' for _ in copy_cols)})",
                [row[c] for c in copy_cols],
            )
            seq = cur.lastrowid
            for table, cols in children:
                select = ", ".join("?" if c == "run" else c for c in cols)
                db.execute(
                    f"INSERT INTO {table} ({', '.join(cols)}) SELECT {select} FROM {table} WHERE run = ?",
                    (seq, template),
                )
    (total,) = db.execute("SELECT COUNT(*) FROM runs").fetchone()
    print(f"{path}: {total} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
