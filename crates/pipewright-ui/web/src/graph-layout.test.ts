import { describe, expect, it } from "vitest";
import { BLOCK_SIZE, layoutGraph, shapesKept, splitIntoBlocks, toElkGraph } from "./graph-layout";
import { countNodes, pickWorkflow, writtenText } from "./graph-model";
import type { GraphDoc, GraphNode, GraphRegion, GraphWorkflow } from "./types";

const leaf = (id: string, kind = "transform", key: string | null = null): GraphNode => ({
  id,
  kind,
  summary: `${kind} ${id}`,
  step_key: key,
  regions: [],
});

const chain = (id: string, nodes: GraphNode[]): GraphRegion => ({
  id,
  entry: nodes[0]?.id ?? null,
  nodes,
  edges: nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id, kind: "next", label: null })),
});

const forEach: GraphNode = {
  ...leaf("w0.s1", "for_each", "1"),
  regions: [
    { role: "do", region: chain("w0.s1.do", [leaf("w0.s1.do.s0", "agent")]) },
    { role: "collect", region: chain("w0.s1.collect", [leaf("w0.s1.collect.s0", "transform", "1.for_each.collect")]) },
  ],
};

const workflow = (name: string, body: GraphRegion): GraphWorkflow => ({
  id: "w0",
  name,
  dialect: "pipeline",
  description: null,
  body,
});

const hello = workflow("hello", chain("w0", [leaf("w0.s0", "transform", "0"), forEach, leaf("w0.s2", "shell", "2")]));

