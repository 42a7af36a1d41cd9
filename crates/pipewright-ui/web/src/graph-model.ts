// What a laid-out graph is, and the graph facts the page needs before (and without) laying it
// out. Apart from graph-layout.ts so the page loads ELK (1.4 MB) only when it draws a graph.
import type { GraphDoc, GraphNode, GraphRegion, GraphWorkflow } from "./types";

export interface LaidNode {
  node: GraphNode;
  x: number;
  y: number;
  width: number;
  height: number;
  compound: boolean;
}

export interface LaidRegion {
  id: string;
  role: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LaidEdge {
  id: string;
  kind: string;
  label: string | null;
  points: { x: number; y: number }[];
  labelAt: { x: number; y: number } | null;
}

export interface Layout {
  width: number;
  height: number;
  nodes: LaidNode[];
  regions: LaidRegion[];
  edges: LaidEdge[];
}

/** The workflow the run ran: by name, else the first (the one `graph` lists first). */
export function pickWorkflow(doc: GraphDoc | null, name: string | null | undefined): GraphWorkflow | null {
  if (!doc || !Array.isArray(doc.workflows) || doc.workflows.length === 0) return null;
  return doc.workflows.find((w) => w.name === name) ?? doc.workflows[0];
}

export function countNodes(region: GraphRegion): number {
  let n = 0;
  for (const node of region.nodes ?? []) {
    n += 1;
    for (const r of node.regions ?? []) n += countNodes(r.region);
  }
  return n;
}


/**
 * What a step runs, as its file writes it: the command of a shell step or a recipe's bash step,
 * the prompt of an agent or ask step, a transform's expression. The detail panel shows it,
 * labelled as written, when the server has no rendered prompt or command for the step (one not
 * started yet, a transform, a run recorded before they were kept).
 */
export function writtenText(node: GraphNode): { label: string; text: string } | null {
  const d = node.details ?? {};
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
  const command = str(d.command);
  if (command) return { label: "command (as written)", text: command };
  const prompt = str(d.prompt);
  if (prompt) return { label: "prompt (as written)", text: prompt };
  const value = str(d.value);
  if (node.kind === "transform" && value) return { label: "expression", text: value };
  return null;
}
