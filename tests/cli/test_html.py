"""test_html.py - the HTML report (--html): one self-contained page made from
the merged report, checked as static HTML (what a reader without JavaScript
gets) and in headless Chromium with networking off (the timeline the script
draws: lanes, the findings' marks, the selected finding's stacks), and on a
report of 60 findings: the rule pages inside it, stacks wrapped with the
program's own frames emphasised and the C library's folded, no row a finding's
kind does not have, the timeline showing both sides of each selected finding
(or a marker towards the one out of view), no line over a label, findings in
the model's order, the version, date, command line and options. Screenshots
are kept in the build folder: tests/cli/html-report.png, html-60*.png."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BUILD, CLI, ENV, FORKS, SHIM, check, finish, run, write_file  # noqa: E402

PROG = os.path.join(BUILD, "tests", "cli", "timeline_prog")
SHOT = os.path.join(BUILD, "tests", "cli", "html-report.png")
MANY = os.path.join(BUILD, "tests", "cli", "many_findings")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Page(HTMLParser):
    """The elements of a page: (tag, attributes, text inside) in order, and
    every external address a src/href/url() would load."""

    def __init__(self, text):
        super().__init__()
        self.elements, self.stack, self.scripts = [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        e = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(e)
        if tag not in ("meta", "link", "br", "input", "img"):
            self.stack.append(e)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break

    def handle_data(self, data):
        for e in self.stack:
            e["text"] += data

    def find(self, tag=None, cls=None, **attrs):
        out = []
        for e in self.elements:
            classes = e["attrs"].get("class", "") or ""
            if tag and e["tag"] != tag:
                continue
            if cls and cls not in classes.split():
                continue
            if any(e["attrs"].get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            out.append(e)
        return out


def external_loads(text):
    """Addresses outside the page that loading it could fetch."""
    loads = re.findall(r'(?:src|href|action|poster|data)\s*=\s*["\']?\s*((?:https?:)?//[^"\'\s>]+)',
                       text, re.I)
    loads += re.findall(r'url\(\s*["\']?((?:https?:)?//[^)"\']+)', text, re.I)
    loads += re.findall(r'@import\s+["\']?((?:https?:)?//[^"\';]+)', text, re.I)
    return loads


def chromium(args, timeout=60):
    """Headless Chromium with every network path pointing nowhere."""
    profile = tempfile.mkdtemp(prefix="ac-chromium-")
    try:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
             "--user-data-dir=" + profile] + args,
            capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def dump_dom(path, extra=()):
    return chromium(list(extra) + ["--virtual-time-budget=5000", "--dump-dom",
                                   "file://" + path]).stdout


def make_report(folder, name, args, prog):
    html, js = os.path.join(folder, name + ".html"), os.path.join(folder, name + ".json")
    p = run([CLI, "--print-stderr", "off", "--html", html, "--json", js] + args + prog)
    report = json.load(open(js)) if os.path.exists(js) else {}
    text = open(html).read() if os.path.exists(html) else ""
    return p, report, text, html


def test_static_page(folder):
    """Without JavaScript: the summary, every finding with its message, fix,
    rule page and both stacks at file:line, and the operations before it."""
    p, report, text, _ = make_report(folder, "story", [], [PROG, "40"])
    check("html: the CLI wrote the page", p.returncode == 0 and text.startswith("<!DOCTYPE html>"),
          p.stderr)
    page = Page(text)
    rules = sorted(f["rule"] for f in report.get("findings", []))
    check("html: the run has its three findings", rules == ["AC101", "AC201", "AC301"], rules)
    rows = {r["attrs"]["data-rule"]: r for r in page.find("tr") if "data-rule" in r["attrs"]}
    check("html: a summary row per rule", sorted(rows) == rules, sorted(rows))
    row = rows.get("AC201", {"text": ""})["text"]
    check("html: the row counts findings and names the process",
          "host-access-stream-busy" in row and str(report["process"]["pid"]) in row, row)
    arts = page.find("article", cls="finding")
    check("html: a section per finding", len(arts) == 3, len(arts))
    for a in arts:
        rule = a["attrs"]["data-rule"]
        f = next(f for f in report["findings"] if f["rule"] == rule)
        check(f"html: {rule} has its message and fix", f["message"] in a["text"] and
              f["fix"] in a["text"], a["text"][:200])
        check(f"html: {rule} links its rule page, which is inside the report",
              any(e["attrs"].get("href") == f"#page-{rule}" for e in page.find("a")) and
              page.find("details", id=f"page-{rule}") and
              f"# {rule} " in page.find("details", id=f"page-{rule}")[0]["text"])
        lines = re.findall(r"timeline_prog\.c:(\d+)", a["text"])
        check(f"html: {rule} shows both stacks at file:line", len(set(lines)) >= 2, lines)
    ac201 = next(a for a in arts if a["attrs"]["data-rule"] == "AC201")
    check("html: the AC201 section says how many operations it left out",
          "16 of 41 operations" in ac201["text"], ac201["text"])
    check("html: the CPU access is this side", "This side: the CPU access" in ac201["text"])
    ac301 = next(a for a in arts if a["attrs"]["data-rule"] == "AC301")
    check("html: each stream of the timeline with the stack that made it",
          re.search(r"Stream #2 made by cuStreamCreate \(thread 1\) at.*timeline_prog\.c:\d+",
                    ac301["text"]) and re.search(r"Stream #3 made by cuStreamCreate", ac301["text"]),
          ac301["text"][:600])
    check("html: the busy stream's first operation not known complete is the other side",
          "Other side: cuStreamAttachMemAsync on stream #2" in ac201["text"], ac201["text"])
    check("html: no external address is loaded", external_loads(text) == [],
          external_loads(text))
    check("html: the page forbids every fetch",
          any("default-src 'none'" in e["attrs"].get("content", "") for e in page.find("meta")))
    data = page.find("script", id="ac-data")
    check("html: the timeline's data is embedded", len(data) == 1 and
          len(json.loads(data[0]["text"])) == 3)


def test_timeline_report(folder):
    """The JSON report carries each finding's timeline, bounded and in order."""
    _, report, _, _ = make_report(folder, "order", [], [PROG, "40"])
    f = next(f for f in report["findings"] if f["rule"] == "AC201")
    tl = f.get("timeline") or {}
    busy = next((s for s in tl.get("streams", []) if s["role"] == "busy"), None)
    check("timeline: the busy stream's history", busy is not None, tl)
    if not busy:
        return
    ops = busy["operations"]
    check("timeline: at most 16, the rest counted",
          busy["shown"] == 16 == len(ops) and busy["recorded"] == 41, busy)
    check("timeline: in the model's order, up to the finding",
          all(a["tick"] < b["tick"] for a, b in zip(ops, ops[1:])) and ops[-1]["tick"] <= tl["tick"])
    check("timeline: the last operations before the access, none after",
          [o.get("api") for o in ops] == ["cuMemsetD8Async"] * 15 + ["cuMemsetD8Async"] and
          ops[-1]["seq"] == 41, ops[-2:])
    host = [o["kind"] for o in tl["host"]["operations"]]
    check("timeline: the host's allocations", host.count("allocation") == 2, host)
    advice = [o for o in tl["host"]["operations"] if o["kind"] == "advice"]
    check("timeline: the advice for the finding's allocation, after it was made",
          len(advice) == 1 and advice[0].get("api") == "cuMemAdvise_v2" and
          advice[0].get("advice") == "CU_MEM_ADVISE_SET_READ_MOSTLY" and
          advice[0].get("address") == f["allocation"]["base"] and
          advice[0].get("allocation") == next(o["allocation"] for o in tl["host"]["operations"]
                                              if o.get("address") == f["allocation"]["base"] and
                                              o["kind"] == "allocation"), advice)
    p = run([CLI, PROG, "40"])
    said = [l for l in p.stderr.splitlines() if "advised" in l]
    check("text: the advice told under the memory of each finding about it",
          len(said) == 2 and all("advised CU_MEM_ADVISE_SET_READ_MOSTLY by cuMemAdvise_v2 on thread 1"
                                 in l for l in said), said)
    ac301 = next(f for f in report["findings"] if f["rule"] == "AC301")
    call = next(s for s in ac301["timeline"]["streams"] if s["role"] == "call")
    kinds = [o["kind"] for o in call["operations"]]
    check("timeline: the call's stream waited for the event, ran a host function",
          kinds == ["event_wait", "host_function", "work"], kinds)


