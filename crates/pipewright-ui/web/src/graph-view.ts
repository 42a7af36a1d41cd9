// Draws a laid-out graph as SVG and keeps each step's colour, fan-out count and duration in step
// with the page model. Colours come from stateCss() (state-colour.ts) through `data-state`.
import { esc, truncate } from "./dom";
import { formatDuration } from "./format";
import type { Layout, LaidNode } from "./graph-model";
import { fanoutText, stateOf, swatchFor } from "./state-colour";
import type { GraphNode, NodeState } from "./types";

const SVG_NS = "http://www.w3.org/2000/svg";
const CHARS_PER_LINE = 31;

export function kindLabel(n: GraphNode): string {
  const kind = n.dialect_kind ?? n.kind;
  return n.name ? `${kind} ${n.name}` : kind;
}

function statusText(state: string, ns: NodeState | undefined): string {
  const parts = [swatchFor(state).label];
  const fan = fanoutText(ns);
  if (fan) parts.push(fan);
  const d = formatDuration(ns?.elapsed_ms);
  if (d) parts.push(d);
  return parts.join(" · ");
}

function nodeMarkup(l: LaidNode, nodes: Record<string, NodeState>): string {
  const n = l.node;
  const key = n.step_key ?? "";
  const state = stateOf(nodes, n.step_key);
  const title = truncate(kindLabel(n), CHARS_PER_LINE - 6);
  const width = Math.max(l.width, 1);
  return (
    `<g class="step${l.compound ? " compound" : ""}" data-testid="step-node" data-step-key="${esc(key)}"` +
    ` data-node-id="${esc(n.id)}" data-state="${esc(state)}" transform="translate(${l.x},${l.y})" tabindex="0">` +
    `<rect class="box" width="${width}" height="${l.height}" rx="6"/>` +
    `<text class="title" x="8" y="16">${esc(title)}${n.agent ? " ✦" : ""}</text>` +
    `<text class="key" x="${width - 8}" y="16" text-anchor="end">${esc(truncate(key, 14))}</text>` +
    `<text class="summary" x="8" y="33">${esc(truncate(n.summary ?? "", summaryChars(width, l.compound)))}</text>` +
    (l.compound
      ? `<text class="status" x="${width - 8}" y="33" text-anchor="end">${esc(statusText(state, nodes[key]))}</text>`
      : `<text class="status" x="8" y="50">${esc(statusText(state, nodes[key]))}</text>`) +
    `</g>`
  );
}

/** A compound step shows its state right of its summary: keep room for `running · 37/100 · 12.3 s`. */
const COMPOUND_STATUS_WIDTH = 150;

function summaryChars(width: number, compound: boolean): number {
  return Math.max(8, Math.floor((width - 16 - (compound ? COMPOUND_STATUS_WIDTH : 0)) / 6.6));
}

function pathOf(points: { x: number; y: number }[]): string {
  return points.map((p, i) => `${i === 0 ? "M" : "L"}${p.x},${p.y}`).join(" ");
}

/** Past this many steps only those near the visible part of the graph are in the page. */
export const VIRTUAL_STEPS = 300;
/** How far beyond the visible part steps are drawn, in pixels (scrolling shows no gap). */
const OVERSCAN = 600;

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

const meets = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

function edgeBox(points: { x: number; y: number }[]): Box {
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  const x = Math.min(...xs);
  const y = Math.min(...ys);
  return { x, y, width: Math.max(...xs) - x + 1, height: Math.max(...ys) - y + 1 };
}

/**
 * The SVG of a laid-out graph. A small graph is in the page whole; a big one (VIRTUAL_STEPS) has
 * only the steps near the visible part in the page, redrawn as it scrolls: 5,000 steps of SVG
 * text cost Chromium seconds of style and layout at every change, the visible few none.
 */
export class GraphView {
  readonly svg: SVGSVGElement;
  private readonly back: SVGGElement;
  private readonly edgeLayer: SVGGElement;
  private readonly front: SVGGElement;
  private byKey = new Map<string, SVGGElement[]>();
  private nodeOf = new WeakMap<SVGGElement, GraphNode>();
  private selectedId: string | null = null;
  private width = 0;
  private height = 0;
  private virtual = false;
  private all: Layout = { width: 0, height: 0, nodes: [], regions: [], edges: [] };
  private states: Record<string, NodeState> = {};
  private frame = 0;
  /** Where the SVG sits in the scroller's content (measured once a graph is drawn). */
  private offset: { x: number; y: number } | null = null;

