// glyphoxa console: the graph page. A small force layout on a canvas that
// stays responsive with thousands of entities: repulsion is computed only
// between entities in neighbouring cells of a grid (O(n) per step instead of
// O(n²)), and the simulation runs in slices of about 6 ms per animation
// frame, so the tab never freezes; it cools down and stops. A large campaign
// opens on the view around its best-connected entity (the server picks it);
// every filter, the focus and the depth are in the page's URL, and
// /graph/ID is an entity's own page.
"use strict";
(function () {
  var canvas = document.getElementById("graph");
  if (!canvas) return;
  var ctx = canvas.getContext("2d");
  var form = document.getElementById("graph-filters");
  var status = document.getElementById("graph-status");
  var list = document.getElementById("entity-list");
  var search = document.getElementById("entity-search");
  var panel = document.getElementById("entity");
  var typesLegend = document.getElementById("graph-types");

  var COLORS = { npc: "#c0392b", player: "#2e86c1", location: "#27ae60", item: "#b7950b", faction: "#8e44ad",
    event: "#d35400", quest: "#16a085", concept: "#7f8c8d" };
  var color = function (t) { return COLORS[t] || "#555"; };

  var nodes = [], edges = [], byId = {}, selected = null, neighbours = {}, focus = null, firstDraw = 0, drawn = false;
  var view = { x: 0, y: 0, k: 1 }, alpha = 0, ticks = 0, running = false, moved = false, follow = false;

  // Seeded placement: the same entity starts in the same place every time.
  function hash(s) { var h = 2166136261; for (var i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return h >>> 0; }

  // query is the form's state without its empty fields: the page's URL
  // and the graph request.
  function query() {
    var q = new URLSearchParams();
    new URLSearchParams(new FormData(form)).forEach(function (v, k) { if (v) q.set(k, v); });
    if (form.elements.depth.value === "all") q.delete("focus");
    return q;
  }

  function load() {
    var q = query();
    status.textContent = "Loading…";
    var t0 = performance.now();
    fetch("/api/graph?" + q.toString(), { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(r.status + " " + (t.trim() || r.statusText)); });
      return r.json();
    }).then(function (d) {
      fetched = performance.now() - t0;
      nodes = d.nodes; edges = d.edges; byId = {}; focus = d.focus || null;
      form.elements.focus.value = focus || "";
      var url = query();
      history.replaceState(null, "", location.pathname + (url.toString() ? "?" + url.toString() : ""));
      var r = 40 * Math.sqrt(nodes.length + 1);
      nodes.forEach(function (n) {
        var h = hash(n.id), a = (h % 3600) / 3600 * 2 * Math.PI, rr = r * Math.sqrt(((h >>> 12) % 1000) / 1000);
        n.x = Math.cos(a) * rr; n.y = Math.sin(a) * rr; n.vx = 0; n.vy = 0; n.deg = 0; byId[n.id] = n;
      });
      edges = edges.filter(function (e) { return byId[e.s] && byId[e.t]; });
      edges.forEach(function (e) { e.a = byId[e.s]; e.b = byId[e.t]; e.a.deg++; e.b.deg++; });
      if (focus && byId[focus]) {
        status.textContent = nodes.length + " entities and " + edges.length + " facts within " + d.depth + " step" + (d.depth > 1 ? "s" : "") +
          " of " + byId[focus].name + " (of " + d.total + " entities; choose “the whole graph” to see all)";
      } else if (focus) {
        status.textContent = "The filters leave out the entity this view is around; change them, or choose “the whole graph”.";
      } else {
        status.textContent = nodes.length + " entities, " + edges.length + " facts";
      }
      selected = null; neighbours = {}; moved = false; follow = false; drawn = false; loadStart = t0;
      legend();
      fillList();
      fit(r);
      alpha = 1; ticks = 0;
      if (focus && byId[focus]) { var f = byId[focus]; f.x = 0; f.y = 0; select(f, false); }
      if (!running) { running = true; requestAnimationFrame(frame); }
    }).catch(function (err) { status.textContent = "Could not load the graph: " + err.message; });
  }

  var loadStart = 0, fetched = 0;

  // legend shows the colour of each type of entity in view.
  function legend() {
    var seen = {};
    nodes.forEach(function (n) { seen[n.type] = true; });
    typesLegend.textContent = "";
    Object.keys(seen).sort().forEach(function (t) {
      var sp = el("span", t, "l-type"); sp.style.setProperty("--c", color(t));
      typesLegend.appendChild(sp); typesLegend.appendChild(document.createTextNode(" "));
    });
  }

  // cellKey packs a grid cell into one number: no string per lookup.
  function cellKey(cx, cy) { return (cx + 32768) * 65536 + (cy + 32768); }

  function step() {
    var cell = 60, grid = new Map(), i, n, m, key, g;
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i]; key = cellKey(Math.floor(n.x / cell), Math.floor(n.y / cell));
      g = grid.get(key); if (!g) { g = []; grid.set(key, g); } g.push(n);
    }
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      var cx = Math.floor(n.x / cell), cy = Math.floor(n.y / cell);
      for (var dx = -1; dx <= 1; dx++) for (var dy = -1; dy <= 1; dy++) {
        g = grid.get(cellKey(cx + dx, cy + dy));
        if (!g) continue;
        for (var j = 0; j < g.length; j++) {
          m = g[j]; if (m === n) continue;
          var ddx = n.x - m.x, ddy = n.y - m.y, d2 = ddx * ddx + ddy * ddy + 0.01;
          if (d2 > cell * cell) continue;
          var f = 900 / d2;
          n.vx += ddx * f * 0.05; n.vy += ddy * f * 0.05;
        }
      }
      n.vx -= n.x * 0.002; n.vy -= n.y * 0.002; // gravity to the centre
    }
    for (i = 0; i < edges.length; i++) {
      var e = edges[i], ex = e.b.x - e.a.x, ey = e.b.y - e.a.y, dist = Math.sqrt(ex * ex + ey * ey) || 1;
      var s = (dist - 50) / dist * 0.04 / Math.max(1, Math.min(e.a.deg, e.b.deg) / 4);
      e.a.vx += ex * s; e.a.vy += ey * s; e.b.vx -= ex * s; e.b.vy -= ey * s;
    }
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      n.vx = Math.max(-20, Math.min(20, n.vx)) * 0.6; n.vy = Math.max(-20, Math.min(20, n.vy)) * 0.6;
      n.x += n.vx * alpha; n.y += n.vy * alpha;
    }
    alpha *= 0.985; ticks++;
  }

  function frame() {
    var t0 = performance.now();
    while (alpha > 0.02 && performance.now() - t0 < 6) step();
    if (follow && selected) { view.x = selected.x; view.y = selected.y; }
    else if (!moved && (alpha <= 0.02 || ticks % 20 === 0)) fitBounds();
    draw();
    if (!drawn && nodes.length) { drawn = true; firstDraw = performance.now() - loadStart; }
    if (alpha > 0.02) requestAnimationFrame(frame); else running = false;
  }

  // fitBounds shows every entity, unless the user has panned or zoomed.
  function fitBounds() {
    if (!nodes.length) return;
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    nodes.forEach(function (n) { x0 = Math.min(x0, n.x); y0 = Math.min(y0, n.y); x1 = Math.max(x1, n.x); y1 = Math.max(y1, n.y); });
    view.x = (x0 + x1) / 2; view.y = (y0 + y1) / 2;
    view.k = Math.min((canvas.clientWidth - 120) / Math.max(1, x1 - x0), (canvas.clientHeight - 40) / Math.max(1, y1 - y0), 3);
  }

  function resize() {
    var dpr = window.devicePixelRatio || 1, w = canvas.clientWidth, h = canvas.clientHeight;
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw();
  }

  function fit(r) { view.k = Math.min(canvas.clientWidth, canvas.clientHeight) / (2.4 * r + 100); view.x = 0; view.y = 0; }
  function toScreen(n) { return [canvas.clientWidth / 2 + (n.x - view.x) * view.k, canvas.clientHeight / 2 + (n.y - view.y) * view.k]; }

  // Edge styles; edges of one style are stroked as one path, which keeps a
  // frame of thousands of edges cheap.
  var STYLES = {
    secret: { color: "#d0021b", dash: [6, 3], width: 1.5 }, pending: { color: "#e0a526", dash: [2, 3], width: 1.5 },
    retired: { color: "#bbb", dash: [], width: 1 }, hot: { color: "#222", dash: [], width: 2 },
    plain: { color: "rgba(80,80,80,0.25)", dash: [], width: 1 },
  };
  function edgeStyle(e) {
    if (e.secret) return "secret";
    if (e.status === "pending") return "pending";
    if (e.status === "retired") return "retired";
    return selected && (e.a === selected || e.b === selected) ? "hot" : "plain";
  }

  function draw() {
    var w = canvas.clientWidth, h = canvas.clientHeight, i, p, n;
    ctx.clearRect(0, 0, w, h);
    var cw = canvas.clientWidth / 2, ch = canvas.clientHeight / 2, k = view.k, vx = view.x, vy = view.y;
    ["plain", "retired", "pending", "secret", "hot"].forEach(function (name) {
      var st = STYLES[name];
      ctx.strokeStyle = st.color; ctx.setLineDash(st.dash); ctx.lineWidth = st.width;
      ctx.beginPath();
      for (var j = 0; j < edges.length; j++) {
        var e = edges[j];
        if (edgeStyle(e) !== name) continue;
        ctx.moveTo(cw + (e.a.x - vx) * k, ch + (e.a.y - vy) * k);
        ctx.lineTo(cw + (e.b.x - vx) * k, ch + (e.b.y - vy) * k);
      }
      ctx.stroke();
    });
    ctx.setLineDash([]);
    // Relation names: on every fact when few are in view, else on the
    // picked entity's.
    var allLabels = edges.length <= 120 || view.k > 2;
    ctx.font = "10px system-ui, sans-serif"; ctx.fillStyle = "#555"; ctx.textAlign = "center";
    for (i = 0; i < edges.length; i++) {
      var ed = edges[i];
      if (!(allLabels || (selected && (ed.a === selected || ed.b === selected)))) continue;
      var ax = cw + (ed.a.x - vx) * k, ay = ch + (ed.a.y - vy) * k, bx = cw + (ed.b.x - vx) * k, by = ch + (ed.b.y - vy) * k;
      var mx = (ax + bx) / 2, my = (ay + by) / 2;
      if (mx < 0 || my < 0 || mx > w || my > h || Math.abs(bx - ax) + Math.abs(by - ay) < 40) continue;
      ctx.fillText(ed.type.toLowerCase().replace(/_/g, " "), mx, my - 2);
    }
    ctx.textAlign = "start";
    // Entities, one path per colour.
    var byColor = {};
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i]; p = toScreen(n);
      if (p[0] < -20 || p[1] < -20 || p[0] > w + 20 || p[1] > h + 20) continue;
      var c = color(n.type);
      (byColor[c] || (byColor[c] = [])).push(n, p[0], p[1]);
    }
    Object.keys(byColor).forEach(function (c) {
      var list = byColor[c];
      ctx.fillStyle = c; ctx.beginPath();
      for (var j = 0; j < list.length; j += 3) {
        var r = Math.min(10, 3 + Math.sqrt(list[j].deg));
        ctx.moveTo(list[j + 1] + r, list[j + 2]); ctx.arc(list[j + 1], list[j + 2], r, 0, 2 * Math.PI);
      }
      ctx.fill();
    });
    var labels = nodes.length <= 150 || view.k > 1.5;
    ctx.font = "12px system-ui, sans-serif"; ctx.fillStyle = "#111";
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      if (!(labels || n === selected || neighbours[n.id])) continue;
      p = toScreen(n);
      if (p[0] < -20 || p[1] < -20 || p[0] > w + 20 || p[1] > h + 20) continue;
      ctx.fillText(n.name, p[0] + Math.min(10, 3 + Math.sqrt(n.deg)) + 2, p[1] + 4);
    }
    if (selected) {
      p = toScreen(selected);
      ctx.strokeStyle = "#000"; ctx.lineWidth = 2; ctx.beginPath();
      ctx.arc(p[0], p[1], Math.min(10, 3 + Math.sqrt(selected.deg)) + 3, 0, 2 * Math.PI); ctx.stroke();
    }
  }

  // fillList lists the entities whose name or alias holds the search, the
  // first 100 by name. The whole graph has them all in view; around an
  // entity, the server finds them in the whole filtered campaign
  // (/api/graph/find: a large one's entities are not sent with each view),
  // and one outside the view is shown by moving the view around it.
  // listing settles when the newest list is shown: Enter picks its first.
  var listing = Promise.resolve(), finds = 0;
  function fillList() {
    var q = search.value.trim().toLowerCase(), seq = ++finds;
    if (!focus) {
      var found = [];
      for (var i = 0; i < nodes.length && found.length <= 100; i++) if (holds(nodes[i], q)) found.push(nodes[i]);
      showList(found.slice(0, 100), found.length > 100, q);
      listing = Promise.resolve();
      return;
    }
    var p = query();
    p.delete("focus"); p.delete("depth"); p.set("q", q);
    listing = fetch("/api/graph/find?" + p.toString(), { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(r.status + " " + (t.trim() || r.statusText)); });
      return r.json();
    }).then(function (d) {
      if (seq === finds) showList(d.nodes, d.more, q);
    }).catch(function (err) {
      if (seq === finds) { list.textContent = ""; list.appendChild(el("li", "Could not search: " + err.message, "prov")); }
    });
  }

  function holds(n, q) {
    return !q || n.name.toLowerCase().indexOf(q) >= 0 || (n.aliases || []).some(function (a) { return a.toLowerCase().indexOf(q) >= 0; });
  }

  function showList(found, more, q) {
    list.textContent = "";
    found.forEach(function (n) {
      var via = q && n.name.toLowerCase().indexOf(q) < 0 ? (n.aliases || []).filter(function (a) { return a.toLowerCase().indexOf(q) >= 0; })[0] : "";
      var li = document.createElement("li"), b = document.createElement("button");
      b.type = "button"; b.textContent = n.name + " (" + n.type + ")" + (via ? " — also called " + via : ""); b.dataset.id = n.id;
      b.addEventListener("click", function () {
        if (byId[this.dataset.id]) select(byId[this.dataset.id], true); else refocus(this.dataset.id);
      });
      li.appendChild(b); list.appendChild(li);
    });
    if (more) list.appendChild(el("li", "Showing the first 100; type to narrow.", "prov"));
  }

  // refocus shows the view around an entity.
  function refocus(id) {
    form.elements.focus.value = id;
    if (form.elements.depth.value === "all") form.elements.depth.value = "";
    load();
  }

  function select(n, center) {
    selected = n; neighbours = {};
    if (!n) { draw(); return; }
    edges.forEach(function (e) { if (e.a === n) neighbours[e.b.id] = true; if (e.b === n) neighbours[e.a.id] = true; });
    follow = !!center;
    if (center) { view.x = n.x; view.y = n.y; view.k = Math.max(view.k, 1.2); moved = true; }
    draw();
    panel.textContent = "Loading " + n.name + "…";
    fetch("/api/entity/" + encodeURIComponent(n.id), { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error(r.status + " " + r.statusText);
      return r.json();
    }).then(showEntity).catch(function (err) { panel.textContent = "Could not load " + n.name + ": " + err.message; });
  }

  function el(tag, text, cls) { var x = document.createElement(tag); if (text != null) x.textContent = text; if (cls) x.className = cls; return x; }

  function showEntity(d) {
    panel.textContent = "";
    var h = el("h2", d.name + " "); h.appendChild(el("span", d.type, "tag")); panel.appendChild(h);
    var nav = el("p"), own = el("a", "Its page");
    own.href = "/graph/" + encodeURIComponent(d.id);
    nav.appendChild(own);
    if (focus !== d.id) {
      var around = el("button", "Show the graph around " + d.name); around.type = "button";
      around.addEventListener("click", function () { refocus(d.id); });
      nav.appendChild(document.createTextNode(" · ")); nav.appendChild(around);
    }
    panel.appendChild(nav);
    if (d.aliases.length) panel.appendChild(el("p", "Also called: " + d.aliases.join(", ")));
    var dl = el("dl", null, "attrs");
    d.attributes.forEach(function (a) {
      var dt = el("dt", a.key); if (a.secret) { dt.appendChild(document.createTextNode(" ")); dt.appendChild(el("span", "secret", "tag secret")); }
      dl.appendChild(dt); dl.appendChild(el("dd", a.value));
    });
    panel.appendChild(dl);
    panel.appendChild(el("h3", "Facts over time"));
    var ul = el("ul", null, "facts");
    if (!d.facts.length) ul.appendChild(el("li", "No facts."));
    d.facts.forEach(function (f) {
      var li = el("li");
      li.appendChild(el("span", f.session ? f.session : "—", "tag"));
      li.appendChild(document.createTextNode(" #" + f.id + " " + f.source + " —" + f.type + "→ " + f.target + " "));
      li.appendChild(el("span", f.status + (f.until ? " until " + f.until : ""), "tag"));
      if (f.secret) li.appendChild(el("span", "secret", "tag secret"));
      li.title = f.provenance;
      ul.appendChild(li);
    });
    panel.appendChild(ul);
    panel.appendChild(el("h3", "Mentions"));
    var ml = el("ul", null, "lines");
    if (!d.mentions.length) ml.appendChild(el("li", "Never mentioned at the table."));
    d.mentions.forEach(function (m) {
      var li = el("li"), a = el("a", m.session + " " + m.at);
      a.href = "/sessions/" + encodeURIComponent(m.session) + "?line=" + m.line + "#line-" + m.line;
      li.appendChild(a); li.appendChild(document.createTextNode(" " + m.speaker + ": " + m.text));
      ml.appendChild(li);
    });
    panel.appendChild(ml);
  }

  // Pointer: drag to pan, wheel to zoom, click to pick.
  var drag = null;
  canvas.addEventListener("pointerdown", function (ev) { drag = { x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y, moved: false }; canvas.setPointerCapture(ev.pointerId); });
  canvas.addEventListener("pointermove", function (ev) {
    if (!drag) return;
    var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    view.x = drag.vx - dx / view.k; view.y = drag.vy - dy / view.k; moved = drag.moved || moved; if (drag.moved) follow = false; draw();
  });
  canvas.addEventListener("pointerup", function (ev) {
    var d = drag; drag = null;
    if (!d || d.moved) return;
    var rect = canvas.getBoundingClientRect(), mx = ev.clientX - rect.left, my = ev.clientY - rect.top, best = null, bd = 15 * 15;
    nodes.forEach(function (n) { var p = toScreen(n), dd = (p[0] - mx) * (p[0] - mx) + (p[1] - my) * (p[1] - my); if (dd < bd) { bd = dd; best = n; } });
    select(best, false);
  });
  canvas.addEventListener("wheel", function (ev) { ev.preventDefault(); moved = true; follow = false; view.k *= ev.deltaY < 0 ? 1.15 : 1 / 1.15; draw(); }, { passive: false });
  canvas.addEventListener("keydown", function (ev) {
    var s = 60 / view.k, used = true;
    switch (ev.key) {
      case "ArrowLeft": view.x -= s; break; case "ArrowRight": view.x += s; break;
      case "ArrowUp": view.y -= s; break; case "ArrowDown": view.y += s; break;
      case "+": case "=": view.k *= 1.2; break; case "-": view.k /= 1.2; break;
      case "Escape": select(null); break;
      default: used = false;
    }
    if (used) { ev.preventDefault(); moved = true; follow = ev.key.indexOf("Arrow") < 0 && follow; draw(); }
  });
  search.addEventListener("input", fillList);
  search.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter") { ev.preventDefault(); listing.then(function () { var b = list.querySelector("button"); if (b) b.click(); }); }
  });
  form.addEventListener("submit", function (ev) { ev.preventDefault(); load(); });
  window.addEventListener("resize", resize);

  var params = new URLSearchParams(location.search);
  ["type", "npc", "session", "depth", "focus"].forEach(function (k) { var f = form.elements[k]; if (f && params.get(k)) f.value = params.get(k); });
  if (form.dataset.focus) form.elements.focus.value = form.dataset.focus;
  resize();
  load();
  window.glyphoxaGraph = { nodes: function () { return nodes.length; }, settled: function () { return !running; }, ticks: function () { return ticks; },
    firstDraw: function () { return firstDraw; }, fetched: function () { return fetched; }, focus: function () { return focus; },
    shows: function (id) { return !!byId[id]; } };
})();