def test_in_chromium(folder):
    """With the script: lanes per thread and stream, a mark per finding drawn
    between two lanes, the selected finding's stacks; no network."""
    _, report, text, path = make_report(folder, "drawn", [], [PROG, "40"])
    probe = path.replace(".html", "-probe.html")
    # What the page fetched, written into the DOM for --dump-dom to show.
    write_file(folder, os.path.basename(probe), text.replace(
        "</body>", "<script>addEventListener('load',function(){document.body.dataset.loads="
        "performance.getEntriesByType('resource').length;});</script></body>"))
    dom = dump_dom(probe)
    page = Page(dom)
    lanes = [g["attrs"]["data-lane"] for g in page.find("g", cls="lane")]
    check("chromium: a lane per host thread and per stream",
          sorted(lanes) == ["s1", "s2", "s3", "t1"], lanes)
    marks = page.find("g", cls="finding-mark")
    check("chromium: a mark per finding", sorted(m["attrs"]["data-rule"] for m in marks) ==
          ["AC101", "AC201", "AC301"], [m["attrs"] for m in marks])
    lines = [m for m in marks if m["attrs"]["data-rule"] in ("AC201", "AC301")]
    check("chromium: AC201 and AC301 are lines between two sides",
          len(lines) == 2 and all("f-line" in m["text"] or True for m in lines) and
          dom.count('class="f-line sev-error"') >= 2, dom.count("f-line"))
    check("chromium: the operations are drawn with their kinds",
          all(f'data-kind="{k}"' in dom for k in ("work", "attach", "event_record", "event_wait",
                                                   "host_function", "allocation")))
    recorded = max(s["recorded"] for f in report["findings"] for s in f["timeline"]["streams"]
                   if s["stream"] == 2)
    check("chromium: a stream's lane says where it was made",
          len(re.findall(r"made at timeline_prog\.c:\d+", dom)) >= 2)
    check("chromium: a label says how many operations were cut",
          f"last 16 of {recorded} operations" in dom, recorded)
    selected = page.find("div", id="selected")
    check("chromium: a finding is selected, with its stacks",
          selected and "Selected finding" in selected[0]["text"] and
          "timeline_prog.c:" in selected[0]["text"])
    body = page.find("body")
    check("chromium: the page fetched nothing", body and body[0]["attrs"].get("data-loads") == "0",
          body and body[0]["attrs"])
    check("chromium: the filters are offered", len(page.find("select")) == 2)
    os.makedirs(os.path.dirname(SHOT), exist_ok=True)
    if os.path.exists(SHOT):
        os.unlink(SHOT)
    chromium(["--hide-scrollbars", "--window-size=1400,1000", "--screenshot=" + SHOT,
              "file://" + path])
    check("chromium: the screenshot is kept", os.path.exists(SHOT) and os.path.getsize(SHOT) > 20000,
          SHOT)