  constructor(
    container: HTMLElement,
    private readonly scroller: HTMLElement,
    private readonly onSelect: (node: GraphNode) => void,
  ) {
    this.svg = document.createElementNS(SVG_NS, "svg");
    this.svg.setAttribute("class", "graph");
    this.svg.innerHTML =
      `<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">` +
      `<path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs><g class="back"></g><g class="edges"></g><g class="front"></g>`;
    [this.back, this.edgeLayer, this.front] = Array.from(this.svg.querySelectorAll<SVGGElement>(":scope > g"));
    container.replaceChildren(this.svg);
    const pick = (ev: Event) => {
      const g = (ev.target as Element).closest<SVGGElement>("g.step");
      const node = g ? this.nodeOf.get(g) : undefined;
      if (!g || !node) return;
      this.selectedId = node.id;
      this.svg.querySelector("g.step.selected")?.classList.remove("selected");
      g.classList.add("selected");
      this.onSelect(node);
    };
    this.svg.addEventListener("click", pick);
    this.svg.addEventListener("keydown", (ev) => {
      if ((ev as KeyboardEvent).key === "Enter") pick(ev);
    });
    scroller.addEventListener("scroll", () => this.schedule(), { passive: true });
  }

  /** Empties the view for a graph of `steps` steps (which decides whether it is virtual). */
  reset(steps: number): void {
    this.virtual = steps > VIRTUAL_STEPS;
    this.all = { width: 0, height: 0, nodes: [], regions: [], edges: [] };
    this.back.replaceChildren();
    this.edgeLayer.replaceChildren();
    this.front.replaceChildren();
    this.byKey.clear();
    this.selectedId = null;
    this.offset = null;
    this.width = 0;
    this.height = 0;
    this.resize();
  }

  /** Adds a laid-out part (the whole graph, or one block of a long one). */
  append(part: Layout, nodes: Record<string, NodeState>): void {
    this.states = nodes;
    this.all.nodes.push(...part.nodes);
    this.all.regions.push(...part.regions);
    this.all.edges.push(...part.edges);
    if (!this.virtual) {
      this.grow(part);
      this.draw(part, false);
      return;
    }
    // Off screen, a block only makes the scroll area bigger: nothing to draw, and no layout
    // forced (resizing the SVG at every block of 5,000 steps costs more than drawing them).
    // The box once, not per node: each reading of the scroller's geometry after a resize
    // makes Chromium lay the page out again (5,000 steps: 70 ms of it, and more of layout).
    const box = this.visibleBox();
    const onScreen = part.nodes.some((n) => meets(n, box));
    if (onScreen || this.all.nodes.length === part.nodes.length) {
      this.grow(part);
      this.drawVisible();
    } else {
      this.pendingGrowth = true;
      this.width = Math.max(this.width, part.width);
      this.height = Math.max(this.height, part.height);
    }
  }

  private pendingGrowth = false;

  /** Called when the whole graph is laid out: the SVG gets its final size. */
  finish(): void {
    if (this.pendingGrowth) {
      this.pendingGrowth = false;
      this.resize();
    }
  }

  private grow(part: Layout): void {
    this.width = Math.max(this.width, part.width);
    this.height = Math.max(this.height, part.height);
    this.resize();
  }

