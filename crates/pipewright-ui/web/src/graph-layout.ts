// From the graph JSON (docs/graph-json.md) to positioned boxes and edge routes, laid out by ELK's
// layered algorithm. `toElkGraph` is pure (unit-tested); `layoutGraph` runs ELK. Every
// coordinate that comes out is absolute (ELK's ROOT coordinate mode), so drawing needs no
// nesting arithmetic.
import ELK from "elkjs/lib/elk.bundled.js";
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api";
import type { GraphEdge, GraphNode, GraphRegion, GraphWorkflow } from "./types";
import type { Layout } from "./graph-model";

export const NODE_WIDTH = 220;
export const NODE_HEIGHT = 58;
/** Room for a compound step's own title above its regions. */
const COMPOUND_HEADER = 40;
/** Room for a region's role (`do`, `branch left`) above its steps. */
const REGION_HEADER = 22;
const LABEL_CHAR_WIDTH = 6.5;

const nodeId = (id: string) => `n:${id}`;
const regionId = (id: string) => `r:${id}`;

/**
 * A region with more steps than this is laid out as blocks of that many consecutive steps, each
 * a compound node that ELK lays out on its own, the blocks themselves laid out left to right.
 * ELK's layered algorithm recurses along a chain: on one 5,000-step column it overflows the
 * stack, and its cost grows faster than the step count; blocks bound both (docs/ui.md,
 * "Performance").
 */
export const BLOCK_SIZE = 100;

export function toElkGraph(workflow: GraphWorkflow): ElkNode {
  const root: ElkNode = {
    id: "root",
    layoutOptions: {
      "elk.algorithm": "layered",
      "elk.direction": "DOWN",
      "elk.hierarchyHandling": "SEPARATE_CHILDREN",
      "elk.json.shapeCoords": "ROOT",
      "elk.json.edgeCoords": "ROOT",
      "elk.padding": "[top=16,left=16,bottom=16,right=16]",
      "elk.spacing.nodeNode": "24",
      "elk.layered.spacing.nodeNodeBetweenLayers": "30",
      "elk.edgeRouting": "ORTHOGONAL",
      ...(workflow.body.nodes?.length > BLOCK_SIZE ? { "elk.direction": "RIGHT" } : {}),
    },
    ...regionContent(workflow.body),
  };
  return root;
}

const blockId = (regionId: string, i: number) => `b:${regionId}:${i}`;

function regionContent(region: GraphRegion): { children: ElkNode[]; edges: ElkExtendedEdge[] } {
  const nodes = region.nodes ?? [];
  const present = new Set(nodes.map((n) => n.id));
  const edges = (region.edges ?? []).flatMap((e, i) =>
    // An edge to a node outside this region would make ELK throw; the graph JSON keeps edges
    // inside their region, so this only guards against a document of another version.
    present.has(e.from) && present.has(e.to) && e.from !== e.to ? [{ e, i }] : [],
  );
  const elkEdge = ({ e, i }: { e: GraphEdge; i: number }): ElkExtendedEdge => ({
    id: `e:${region.id}:${i}`,
    sources: [nodeId(e.from)],
    targets: [nodeId(e.to)],
    labels: e.label
      ? [{ id: `l:${region.id}:${i}`, text: e.label, width: e.label.length * LABEL_CHAR_WIDTH + 6, height: 14 }]
      : [],
  });
  if (nodes.length <= BLOCK_SIZE) {
    return { children: nodes.map(elkNode), edges: edges.map(elkEdge) };
  }

  const blockOf = new Map<string, number>();
  nodes.forEach((n, i) => blockOf.set(n.id, Math.floor(i / BLOCK_SIZE)));
  const blocks: ElkNode[] = [];
  for (let b = 0; b * BLOCK_SIZE < nodes.length; b++) {
    const first = b * BLOCK_SIZE;
    const last = Math.min(nodes.length, first + BLOCK_SIZE);
    blocks.push({
      id: blockId(region.id, b),
      labels: [{ text: `steps ${first + 1}–${last}` }],
      layoutOptions: {
        "elk.padding": `[top=${REGION_HEADER},left=10,bottom=10,right=10]`,
        "elk.direction": "DOWN",
      },
      children: nodes.slice(first, last).map(elkNode),
      edges: [],
    });
  }
  // An edge inside a block stays there; one between blocks joins the blocks (once per pair).
  const between = new Map<string, ElkExtendedEdge>();
  for (const edge of edges) {
    const from = blockOf.get(edge.e.from) ?? 0;
    const to = blockOf.get(edge.e.to) ?? 0;
    if (from === to) {
      blocks[from].edges?.push(elkEdge(edge));
    } else {
      const id = `be:${region.id}:${from}:${to}`;
      if (!between.has(id)) {
        between.set(id, { id, sources: [blockId(region.id, from)], targets: [blockId(region.id, to)] });
      }
    }
  }
  return { children: blocks, edges: [...between.values()] };
}