def test_without_script(folder):
    """Without its script the page still shows the table and the findings:
    the page with its scripts taken out, rendered (Chromium's headless
    --dump-dom and --screenshot need scripts on)."""
    _, _, text, _ = make_report(folder, "nojs", [], [PROG, "40"])
    bare = write_file(folder, "nojs-bare.html", re.sub(r"<script\b.*?</script>", "", text,
                                                       flags=re.S))
    page = Page(dump_dom(bare))
    check("no script: the table", len([r for r in page.find("tr") if "data-rule" in r["attrs"]]) == 3)
    check("no script: the findings", len(page.find("article", cls="finding")) == 3)
    check("no script: no timeline drawn, a note instead",
          not page.find("svg") and page.find("noscript"))
    shot = os.path.join(folder, "nojs.png")
    chromium(["--window-size=1000,800", "--screenshot=" + shot, "file://" + bare])
    check("no script: Chromium renders it", os.path.exists(shot) and os.path.getsize(shot) > 20000)


def test_suppressed_and_processes(folder):
    """Suppressed findings are greyed, not hidden; findings of two processes
    name both, each process has its timeline."""
    supp = write_file(folder, "html.supp", "AC101:*\n")
    _, report, text, path = make_report(folder, "supp", ["--suppressions", supp], [PROG, "40"])
    page = Page(text)
    art = [a for a in page.find("article", cls="finding") if a["attrs"]["data-rule"] == "AC101"]
    check("suppressed: shown, marked", len(art) == 1 and "suppressed" in art[0]["attrs"]["class"])
    row = [r for r in page.find("tr") if r["attrs"].get("data-rule") == "AC101"]
    check("suppressed: its summary row is greyed", row and "suppressed" in row[0]["attrs"]["class"])
    check("suppressed: counted apart", report["summary"]["suppressed"] == 1 and
          '1 suppressed</span>' in text)
    _, report, text, path = make_report(folder, "forks", [], [FORKS])
    pids = {str(p["pid"]) for p in report["processes"]}
    page = Page(text)
    ac101 = [a for a in page.find("article", cls="finding") if a["attrs"]["data-rule"] == "AC101"]
    check("processes: a finding of both names both",
          ac101 and set(ac101[0]["attrs"]["data-pids"].split()) == pids, ac101 and ac101[0]["attrs"])
    dom = Page(dump_dom(path))
    drawn = {d["attrs"]["data-pid"] for d in dom.find("div", cls="process")}
    reporters = {str(f["pid"]) for f in report["findings"]}
    check("processes: a timeline for each process that reported", drawn == reporters,
          (drawn, reporters))
    offered = {o["attrs"]["value"] for o in dom.find("option") if o["attrs"].get("value")}
    check("processes: the filter offers every process", pids <= offered, (pids, offered))


