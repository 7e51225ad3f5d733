// glyphoxa console: small progressive enhancements. Every page works without
// this file; it adds the raw-text toggle, focus on a linked transcript line,
// name suggestions as the DM types, and the Live page's refresh.
"use strict";
(function () {
  var raw = document.getElementById("show-raw");
  if (raw) {
    var tl = document.getElementById("timeline");
    raw.addEventListener("change", function () { tl.classList.toggle("with-raw", raw.checked); });
  }
  function focusLine() {
    var id = location.hash.slice(1);
    if (!id || id.indexOf("line-") !== 0) return;
    var el = document.getElementById(id);
    if (!el) return;
    document.querySelectorAll(".timeline .target").forEach(function (x) { x.classList.remove("target"); });
    el.classList.add("target");
    el.focus({ preventScroll: false });
  }
  window.addEventListener("hashchange", focusLine);
  focusLine();

  // Name fields (data-suggest="name" or "id"): as the DM types, their
  // datalist is filled with the entities named like it (/api/names), which a
  // large campaign has too many of to send with the page. A field keeps the
  // page's own suggestions until something is typed.
  document.querySelectorAll("input[data-suggest]").forEach(function (input) {
    var list = document.getElementById(input.getAttribute("list"));
    if (!list) return;
    var timer = 0, asked = "";
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var q = input.value.trim();
        if (!q || q === asked) return;
        asked = q;
        fetch("/api/names?q=" + encodeURIComponent(q), { credentials: "same-origin" }).then(function (r) {
          return r.ok ? r.json() : null;
        }).then(function (names) {
          if (!names || asked !== q) return;
          list.textContent = "";
          names.forEach(function (n) {
            if (n.id === input.dataset.except) return;
            var o = document.createElement("option");
            if (input.dataset.suggest === "id") { o.value = n.id; o.textContent = n.name + " (" + n.type + ")"; }
            else { o.value = n.name; o.textContent = n.type; }
            list.appendChild(o);
          });
        }).catch(function () {});
      }, 150);
    });
  });

  var live = document.getElementById("live");
  if (live) {
    var fresh = live.dataset.fresh || "10";
    var text = function (id, v) { var el = document.getElementById(id); if (el) el.textContent = v; };
    var refresh = function () {
      fetch("/api/live", { credentials: "same-origin" }).then(function (r) { return r.ok ? r.json() : null; }).then(function (j) {
        if (!j) return;
        var s = j.status, f = j.feed;
        // A new continuity card (or one settled elsewhere): show it.
        if (s.cards && String(s.cards.length) !== live.dataset.cards) { location.reload(); return; }
        text("live-feed", f.connected ? "Live feed: " + f.source + "." +
          (f.problem ? " The live feed of other processes cannot be read: " + f.problem : "") :
          f.problem ? "The live feed cannot be read: " + f.problem :
          "No live feed: no glyphoxa serve or demo on this database has reported for this campaign in the last " + fresh +
          " seconds. A table started on the same database shows here within a few seconds.");
        text("live-session", s.running ? "Session " + s.session_id + " is running." : (f.connected ? "No session is running." :
          f.problem ? "Unknown: the live feed cannot be read." : "Unknown: no table is reporting."));
        text("live-speaking", s.speaking.length ? s.speaking.join(", ") : "nobody");
        text("live-memory", s.memory_degraded ? "degraded: the database cannot be reached (a running session keeps its lines in the spool)" :
          (f.connected ? "healthy" : "this console reaches the database; no table reports its own"));
        text("live-pending", String(s.pending_writes));
        text("live-spool", String(s.spool_bytes));
        var body = document.querySelector("#live-turns tbody");
        body.textContent = "";
        if (!s.turns.length) {
          var tr = body.insertRow(); var td = tr.insertCell(); td.colSpan = 3; td.textContent = f.connected ? "No NPC turns yet." : "No table is reporting its turns.";
        }
        s.turns.forEach(function (t) {
          var tr = body.insertRow();
          tr.insertCell().textContent = new Date(t.at).toISOString().slice(11, 19);
          tr.insertCell().textContent = t.npc;
          var c = tr.insertCell();
          t.stages.forEach(function (st) {
            var sp = document.createElement("span"); sp.className = "tag"; sp.textContent = st.name + " " + st.ms + " ms";
            c.appendChild(sp); c.appendChild(document.createTextNode(" "));
          });
        });
      }).catch(function () {});
    };
    setInterval(refresh, 2000);
  }
})();
