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

