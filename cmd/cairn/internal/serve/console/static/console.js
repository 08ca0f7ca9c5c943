// The console's one script: the live tail of the change feed and its
// chart of writes per minute. Pages without a tail have no use for it.
"use strict";

(function () {
  const tail = document.getElementById("tail");
  if (!tail) return;
  const rows = document.getElementById("tail-rows");
  const status = document.getElementById("tail-status");
  const chart = document.getElementById("tail-chart");
  const src = tail.dataset.src;
  const keep = 200;      // rows kept in the table
  const minutes = 30;    // minutes the chart shows
  const counts = new Map(); // minute (ms since epoch / 60000) -> writes seen

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }

  function show(ev, live) {
    const tr = document.createElement("tr");
    if (live) tr.className = "fresh";
    const p = ev.after || ev.before;
    cell(tr, String(ev.commit_version));
    cell(tr, ev.kind);
    cell(tr, ev.workbench_id);
    cell(tr, ev.path === null ? "—" : ev.path);
    cell(tr, p ? String(p.generation) : "—");
    cell(tr, ev.path !== null && ev.after ? size(ev.after.logical_size) : "—");
    cell(tr, live ? new Date().toLocaleTimeString() : "before this page");
    rows.insertBefore(tr, rows.firstChild);
    while (rows.children.length > keep) rows.removeChild(rows.lastChild);
    if (live) setTimeout(function () { tr.className = ""; }, 3000);
  }

  function size(n) {
    if (n < 1024) return n + " B";
    if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
    return (n / 1048576).toFixed(1) + " MiB";
  }

  function count(ev) {
    if (ev.path === null) return; // a whole-workbench event, not a write
    const m = Math.floor(Date.now() / 60000);
    counts.set(m, (counts.get(m) || 0) + 1);
  }

  const svgNS = "http://www.w3.org/2000/svg";
  function draw() {
    const now = Math.floor(Date.now() / 60000);
    let most = 1;
    for (let i = 0; i < minutes; i++) most = Math.max(most, counts.get(now - i) || 0);
    while (chart.firstChild) chart.removeChild(chart.firstChild);
    const w = 600 / minutes;
    for (let i = 0; i < minutes; i++) {
      const m = now - (minutes - 1 - i);
      const n = counts.get(m) || 0;
      const h = Math.round((n / most) * 70);
      const r = document.createElementNS(svgNS, "rect");
      r.setAttribute("x", String(i * w + 1));
      r.setAttribute("y", String(78 - h));
      r.setAttribute("width", String(w - 2));
      r.setAttribute("height", String(h));
      const t = document.createElementNS(svgNS, "title");
      t.textContent = n + " writes";
      r.appendChild(t);
      chart.appendChild(r);
    }
    const label = document.createElementNS(svgNS, "text");
    label.setAttribute("x", "4");
    label.setAttribute("y", "88");
    label.textContent = "-" + minutes + " min";
    chart.appendChild(label);
    const top = document.createElementNS(svgNS, "text");
    top.setAttribute("x", "4");
    top.setAttribute("y", "9");
    top.textContent = most + "/min";
    chart.appendChild(top);
    const end = document.createElementNS(svgNS, "text");
    end.setAttribute("x", "575");
    end.setAttribute("y", "88");
    end.textContent = "now";
    chart.appendChild(end);
  }

  let source = null;
  function open() {
    source = new EventSource(src);
    source.addEventListener("open", function () { status.textContent = "live"; });
    source.addEventListener("backlog", function (e) { show(JSON.parse(e.data), false); });
    source.addEventListener("change", function (e) {
      const ev = JSON.parse(e.data);
      show(ev, true);
      count(ev);
      draw();
    });
    // A failure (a cursor that no longer fits, say) starts afresh,
    // without the last event id the browser would send back.
    source.addEventListener("failure", function () {
      status.textContent = "reconnecting…";
      source.close();
      setTimeout(open, 2000);
    });
    source.addEventListener("error", function () { status.textContent = "reconnecting…"; });
  }
  draw();
  setInterval(draw, 30000);
  open();
})();