function elkNode(node: GraphNode): ElkNode {
  const regions = node.regions ?? [];
  if (regions.length === 0) {
    return { id: nodeId(node.id), width: NODE_WIDTH, height: NODE_HEIGHT };
  }
  return {
    id: nodeId(node.id),
    layoutOptions: {
      "elk.padding": `[top=${COMPOUND_HEADER},left=10,bottom=10,right=10]`,
      "elk.direction": "RIGHT",
      "elk.spacing.nodeNode": "16",
      "elk.nodeSize.constraints": "MINIMUM_SIZE",
      "elk.nodeSize.minimum": `(${NODE_WIDTH + 100}, ${NODE_HEIGHT})`,
    },
    children: regions.map(({ role, region }) => ({
      id: regionId(region.id),
      labels: [{ text: role }],
      layoutOptions: {
        "elk.padding": `[top=${REGION_HEADER},left=10,bottom=10,right=10]`,
        "elk.direction": "DOWN",
        "elk.nodeSize.constraints": "MINIMUM_SIZE",
        "elk.nodeSize.minimum": "(120, 40)",
      },
      ...regionContent(region),
    })),
    edges: [],
  };
}

/** Walks ELK's answer back onto the graph's nodes. */
export function collectLayout(workflow: GraphWorkflow, laid: ElkNode): Layout {
  const byId = new Map<string, GraphNode>();
  const roles = new Map<string, string>();
  const regions = new Map<string, GraphRegion>();
  const index = (region: GraphRegion) => {
    regions.set(region.id, region);
    for (const n of region.nodes ?? []) {
      byId.set(nodeId(n.id), n);
      for (const r of n.regions ?? []) {
        roles.set(regionId(r.region.id), r.role);
        index(r.region);
      }
    }
  };
  index(workflow.body);

  const out: Layout = { width: laid.width ?? 0, height: laid.height ?? 0, nodes: [], regions: [], edges: [] };
  const walk = (container: ElkNode) => {
    for (const c of container.children ?? []) {
      const graphNode = byId.get(c.id);
      const box = { x: c.x ?? 0, y: c.y ?? 0, width: c.width ?? 0, height: c.height ?? 0 };
      if (graphNode) {
        out.nodes.push({ node: graphNode, ...box, compound: (graphNode.regions ?? []).length > 0 });
      } else {
        // A region's box, or a block of a long region's steps: both drawn as labelled frames.
        out.regions.push({ id: c.id, role: roles.get(c.id) ?? c.labels?.[0]?.text ?? "", ...box });
      }
      walk(c);
    }
    for (const e of container.edges ?? []) {
      const points: { x: number; y: number }[] = [];
      for (const s of e.sections ?? []) {
        points.push(s.startPoint, ...(s.bendPoints ?? []), s.endPoint);
      }
      const label = e.labels?.[0];
      out.edges.push({
        id: e.id,
        kind: edgeKind(regions, e.id),
        label: label?.text ?? null,
        points,
        labelAt: label && label.x != null && label.y != null ? { x: label.x, y: label.y } : null,
      });
    }
  };
  walk(laid);
  return out;
}

function edgeKind(regions: Map<string, GraphRegion>, id: string): string {
  // `e:REGION:INDEX`: the region id may itself hold dots, never a colon.
  const m = /^e:(.*):(\d+)$/.exec(id);
  if (!m) return "next";
  return regions.get(m[1])?.edges?.[Number(m[2])]?.kind ?? "next";
}

/** A long region cut into runs of BLOCK_SIZE consecutive steps, with the edges inside each. */
export function splitIntoBlocks(region: GraphRegion, size = BLOCK_SIZE): GraphRegion[] {
  const nodes = region.nodes ?? [];
  if (nodes.length <= size) return [region];
  const blocks: GraphRegion[] = [];
  const blockOf = new Map<string, number>();
  nodes.forEach((n, i) => blockOf.set(n.id, Math.floor(i / size)));
  for (let first = 0; first < nodes.length; first += size) {
    const slice = nodes.slice(first, first + size);
    blocks.push({ id: region.id, entry: slice[0].id, nodes: slice, edges: [] });
  }
  for (const e of region.edges ?? []) {
    const from = blockOf.get(e.from);
    if (from !== undefined && from === blockOf.get(e.to)) blocks[from].edges.push(e);
  }
  return blocks;
}

/** How long ELK may hold the main thread between two yields while laying out blocks. */
const SLICE_MS = 50;

/** Space between two blocks of a long workflow. */
const BLOCK_GAP = 40;

let elk: InstanceType<typeof ELK> | null = null;

/** ELK's answers by the shape of the graph they were for (ids aside); bounded. */
const byShape = new Map<string, ElkNode>();
const SHAPES_KEPT = 64;

