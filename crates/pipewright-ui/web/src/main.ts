// Client-side routing: `/` is the runs page, `/runs/RUN_ID` a run (the server answers every
// non-API path with index.html).
import "./style.css";
import type { Navigate } from "./dom";
import { mountRunPage } from "./run-page";
import { mountRunsPage } from "./runs-page";
import { stateCss } from "./state-colour";

const style = document.createElement("style");
style.textContent = stateCss();
document.head.appendChild(style);

const root = document.getElementById("app") as HTMLElement;
let dispose: () => void = () => {};

const navigate: Navigate = (path) => {
  history.pushState(null, "", path);
  route();
};

function route() {
  dispose();
  root.replaceChildren();
  const m = /^\/runs\/([^/]+)\/?$/.exec(location.pathname);
  if (m) {
    const id = decodeURIComponent(m[1]);
    document.title = `run ${id} · pipewright`;
    dispose = mountRunPage(root, id, navigate);
  } else {
    document.title = "runs · pipewright";
    dispose = mountRunsPage(root, navigate);
  }
}

document.addEventListener("click", (ev) => {
  const a = (ev.target as Element).closest?.("a[data-nav]");
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
  ev.preventDefault();
  navigate(a.getAttribute("href") ?? "/");
});
window.addEventListener("popstate", route);
route();
