// Draws a laid-out graph as SVG and keeps each step's colour, fan-out count and duration in step
// with the page model. Colours come from stateCss() (state-colour.ts) through `data-state`.
import { esc, truncate } from "./dom";
import { formatDuration } from "./format";
import type { Layout, LaidNode } from "./graph-layout";
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
    `<text class="summary" x="8" y="33">${esc(truncate(n.summary ?? "", Math.floor((width - 16) / 6.6)))}</text>` +
    (l.compound
      ? `<text class="status" x="${width - 8}" y="33" text-anchor="end">${esc(statusText(state, nodes[key]))}</text>`
      : `<text class="status" x="8" y="50">${esc(statusText(state, nodes[key]))}</text>`) +
    `</g>`
  );
}

function pathOf(points: { x: number; y: number }[]): string {
  return points.map((p, i) => `${i === 0 ? "M" : "L"}${p.x},${p.y}`).join(" ");
}

export class GraphView {
  readonly svg: SVGSVGElement;
  private readonly back: SVGGElement;
  private readonly edges: SVGGElement;
  private readonly front: SVGGElement;
  private byKey = new Map<string, SVGGElement[]>();
  private selected: SVGGElement | null = null;
  private width = 0;
  private height = 0;

  constructor(
    container: HTMLElement,
    private readonly onSelect: (node: GraphNode) => void,
  ) {
    this.svg = document.createElementNS(SVG_NS, "svg");
    this.svg.setAttribute("class", "graph");
    this.svg.innerHTML =
      `<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">` +
      `<path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs><g class="back"></g><g class="edges"></g><g class="front"></g>`;
    [this.back, this.edges, this.front] = Array.from(this.svg.querySelectorAll<SVGGElement>(":scope > g"));
    container.replaceChildren(this.svg);
    const pick = (ev: Event) => {
      const g = (ev.target as Element).closest<SVGGElement>("g.step");
      if (!g) return;
      const node = this.nodeOf.get(g);
      if (node) {
        this.select(g);
        this.onSelect(node);
      }
    };
    this.svg.addEventListener("click", pick);
    this.svg.addEventListener("keydown", (ev) => {
      if ((ev as KeyboardEvent).key === "Enter") pick(ev);
    });
  }

  private nodeOf = new WeakMap<SVGGElement, GraphNode>();

  clear(): void {
    this.back.replaceChildren();
    this.edges.replaceChildren();
    this.front.replaceChildren();
    this.byKey.clear();
    this.selected = null;
    this.width = 0;
    this.height = 0;
    this.resize();
  }

  /** Adds a laid-out part (the whole graph, or one block of a long one). */
  append(part: Layout, nodes: Record<string, NodeState>): void {
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
    this.add(this.back, compound.map((n) => nodeMarkup(n, nodes)).join("") + regions, part);
    this.add(this.edges, edges, part);
    this.add(this.front, leaves.map((n) => nodeMarkup(n, nodes)).join(""), part);
    this.width = Math.max(this.width, part.width);
    this.height = Math.max(this.height, part.height);
    this.resize();
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

  private select(g: SVGGElement): void {
    this.selected?.classList.remove("selected");
    this.selected = g;
    g.classList.add("selected");
  }

  /** The step element of a graph node id (the e2e tests and the detail panel find it by key). */
  elementsFor(key: string): SVGGElement[] {
    return this.byKey.get(key) ?? [];
  }
}