/**
 * ELK's layout of `graph`, or the one it gave a graph of the same shape: the same options, node
 * sizes, labels and edges, whatever the ids. ELK is deterministic and reads nothing but those,
 * so the answer is the same; a long generated workflow repeats a few block shapes (5,000
 * identical steps are 50 blocks of one shape), and each shape costs one ELK run.
 */
async function layoutByShape(graph: ElkNode): Promise<ElkNode> {
  const toShape = new Map<string, string>();
  const shapeId = (id: string) => {
    let s = toShape.get(id);
    if (s === undefined) {
      s = `#${toShape.size}`;
      toShape.set(id, s);
    }
    return s;
  };
  const isRefs = (k: string) => k === "sources" || k === "targets";
  const shape = JSON.stringify(graph, (k, v) =>
    k === "id" && typeof v === "string" ? shapeId(v) : isRefs(k) && Array.isArray(v) ? v.map(shapeId) : v,
  );
  let laid = byShape.get(shape);
  if (!laid) {
    elk ??= new ELK();
    laid = await elk.layout(JSON.parse(shape) as ElkNode);
    if (byShape.size >= SHAPES_KEPT) byShape.clear();
    byShape.set(shape, laid);
  }
  const fromShape = new Map<string, string>();
  for (const [id, s] of toShape) fromShape.set(s, id);
  const back = (s: unknown) => (typeof s === "string" ? (fromShape.get(s) ?? s) : s);
  return JSON.parse(JSON.stringify(laid), (k, v) =>
    k === "id" ? back(v) : isRefs(k) && Array.isArray(v) ? v.map(back) : v,
  ) as ElkNode;
}

/** How many ELK runs the shape cache answered (for the tests). */
export function shapesKept(): number {
  return byShape.size;
}

/**
 * Lays the workflow out. A workflow of more than BLOCK_SIZE top-level steps is laid out a block
 * at a time, in order, each block a column to the right of the previous one; `onPart` receives
 * each block as soon as ELK has placed it (so the first steps are drawn while the rest are still
 * being laid out) and the browser gets the main thread back between blocks.
 */
export async function layoutGraph(
  workflow: GraphWorkflow,
  onPart?: (part: Layout) => void,
  isCancelled: () => boolean = () => false,
): Promise<Layout> {
  const blocks = splitIntoBlocks(workflow.body);
  if (blocks.length === 1) {
    const whole = collectLayout(workflow, await layoutByShape(toElkGraph(workflow)));
    onPart?.(whole);
    return whole;
  }
  const total: Layout = { width: 0, height: 0, nodes: [], regions: [], edges: [] };
  let x = 0;
  let first = 0;
  let lastYield = performance.now();
  for (const [b, block] of blocks.entries()) {
    if (isCancelled()) break;
    const sub = { ...workflow, body: block };
    const part = shift(collectLayout(sub, await layoutByShape(toElkGraph(sub))), x);
    part.regions.unshift({
      id: `b:${workflow.body.id}:${b}`,
      role: `steps ${first + 1}–${first + block.nodes.length}`,
      x,
      y: 0,
      width: part.width - x,
      height: part.height,
    });
    total.nodes.push(...part.nodes);
    total.regions.push(...part.regions);
    total.edges.push(...part.edges);
    total.width = part.width;
    total.height = Math.max(total.height, part.height);
    onPart?.(part);
    x = part.width + BLOCK_GAP;
    first += block.nodes.length;
    // Give the browser the main thread back a few times a second, not after every block.
    if (performance.now() - lastYield > SLICE_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      lastYield = performance.now();
    }
  }
  return total;
}

/** The layout moved right by `dx`; its width then reaches to its new right edge. */
function shift(l: Layout, dx: number): Layout {
  const mv = <T extends { x: number }>(o: T): T => ({ ...o, x: o.x + dx });
  return {
    width: l.width + dx,
    height: l.height,
    nodes: l.nodes.map(mv),
    regions: l.regions.map(mv),
    edges: l.edges.map((e) => ({
      ...e,
      points: e.points.map(mv),
      labelAt: e.labelAt ? mv(e.labelAt) : null,
    })),
  };
}

/**
 * Lays out a three-step graph and throws the result away: ELK's first layout in a page runs its
 * code cold (seconds on a big graph under load); the run page does this while it waits for the
 * run's detail, so the real graph starts warm.
 */
export async function warmUp(): Promise<void> {
  const node = (id: string): GraphNode => ({ id, kind: "transform", summary: "", regions: [] });
  const nodes = [node("w.a"), node("w.b"), { ...node("w.c"), regions: [{ role: "do", region: { id: "w.c.do", entry: "w.c.do.a", nodes: [node("w.c.do.a")], edges: [] } }] }];
  const body: GraphRegion = {
    id: "w",
    entry: "w.a",
    nodes,
    edges: [
      { from: "w.a", to: "w.b", kind: "next", label: null },
      { from: "w.b", to: "w.c", kind: "next", label: "x" },
    ],
  };
  await layoutGraph({ id: "w", name: "warm-up", dialect: "pipeline", description: null, body });
}