  private schedule(): void {
    if (!this.virtual || this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.drawVisible();
    });
  }

  /** The part of the graph on screen, widened by OVERSCAN, in the graph's coordinates. */
  private visibleBox(): Box {
    if (!this.offset) {
      const svgAt = this.svg.getBoundingClientRect();
      const view = this.scroller.getBoundingClientRect();
      this.offset = {
        x: svgAt.left - view.left + this.scroller.scrollLeft,
        y: svgAt.top - view.top + this.scroller.scrollTop,
      };
    }
    return {
      x: this.scroller.scrollLeft - this.offset.x - OVERSCAN,
      y: this.scroller.scrollTop - this.offset.y - OVERSCAN,
      width: this.scroller.clientWidth + 2 * OVERSCAN,
      height: this.scroller.clientHeight + 2 * OVERSCAN,
    };
  }

  private drawVisible(): void {
    const box = this.visibleBox();
    this.draw(
      {
        width: this.all.width,
        height: this.all.height,
        nodes: this.all.nodes.filter((n) => meets(n, box)),
        regions: this.all.regions.filter((r) => meets(r, box)),
        edges: this.all.edges.filter((e) => e.points.length >= 2 && meets(edgeBox(e.points), box)),
      },
      true,
    );
  }

  /** Draws a part: added to what is there, or (`replace`) instead of it. */
  private draw(part: Layout, replace: boolean): void {
    if (replace) {
      this.back.replaceChildren();
      this.edgeLayer.replaceChildren();
      this.front.replaceChildren();
      this.byKey.clear();
    }
    const compound = part.nodes.filter((n) => n.compound);
    const leaves = part.nodes.filter((n) => !n.compound);
    const regions = part.regions
      .map(
        (r) =>
          `<g class="region" transform="translate(${r.x},${r.y})"><rect width="${r.width}" height="${r.height}" rx="4"/>` +
          `<text x="6" y="14">${esc(r.role)}</text></g>`,
      )
      .join("");
    const edges = part.edges
      .filter((e) => e.points.length >= 2)
      .map(
        (e) =>
          `<path class="edge edge-${esc(e.kind)}" d="${pathOf(e.points)}" marker-end="url(#arrow)"/>` +
          (e.label && e.labelAt
            ? `<text class="edge-label" x="${e.labelAt.x}" y="${e.labelAt.y + 11}">${esc(e.label)}</text>`
            : ""),
      )
      .join("");
    // Compound steps and region frames behind the edges, plain steps in front of them.
    this.add(this.back, compound.map((n) => nodeMarkup(n, this.states)).join("") + regions, part);
    this.add(this.edgeLayer, edges, part);
    this.add(this.front, leaves.map((n) => nodeMarkup(n, this.states)).join(""), part);
  }

  /** Parses markup apart from the page, indexes its steps, then attaches it in one move. */
  private add(layer: SVGGElement, markup: string, part: Layout): void {
    const scratch = document.createElementNS(SVG_NS, "g");
    scratch.innerHTML = markup;
    const byId = new Map(part.nodes.map((n) => [n.node.id, n.node]));
    for (const g of scratch.querySelectorAll<SVGGElement>("g.step")) {
      const node = byId.get(g.getAttribute("data-node-id") ?? "");
      if (!node) continue;
      this.nodeOf.set(g, node);
      if (node.id === this.selectedId) g.classList.add("selected");
      const key = g.getAttribute("data-step-key") ?? "";
      const list = this.byKey.get(key);
      if (list) list.push(g);
      else this.byKey.set(key, [g]);
    }
    const moved = document.createDocumentFragment();
    while (scratch.firstChild) moved.appendChild(scratch.firstChild);
    layer.appendChild(moved);
  }

  private resize(): void {
    this.svg.setAttribute("width", String(this.width));
    this.svg.setAttribute("height", String(this.height));
    this.svg.setAttribute("viewBox", `0 0 ${this.width} ${this.height}`);
  }

  /** Repaints the steps whose state may have changed (`all` after a fresh detail). */
  update(nodes: Record<string, NodeState>, keys: Set<string> | "all"): void {
    this.states = nodes;
    const repaint = (key: string, gs: SVGGElement[]) => {
      const state = stateOf(nodes, key === "" ? null : key);
      const text = statusText(state, nodes[key]);
      for (const g of gs) {
        if (g.getAttribute("data-state") !== state) g.setAttribute("data-state", state);
        for (const t of g.querySelectorAll(":scope > text.status")) {
          if (t.textContent !== text) t.textContent = text;
        }
      }
    };
    if (keys === "all") {
      for (const [key, gs] of this.byKey) repaint(key, gs);
    } else {
      for (const key of keys) {
        const gs = this.byKey.get(key);
        if (gs) repaint(key, gs);
      }
    }
  }
}