describe("graph layout", () => {
  it("picks the run's workflow by name, else the first", () => {
    const doc: GraphDoc = { format: "pipewright-graph", version: 1, workflows: [hello, { ...hello, name: "other" }] };
    expect(pickWorkflow(doc, "other")?.name).toBe("other");
    expect(pickWorkflow(doc, "missing")?.name).toBe("hello");
    expect(pickWorkflow(null, "x")).toBeNull();
  });

  it("makes a compound ELK node of a step with regions, one child per region", () => {
    const g = toElkGraph(hello);
    expect(g.layoutOptions?.["elk.algorithm"]).toBe("layered");
    expect(g.children?.map((c) => c.id)).toEqual(["n:w0.s0", "n:w0.s1", "n:w0.s2"]);
    const fe = g.children?.[1];
    expect(fe?.children?.map((c) => c.id)).toEqual(["r:w0.s1.do", "r:w0.s1.collect"]);
    expect(fe?.children?.[0].children?.map((c) => c.id)).toEqual(["n:w0.s1.do.s0"]);
    expect(g.edges?.map((e) => [e.sources[0], e.targets[0]])).toEqual([
      ["n:w0.s0", "n:w0.s1"],
      ["n:w0.s1", "n:w0.s2"],
    ]);
  });

  it("drops an edge whose ends are not in its region instead of handing ELK a dangling one", () => {
    const body = chain("w0", [leaf("w0.s0"), leaf("w0.s1")]);
    body.edges.push({ from: "w0.s1", to: "w0.s9", kind: "next", label: null });
    expect(toElkGraph(workflow("p", body)).edges).toHaveLength(1);
  });

  it("cuts a long region into blocks that keep their inner edges", () => {
    const nodes = Array.from({ length: BLOCK_SIZE * 2 + 5 }, (_, i) => leaf(`w0.s${i}`));
    const blocks = splitIntoBlocks(chain("w0", nodes));
    expect(blocks.map((b) => b.nodes.length)).toEqual([BLOCK_SIZE, BLOCK_SIZE, 5]);
    expect(blocks[0].edges).toHaveLength(BLOCK_SIZE - 1);
    expect(blocks[2].edges).toHaveLength(4);
    expect(splitIntoBlocks(chain("w0", nodes.slice(0, 3)))).toHaveLength(1);
    expect(countNodes(hello.body)).toBe(5);
  });

  it("lays a workflow out with ELK: every node placed, nested steps inside their compound", async () => {
    const layout = await layoutGraph(hello);
    expect(layout.nodes.map((n) => n.node.id).sort()).toEqual(
      ["w0.s0", "w0.s1", "w0.s1.do.s0", "w0.s1.collect.s0", "w0.s2"].sort(),
    );
    const at = (id: string) => layout.nodes.find((n) => n.node.id === id)!;
    // Top to bottom in sequence order.
    expect(at("w0.s0").y).toBeLessThan(at("w0.s1").y);
    expect(at("w0.s1").y + at("w0.s1").height).toBeLessThanOrEqual(at("w0.s2").y);
    // A nested step lies inside its fan-out's box (absolute coordinates).
    const outer = at("w0.s1");
    const inner = at("w0.s1.do.s0");
    expect(inner.x).toBeGreaterThanOrEqual(outer.x);
    expect(inner.y).toBeGreaterThanOrEqual(outer.y);
    expect(inner.x + inner.width).toBeLessThanOrEqual(outer.x + outer.width);
    expect(inner.y + inner.height).toBeLessThanOrEqual(outer.y + outer.height);
    expect(layout.regions.map((r) => r.role).sort()).toEqual(["collect", "do"]);
    expect(layout.edges.length).toBe(2);
    for (const e of layout.edges) expect(e.points.length).toBeGreaterThanOrEqual(2);
  });

  it("lays a long workflow out block by block, each block right of the last", async () => {
    const nodes = Array.from({ length: BLOCK_SIZE + 10 }, (_, i) => leaf(`w0.s${i}`, "transform", String(i)));
    const parts: number[] = [];
    const layout = await layoutGraph(workflow("long", chain("w0", nodes)), (p) => parts.push(p.nodes.length));
    expect(parts).toEqual([BLOCK_SIZE, 10]);
    expect(layout.nodes).toHaveLength(BLOCK_SIZE + 10);
    const firstBlock = layout.nodes.slice(0, BLOCK_SIZE);
    const secondBlock = layout.nodes.slice(BLOCK_SIZE);
    const rightEdge = Math.max(...firstBlock.map((n) => n.x + n.width));
    expect(Math.min(...secondBlock.map((n) => n.x))).toBeGreaterThan(rightEdge);
    expect(layout.regions.map((r) => r.role)).toEqual([`steps 1–${BLOCK_SIZE}`, `steps ${BLOCK_SIZE + 1}–${BLOCK_SIZE + 10}`]);
  });

  it("lays out blocks of one shape once, each placed as its own steps", async () => {
    // A shape no other test lays out: edge labels of a length nothing else uses.
    const nodes = Array.from({ length: BLOCK_SIZE * 3 }, (_, i) => leaf(`w0.t${i}`, "shell", String(i)));
    const body = chain("w0", nodes);
    body.edges = body.edges.map((e) => ({ ...e, label: "seventeen-letters" }));
    const before = shapesKept();
    const layout = await layoutGraph(workflow("same", body));
    expect(shapesKept() - before).toBe(1);
    expect(layout.nodes.map((n) => n.node.id)).toEqual(nodes.map((n) => n.id));
    const first = layout.nodes.slice(0, BLOCK_SIZE);
    for (const b of [1, 2]) {
      const block = layout.nodes.slice(b * BLOCK_SIZE, (b + 1) * BLOCK_SIZE);
      const dx = block[0].x - first[0].x;
      expect(dx).toBeGreaterThan(0);
      block.forEach((n, i) => {
        expect(n.x - dx).toBeCloseTo(first[i].x);
        expect(n.y).toBeCloseTo(first[i].y);
      });
    }
    // Every edge keeps its kind and label, and goes down between its block's steps.
    expect(layout.edges).toHaveLength(3 * (BLOCK_SIZE - 1));
    expect(layout.edges.every((e) => e.label === "seventeen-letters" && e.kind === "next")).toBe(true);
  });

  it("finds what a step runs as written: a command, a prompt, an expression", () => {
    expect(writtenText({ ...leaf("a", "shell"), details: { command: "sleep 3" } })).toEqual({
      label: "command (as written)",
      text: "sleep 3",
    });
    expect(writtenText({ ...leaf("b", "ask"), details: { prompt: "Review {{x}}" } })?.label).toBe("prompt (as written)");
    expect(writtenText({ ...leaf("c", "transform"), details: { value: "1 + 1" } })?.text).toBe("1 + 1");
    expect(writtenText({ ...leaf("d", "fold"), details: { source: "pipe" } })).toBeNull();
    expect(writtenText(leaf("e", "gate"))).toBeNull();
  });
});
