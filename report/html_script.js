/* html_script.js - the HTML report's timeline and filters (report/html.c
 * embeds it). The page is complete without it; this draws, from the data
 * block, one timeline per process: a lane per host thread and per stream, the
 * operations before the findings in the model's order (not wall time), and
 * each finding as a line between its two sides. Selecting a finding scrolls
 * its timeline to show both sides, or, where they are farther apart than the
 * view is wide, its own side and a marker at the edge towards the other.
 * Labels are drawn over the lines on a background of their own, so no line
 * crosses one. */
"use strict";
(function () {
  var SVGNS = "http://www.w3.org/2000/svg";
  var HOST_KINDS = { stream_sync: 1, context_sync: 1, event_sync: 1, allocation: 1, advice: 1 };
  /* The host's marks drawn as boxes; the other host kinds are thin bars. */
  var HOST_BOXES = { allocation: 1, advice: 1 };
  var LABEL_W = 220, COL_W = 66, LANE_H = 64, TOP = 26, GAP_W = 22;
  var data = JSON.parse(document.getElementById("ac-data").textContent || "[]");
  var state = { rule: "", pid: "", suppressed: true, selected: -1 };

  function el(name, attrs, parent, text) {
    var e = document.createElementNS(SVGNS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(name, attrs, parent, text) {
    var e = document.createElement(name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function shortApi(api) {
    return (api || "").replace(/^cu/, "").replace(/_v2$|_ptsz$|_ptds$/, "");
  }
  function flagsName(f) {
    return { 1: "GLOBAL", 2: "HOST", 4: "SINGLE" }[f] || "flags " + f;
  }
  function opKind(op) {
    if (op.kind === "work" && /Memcpy|Memset|Prefetch/.test(op.api || "")) return "copy";
    return op.kind;
  }
  function opLabel(op) {
    if (op.kernel) return op.kernel;
    if (op.kind === "attach") return flagsName(op.flags);
    if (op.kind === "stream_sync") return "sync #" + op.stream;
    if (op.kind === "context_sync") return "ctx sync";
    if (op.kind === "event_record") return "record ev";
    if (op.kind === "event_wait") return "wait ev";
    if (op.kind === "event_sync") return "sync ev";
    if (op.kind === "allocation") return "alloc #" + op.allocation;
    if (op.kind === "advice") return "advise #" + op.allocation;
    return shortApi(op.api).replace(/Async$/, "") || op.kind;
  }
  function opTitle(op) {
    var t = "@" + op.tick + " " + (op.api || op.kind.replace("_", " "));
    if (op.kernel) t += "\nkernel " + op.kernel;
    if (op.kind === "attach") t += "\n" + op.address + " CU_MEM_ATTACH_" + flagsName(op.flags);
    if (op.kind === "allocation") t += "\nallocation #" + op.allocation + " at " + op.address;
    if (op.kind === "advice")
      t += "\n" + op.advice + " for allocation #" + op.allocation + " at " + op.address;
    if (/^event/.test(op.kind)) t += "\nevent " + op.address;
    if (op.seq) t += "\noperation " + op.seq + " of its stream";
    return t + "\nthread " + op.thread;
  }

  /* One process's lanes, operations and finding sides. */
  function model(pid) {
    var m = { lanes: {}, ops: {}, ticks: {}, findings: [] };
    function lane(key, label, sub, order) {
      if (!m.lanes[key]) m.lanes[key] = { key: key, label: label, sub: sub, order: order };
      return m.lanes[key];
    }
    function threadLane(t) { return lane("t" + t, "thread " + t, "host", t); }
    /* Where a stream was made: the first frame with a source line, else the
     * first frame, as "file:line" or "module+offset". */
    function madeAt(created) {
      var frames = created.stack || [], fr = frames.filter(function (x) { return x.file; })[0];
      fr = fr || frames[0];
      if (!fr) return created.api;
      var where = fr.file ? fr.file.replace(/^.*\//, "") + ":" + fr.line
                          : String(fr.module).replace(/^.*\//, "") + "+" + fr.offset;
      return "made at " + where;
    }
    function add(laneKey, op) {
      m.ops[laneKey + "@" + op.tick] = { lane: laneKey, op: op };
      m.ticks[op.tick] = 1;
    }
    data.forEach(function (f) {
      if (String(f.pid) !== String(pid) || !f.timeline) return;
      var tl = f.timeline, byRole = {};
      tl.streams.forEach(function (s) {
        byRole[s.role] = s;
        var sub = /^CU_STREAM|NULL/.test(s.kind) ? s.kind : s.kind.replace(/^stream made by /, "") +
                  " " + s.handle;
        var l = lane("s" + s.stream, "stream #" + s.stream, sub, 1e6 + s.stream);
        if (s.created && !l.made) l.made = madeAt(s.created);
        l.shown = Math.max(l.shown || 0, s.shown);
        l.recorded = Math.max(l.recorded || 0, s.recorded);
        l.note = "last " + l.shown + " of " + l.recorded + " operations";
        s.operations.forEach(function (op) {
          if (HOST_KINDS[op.kind]) {
            op.stream = s.stream;
            threadLane(op.thread);
            add("t" + op.thread, op);
          } else {
            add(l.key, op);
          }
        });
      });
      tl.host.operations.forEach(function (op) { threadLane(op.thread); add("t" + op.thread, op); });
      /* This side: the CPU access, or the call on its stream. */
      var a = null, b = null, call = byRole.call;
      if (f.access) { /* after the operations it was judged against */
        threadLane(f.thread);
        a = { lane: "t" + f.thread, tick: tl.tick + 0.5, access: true };
      } else if (call) {
        /* The call is recorded at the tick it was judged (or just after); a
         * call the driver refused or the guard stopped never was. */
        var ops = call.operations, last = ops[ops.length - 1];
        var made = (!f.outcome || (f.outcome === "returned" && !f.result)) && last &&
                   last.api === f.api && last.thread === f.thread;
        a = { lane: "s" + call.stream, tick: made ? last.tick : tl.tick + 0.5, refused: !made };
      } else {
        threadLane(f.thread);
        a = { lane: "t" + f.thread, tick: tl.tick + 0.5, refused: true };
      }
      /* The other side: the busy stream's latest work before it, else the allocation. */
      var busy = byRole.busy || (call && f.busy === call.stream ? call : null);
      if (busy) {
        /* A device access conflicts with the attach that gave the memory to the
         * busy stream; a CPU access or a re-attach with its latest work. */
        var device = /^AC3/.test(f.rule);
        var before = busy.operations.filter(function (op) {
          return op.tick < a.tick && !HOST_KINDS[op.kind] && !/^event/.test(op.kind);
        });
        var attaches = before.filter(function (op) { return op.kind === "attach"; });
        if (device && attaches.length) before = attaches;
        if (before.length) b = { lane: "s" + busy.stream, tick: before[before.length - 1].tick };
      }
      if (!b && tl.allocation_tick && f.alloc_thread) {
        threadLane(f.alloc_thread);
        b = { lane: "t" + f.alloc_thread, tick: tl.allocation_tick };
      }
      m.ticks[a.tick] = 1;
      m.findings.push({ f: f, a: a, b: b });
    });
    return m;
  }

  function draw(pid, parent) {
    var m = model(pid);
    var lanes = Object.keys(m.lanes).map(function (k) { return m.lanes[k]; });
    lanes.sort(function (x, y) { return x.order - y.order; });
    lanes.forEach(function (l, i) { l.y = TOP + i * LANE_H + LANE_H / 2; l.i = i; });
    var ticks = Object.keys(m.ticks).map(Number).sort(function (x, y) { return x - y; });
    var xOf = {}, x = COL_W / 2 + 8, gaps = [];
    ticks.forEach(function (t, i) {
      if (i && t > ticks[i - 1] + 1) { gaps.push(x - COL_W / 2 + GAP_W / 2 - 4); x += GAP_W; }
      xOf[t] = x;
      x += COL_W;
    });
    var width = x + 16, height = TOP + lanes.length * LANE_H + 8;
    var box = html("div", { "class": "process", "data-pid": pid }, parent);
    html("h3", {}, box, "process " + pid);
    /* The lanes' names stay put while the operations scroll beside them. */
    var frame = html("div", { "class": "tl-frame" }, box);
    var names = el("svg", { "class": "tl names", width: LABEL_W, height: height }, frame);
    var scroll = html("div", { "class": "scroll" }, frame);
    var svg = el("svg", { "class": "tl", width: width, height: height, role: "img",
                          "aria-label": "timeline of process " + pid }, scroll);
    /* Markers at the edges, towards a side of the selected finding out of view. */
    ["left", "right"].forEach(function (side) {
      var m = html("button", { "class": "offscreen " + side, type: "button", hidden: "hidden" },
                   frame);
      m.addEventListener("click", function () {
        scroll.scrollLeft = Number(m.dataset.x) - scroll.clientWidth / 2;
        m.hidden = true;
      });
    });
    lanes.forEach(function (l) {
      [names, svg].forEach(function (target) {
        el("rect", { "class": "lane-bg" + (l.i % 2 ? " alt" : ""), x: 0, y: l.y - LANE_H / 2,
                     width: target === svg ? width : LABEL_W, height: LANE_H }, target);
      });
      var g = el("g", { "class": "lane", "data-lane": l.key }, names);
      el("line", { "class": "axis", x1: 0, x2: width, y1: l.y, y2: l.y }, svg);
      var top = l.made ? l.y - 10 : l.y - 4;
      el("text", { "class": "lane-label", x: 10, y: top }, g, l.label);
      el("text", { "class": "lane-sub", x: 10, y: top + 13 }, g, l.sub.slice(0, 36));
      if (l.made) el("text", { "class": "lane-sub", x: 10, y: top + 25 }, g, l.made.slice(0, 36));
      if (l.note) el("text", { "class": "lane-sub", x: 10, y: top + (l.made ? 37 : 25) }, g, l.note);
    });
    ticks.forEach(function (t) {
      if (t === Math.floor(t))
        el("text", { "class": "tick-label", x: xOf[t], y: 14, "text-anchor": "middle" }, svg, "@" + t);
    });
    gaps.forEach(function (gx) { el("text", { "class": "gap", x: gx, y: 16 }, svg, "\u22ef"); });
    /* Findings under the operations, so every mark and label stays readable;
     * their tags above everything. */
    var layer = el("g", { "class": "findings" }, svg);
    var ops = el("g", { "class": "ops" }, svg), tags = el("g", { "class": "tags" });
    Object.keys(m.ops).forEach(function (k) {
      var o = m.ops[k], l = m.lanes[o.lane], op = o.op, cx = xOf[op.tick], cy = l.y;
      var g = el("g", { "class": "op", "data-kind": op.kind, "data-tick": op.tick }, ops);
      el("title", {}, g, opTitle(op));
      var cls = "k-" + opKind(op);
      if (op.kind === "attach")
        el("path", { "class": cls, d: "M" + cx + " " + (cy - 8) + "l8 8l-8 8l-8 -8z" }, g);
      else if (op.kind === "event_record")
        el("path", { "class": cls, d: "M" + (cx - 7) + " " + (cy + 6) + "h14l-7 -13z" }, g);
      else if (op.kind === "event_wait")
        el("path", { "class": cls, d: "M" + (cx - 7) + " " + (cy - 6) + "h14l-7 13z" }, g);
      else if (HOST_KINDS[op.kind] && !HOST_BOXES[op.kind])
        el("rect", { "class": cls, x: cx - 2, y: cy - 10, width: 4, height: 20 }, g);
      else if (op.kind === "host_function")
        el("circle", { "class": cls, cx: cx, cy: cy, r: 7 }, g);
      else
        el("rect", { "class": cls, x: cx - 9, y: cy - 7, width: 18, height: 14, rx: 3 }, g);
      var label = opLabel(op);
      knockout(el("text", { "class": "op-label", x: cx, y: cy + 21, "text-anchor": "middle" }, g,
                  label.length > 11 ? label.slice(0, 10) + "\u2026" : label), "op-label-bg");
    });
    /* A wait on an event points back at its record. */
    Object.keys(m.ops).forEach(function (k) {
      var w = m.ops[k];
      if (w.op.kind !== "event_wait") return;
      Object.keys(m.ops).forEach(function (j) {
        var r = m.ops[j];
        if (r.op.kind !== "event_record" || r.op.address !== w.op.address || r.op.tick > w.op.tick)
          return;
        el("path", { "class": "ev-link", d: "M" + xOf[r.op.tick] + " " + (m.lanes[r.lane].y + 7) +
                     " L" + xOf[w.op.tick] + " " + (m.lanes[w.lane].y - 7) }, layer);
      });
    });
    m.findings.forEach(function (s) {
      var f = s.f, la = m.lanes[s.a.lane], ax = xOf[s.a.tick];
      var g = el("g", { "class": "finding-mark" + (f.suppressed ? " suppressed" : ""),
                        "data-index": f.index, "data-rule": f.rule, "data-ax": ax }, layer);
      el("title", {}, g, f.rule + " " + f.name);
      if (s.a.access)
        el("path", { "class": "k-access", d: "M" + ax + " " + (la.y - 9) + "l9 16h-18z" }, g);
      if (s.a.refused) {
        el("rect", { "class": "refused", x: ax - 9, y: la.y - 7, width: 18, height: 14, rx: 3 }, g);
        el("title", {}, g, f.api + ": " + (f.outcome === "guarded" ? "refused by the guard"
                           : f.result ? "failed (" + f.result_name + ")" : "not an operation"));
        el("text", { "class": "op-label", x: ax, y: la.y + 21, "text-anchor": "middle" },
           tags, f.outcome === "guarded" ? "guarded" : f.result ? "failed"
                                                          : shortApi(f.api).slice(0, 10));
      }
      if (s.b) {
        var lb = m.lanes[s.b.lane], bx = xOf[s.b.tick];
        g.setAttribute("data-bx", bx);
        g.setAttribute("data-b-name", lb.label + " @" + s.b.tick);
        var mid = (la.y + lb.y) / 2;
        el("path", { "class": "f-line sev-" + f.severity,
                     d: "M" + bx + " " + lb.y + " C" + bx + " " + mid + " " + ax + " " + mid + " " +
                        ax + " " + la.y }, g);
        el("circle", { "class": "f-ring sev-" + f.severity, cx: bx, cy: lb.y, r: 12 }, g);
      }
      el("circle", { "class": "f-ring sev-" + f.severity, cx: ax, cy: la.y, r: 12 }, g);
      var ty = la.y - LANE_H / 2 + 1, tw = 44;
      var tag = el("g", { "class": "finding-tag" + (f.suppressed ? " suppressed" : ""),
                          "data-index": f.index }, tags);
      el("rect", { "class": "f-tag-bg", x: ax - tw / 2, y: ty, width: tw, height: 14, rx: 7 }, tag);
      el("text", { "class": "f-tag sev-" + f.severity, x: ax, y: ty + 11, "text-anchor": "middle" },
         tag, f.rule);
      [g, tag].forEach(function (e) {
        e.addEventListener("click", function () { select(f.index, false); });
      });
    });
    svg.appendChild(tags);
  }

  /* A background under a label, the size of its text: lines pass under it. */
  function knockout(text, cls) {
    var b = text.getBBox(), bg = el("rect", { "class": cls, x: b.x - 2, y: b.y, width: b.width + 4,
                                              height: b.height, rx: 2 });
    text.parentNode.insertBefore(bg, text);
    return text;
  }

  /* The selected finding's timeline scrolled to show both its sides; where
   * they do not fit, its own side, and a marker at the edge towards the other. */
  function reveal(index) {
    var g = document.querySelector('.finding-mark[data-index="' + index + '"]');
    if (!g) return;
    var frame = g.closest(".tl-frame"), scroll = frame.querySelector(".scroll");
    var ax = Number(g.dataset.ax), bx = g.dataset.bx === undefined ? ax : Number(g.dataset.bx);
    var w = scroll.clientWidth, margin = 48;
    var fits = Math.abs(ax - bx) + 2 * margin <= w;
    scroll.scrollLeft = (fits ? (ax + bx) / 2 : ax) - w / 2;
    frame.querySelectorAll(".offscreen").forEach(function (m) {
      var left = m.classList.contains("left"), shown = !fits && (left ? bx < ax : bx > ax);
      m.hidden = !shown;
      if (!shown) return;
      m.dataset.x = bx;
      m.textContent = (left ? "\u25c0 " : "") + "other side: " + g.dataset.bName +
                      (left ? "" : " \u25b6");
    });
  }

  function legend(parent) {
    var items = [["work", "launch"], ["copy", "copy / set"], ["attach", "attach"],
                 ["host_function", "host function"], ["event_record", "event record / wait"],
                 ["stream_sync", "synchronisation"], ["allocation", "allocation / advice"],
                 ["access", "CPU access"]];
    var p = html("div", { "class": "legend" }, parent);
    items.forEach(function (it) {
      var s = html("span", {}, p);
      html("i", { style: "background: var(--" + ({ work: "work", copy: "copy", attach: "attach",
        host_function: "host", event_record: "event", stream_sync: "sync", allocation: "alloc",
        access: "error" })[it[0]] + ")" }, s);
      s.appendChild(document.createTextNode(it[1]));
    });
    html("span", {}, p, "Order is the model's (not wall time); each lane keeps its last " +
         ((data[0] && data[0].timeline && data[0].timeline.limit) || 16) +
         " operations before a finding. Click a finding's line.");
  }

  function visible(f) {
    return (!state.rule || f.rule === state.rule) &&
           (!state.pid || (" " + f.pids + " ").indexOf(" " + state.pid + " ") >= 0) &&
           (state.suppressed || !f.suppressed);
  }

  function apply() {
    document.querySelectorAll("article.finding").forEach(function (a) {
      var f = { rule: a.dataset.rule, pids: a.dataset.pids,
                suppressed: a.classList.contains("suppressed") };
      a.hidden = !visible(f) && !a.closest("#selected");
    });
    document.querySelectorAll(".finding-mark, .finding-tag").forEach(function (g) {
      var f = data[Number(g.dataset.index)];
      g.style.display = visible({ rule: f.rule, pids: (f.pids || [f.pid]).join(" "), suppressed: f.suppressed })
                        ? "" : "none";
    });
    document.querySelectorAll(".process").forEach(function (p) {
      p.hidden = !!state.pid && p.dataset.pid !== state.pid;
    });
    document.querySelectorAll("table.summary tbody tr[data-rule]").forEach(function (r) {
      r.hidden = !!state.rule && r.dataset.rule !== state.rule;
    });
  }

  function select(index, fromList) {
    state.selected = index;
    document.querySelectorAll(".selected").forEach(function (e) { e.classList.remove("selected"); });
    document.querySelectorAll('.finding-mark[data-index="' + index + '"], ' +
                              '.finding-tag[data-index="' + index + '"]').forEach(function (g) {
      g.classList.add("selected");
    });
    var art = document.getElementById("f" + index), panel = document.getElementById("selected");
    panel.textContent = "";
    if (!art) return;
    art.classList.add("selected");
    var copy = art.cloneNode(true);
    copy.removeAttribute("id");
    copy.classList.remove("selected");
    copy.hidden = false;
    html("h2", {}, panel, "Selected finding");
    panel.appendChild(copy);
    reveal(index);
    if (fromList) document.getElementById("timeline").scrollIntoView({ behavior: "smooth" });
  }

  function filters() {
    var box = document.getElementById("filters");
    box.hidden = false;
    function choice(label, values, key) {
      var l = html("label", {}, box, label + " ");
      var s = html("select", { "data-filter": key }, l);
      html("option", { value: "" }, s, "all");
      values.forEach(function (v) { html("option", { value: v }, s, v); });
      s.addEventListener("change", function () { state[key] = s.value; apply(); });
    }
    var rules = {}, pids = {};
    data.forEach(function (f) {
      rules[f.rule] = 1;
      (f.pids || [f.pid]).forEach(function (p) { pids[p] = 1; });
    });
    choice("Rule", Object.keys(rules).sort(), "rule");
    choice("Process", Object.keys(pids), "pid");
    var l = html("label", {}, box);
    var c = html("input", { type: "checkbox", checked: "checked", "data-filter": "suppressed" }, l);
    l.appendChild(document.createTextNode(" show suppressed"));
    c.addEventListener("change", function () { state.suppressed = c.checked; apply(); });
  }

  var lanesBox = document.getElementById("lanes");
  if (!data.length) {
    html("p", { "class": "note" }, lanesBox, "No findings: nothing to draw.");
    return;
  }
  filters();
  var seen = {};
  data.forEach(function (f) {
    if (!seen[f.pid]) { seen[f.pid] = 1; draw(f.pid, lanesBox); }
  });
  legend(lanesBox);
  document.querySelectorAll("article.finding h3").forEach(function (h) {
    h.addEventListener("click", function () {
      select(Number(h.parentNode.dataset.index), true);
    });
  });
  var first = data.filter(function (f) { return !f.suppressed; })[0] || data[0];
  select(first.index, false);
  apply();
})();