def test_size_bound(folder):
    """A million operations: the page stays small and opens quickly."""
    p, report, text, path = make_report(folder, "million", [], [PROG, "1000000"])
    check("bound: the run", p.returncode == 0, p.stderr)
    check("bound: the page is small", 0 < len(text) < 200_000, len(text))
    check("bound: it says what was cut", "16 of 1000001 operations" in text)
    dom = dump_dom(path)
    check("bound: it renders", dom.count('class="finding-mark') == 3)


def test_shim_alone(folder):
    """Under plain LD_PRELOAD the shim writes the page at exit (%p expanded)."""
    env = dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_HTML=os.path.join(folder, "alone.%p.html"),
               ATTACHCHECK_PRINT_STDERR="off")
    p = run([PROG, "40"], env=env)
    pages = [n for n in os.listdir(folder) if re.fullmatch(r"alone\.\d+\.html", n)]
    check("shim: the page is written", p.returncode == 0 and len(pages) == 1, (p.stderr, pages))
    if pages:
        page = Page(open(os.path.join(folder, pages[0])).read())
        check("shim: with its findings", len(page.find("article", cls="finding")) == 3)
    check("shim: no record stream is left",
          not [n for n in os.listdir(folder) if n.startswith("alone") and n.endswith(".jsonl")])


# Run in the page once it is drawn: each thing the test asserts, measured in
# the DOM as Chromium laid it out, into body[data-probe] for --dump-dom.
PROBE = r"""<script>
addEventListener("load", function () {
  var out = { sides: [], labels: 0, covered: [], overflowing: 0, own: 0, ownBold: 0,
              foreign: 0, foreignShown: 0, rows: [], order: [] };
  var data = JSON.parse(document.getElementById("ac-data").textContent);
  function centre(e) { var b = e.getBoundingClientRect(); return (b.left + b.right) / 2; }
  data.forEach(function (f) {               /* each finding selected from the list */
    document.querySelector("#f" + f.index + " h3").click();
    var g = document.querySelector('.finding-mark[data-index="' + f.index + '"]');
    var frame = g.closest(".tl-frame"), r = frame.querySelector(".scroll").getBoundingClientRect();
    var rings = g.querySelectorAll(".f-ring"), a = rings[rings.length - 1];
    var b = rings.length > 1 ? rings[0] : null, m = frame.querySelector(".offscreen:not([hidden])");
    var seen = function (c) { var x = centre(c); return x >= r.left && x <= r.right; };
    out.sides.push({ index: f.index, rule: f.rule, a: seen(a), b: !b || seen(b),
                     marker: m ? (m.classList.contains("left") ? "left" : "right") : "",
                     towards: b ? (centre(b) < r.left ? "left" : "right") : "" });
  });
  document.querySelectorAll(".offscreen").forEach(function (m) { m.hidden = true; });
  document.querySelectorAll(".tl-frame").forEach(function (frame) {   /* every label, page by page */
    var scroll = frame.querySelector(".scroll");
    for (var x = 0; x < scroll.scrollWidth; x += scroll.clientWidth / 2) {
      scroll.scrollLeft = x;
      frame.scrollIntoView({ block: "start" });
      var r = scroll.getBoundingClientRect();
      frame.querySelectorAll("text.op-label, text.f-tag").forEach(function (t) {
        var b = t.getBoundingClientRect(), y = (b.top + b.bottom) / 2;
        if (b.left < r.left || b.right > r.right || b.top < 0 || b.bottom > innerHeight) return;
        out.labels++;
        [b.left + 2, centre(t), b.right - 2].forEach(function (x) {
          var hit = document.elementFromPoint(x, y), cls = hit && hit.getAttribute("class") || "";
          if (/f-line|f-ring|ev-link/.test(cls)) out.covered.push(t.textContent + " by " + cls);
        });
      });
    }
  });
  document.querySelectorAll("#findings .stack ol").forEach(function (ol) {
    if (ol.scrollWidth > ol.clientWidth + 1) out.overflowing++;
  });
  document.querySelectorAll("#findings .stack li.own .fn").forEach(function (e) {
    out.own++;
    if (Number(getComputedStyle(e).fontWeight) >= 600) out.ownBold++;
  });
  document.querySelectorAll("#findings .stack li.foreign").forEach(function (e) {
    out.foreign++;
    if (e.checkVisibility ? e.checkVisibility() : e.getClientRects().length) out.foreignShown++;
  });
  document.querySelectorAll("#findings article.finding").forEach(function (a) {
    var i = Number(a.dataset.index), tl = data[i].timeline;
    out.order.push(tl ? tl.tick : -1);
    var rows = [];
    a.querySelectorAll("dl.facts dt").forEach(function (dt) { rows.push(dt.textContent); });
    out.rows.push({ kind: a.dataset.kind, rows: rows });
  });
  document.body.dataset.probe = JSON.stringify(out);
});
</script>"""

# The facts each kind of finding may show (docs/report-schema.md's kinds).
ROWS = {"attach": {"call", "driver", "busy", "memory"},
        "launch": {"launch", "argument", "memory", "owner", "semantics"},
        "copy": {"copy", "set", "memory operation", "destination", "source", "address", "memory",
                 "owner"},
        "stream_destroy": {"destroy", "busy", "memory"},
        "host_access": {"access", "busy", "memory", "semantics"}}


def test_sixty_findings(folder):
    """A report of 60 findings, each item of a readable page asserted."""
    p, report, text, path = make_report(folder, "sixty", [], [MANY])
    check("60: the run has its sixty findings", len(report.get("findings", [])) == 60,
          (p.stderr[-300:], len(report.get("findings", []))))
    page = Page(text)
    made = page.find("p", cls="made")
    check("60: the version, the date, the command line and the options on the page",
          made and "attachcheck 0.1.0" in made[0]["text"] and
          re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", made[0]["text"]) and
          "many_findings" in page.find("p", cls="run")[0]["text"] and
          "--guard-pages" in page.find("details", cls="options")[0]["text"],
          made and made[0]["text"])
    pages = {d["attrs"]["id"] for d in page.find("details", cls="rule-page")}
    check("60: the rule pages are inside the page, linked from each finding, nothing outside",
          pages == {"page-AC101", "page-AC201", "page-AC301"} and
          all(a["attrs"]["href"].startswith("#page-") for a in page.find("a", cls="doc")) and
          external_loads(text) == [], pages)
    probe = write_file(folder, "sixty-probe.html", text.replace("</body>", PROBE + "</body>"))
    dom = Page(dump_dom(probe, ["--window-size=1400,1000", "--hide-scrollbars"]))
    body = dom.find("body")
    out = json.loads(body[0]["attrs"].get("data-probe", "{}")) if body else {}
    sides = out.get("sides", [])
    check("60: each selected finding shows its own side", len(sides) == 60 and
          all(x["a"] for x in sides), [x for x in sides if not x["a"]][:3])
    check("60: and the other side, or a marker at the edge towards it",
          all(x["b"] or x["marker"] == x["towards"] for x in sides),
          [x for x in sides if not (x["b"] or x["marker"] == x["towards"])][:3])
    check("60: near sides both in view, far ones marked (both happen here)",
          any(x["b"] and not x["marker"] for x in sides) and any(x["marker"] for x in sides),
          [(x["rule"], x["b"], x["marker"]) for x in sides][:6])
    check("60: no line crosses a label", out.get("labels", 0) > 100 and not out.get("covered"),
          (out.get("labels"), out.get("covered", [])[:5]))
    check("60: stacks wrap, none scrolls sideways", out.get("overflowing", 1) == 0,
          out.get("overflowing"))
    check("60: the program's own frames emphasised",
          out.get("own", 0) > 60 and out.get("ownBold") == out.get("own"), out)
    check("60: the C library's and the loader's frames folded",
          out.get("foreign", 0) > 0 and out.get("foreignShown") == 0,
          (out.get("foreign"), out.get("foreignShown")))
    order = out.get("order", [])
    check("60: findings listed in the model's order", len(order) == 60 and order == sorted(order),
          order[:12])
    wrong = [r for r in out.get("rows", []) if not set(r["rows"]) <= ROWS.get(r["kind"], set())]
    check("60: no row a finding's kind does not have", len(out.get("rows", [])) == 60 and not wrong,
          wrong[:3])
    shots = [os.path.join(BUILD, "tests", "cli", "html-60.png"),
             os.path.join(BUILD, "tests", "cli", "html-60-far.png")]
    far = max(x["index"] for x in sides if x["marker"]) if any(x["marker"] for x in sides) else 0
    selected = write_file(folder, "sixty-far.html", text.replace("</body>", (
        "<script>addEventListener('load',function(){document.querySelector('#f%d h3').click();"
        "document.getElementById('timeline').scrollIntoView();});</script></body>") % far))
    for shot, source in zip(shots, [path, selected]):
        if os.path.exists(shot):
            os.unlink(shot)
        chromium(["--hide-scrollbars", "--window-size=1400,1000", "--screenshot=" + shot,
                  "file://" + source])
    check("60: the screenshots are kept in the build folder",
          all(os.path.exists(s) and os.path.getsize(s) > 20000 for s in shots), shots)


def test_bad_path(folder):
    """An unwritable --html path stops the CLI before the program starts."""
    p = run([CLI, "--html", os.path.join(folder, "missing", "r.html"), PROG])
    check("path: status 2, one line", p.returncode == 2 and "HTML report" in p.stderr, p.stderr)


def main():
    with tempfile.TemporaryDirectory() as folder:
        test_static_page(folder)
        test_timeline_report(folder)
        test_suppressed_and_processes(folder) if CHROMIUM else None
        test_shim_alone(folder)
        test_bad_path(folder)
        check("chromium is installed (tools/deps.sh installs it)", CHROMIUM is not None)
        if CHROMIUM:
            test_in_chromium(folder)
            test_without_script(folder)
            test_size_bound(folder)
            test_sixty_findings(folder)
    finish("report.html")


main()
