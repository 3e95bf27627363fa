#!/usr/bin/env python3
"""Flame graphs end to end: `cfiprof record --format svg` of the fixtures,
opened in headless Chromium and used as a person would (a real mouse click
to zoom, the Search button answering its prompt), and `cfiprof convert` of
a real recording.

usage: test_svg.py CASE     run one case (meson registers one test each)
       test_svg.py --list   print the cases

The environment is test_record.py's (tests/record/meson.build), plus
CHROMIUM when the browser is not on PATH as chromium (tools/setup.sh
installs Debian's).  SVG_SCREENSHOT_DIR, when set, receives the
screenshots the render case takes (before and after zoom and search).
"""
import os
import re
import shutil
import subprocess
import sys
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_record as tr  # noqa: E402
import cdp  # noqa: E402

Fail = tr.Fail
log = tr.log

GRAPH_WIDTH = 1180
XPAD = 10

tr.CASES.clear()
case = tr.case


class Frame:
    def __init__(self, g):
        self.name = g.getAttribute("data-n")
        self.x = int(g.getAttribute("data-x"))
        self.v = int(g.getAttribute("data-v"))
        self.d = int(g.getAttribute("data-d"))
        self.title = g.getElementsByTagName("title")[0].firstChild.data


def read_svg(path):
    """(title, [Frame] in file order, total): parsing it is the check that
    it is well-formed XML."""
    try:
        doc = xml.dom.minidom.parse(path)
    except Exception as e:
        raise Fail(f"{path}: not well-formed XML: {e}")
    root = doc.documentElement
    if root.tagName != "svg":
        raise Fail(f"{path}: root element {root.tagName}")
    title = next(t for t in doc.getElementsByTagName("text") if t.getAttribute("id") == "title")
    frames = [Frame(g) for g in doc.getElementsByTagName("g") if g.getAttribute("class") == "f"]
    if not frames or frames[0].name != "all":
        raise Fail(f"{path}: no root frame")
    return title.firstChild.data, frames, int(root.getAttribute("data-total"))


def one(frames, name):
    hits = [f for f in frames if f.name == name]
    if len(hits) != 1:
        raise Fail(f"{len(hits)} frames named {name}")
    return hits[0]


def check_title(title, cmd, what, min_samples):
    m = re.fullmatch(re.escape(cmd) + r": " + what + r", (\d+) samples", title)
    if not m or int(m.group(1)) < min_samples:
        raise Fail(f"title {title!r}: want '{cmd}: {what}, N samples', N >= {min_samples}")


# ---- the browser ------------------------------------------------------------

def browser():
    path = os.environ.get("CHROMIUM") or cdp.find_chromium()
    if not path:
        raise Fail("no chromium: install it (tools/setup.sh: apt-get install chromium)")
    return cdp.Browser(path)


FRAMES_JS = """[...document.querySelectorAll('#frames > g')].map(g => ({
    name: g.getAttribute('data-n'),
    cls: g.getAttribute('class'),
    x: +g.querySelector('rect').getAttribute('x'),
    width: +g.querySelector('rect').getAttribute('width'),
    fill: g.querySelector('rect').getAttribute('fill'),
    label: g.querySelector('text').textContent}))"""


def center_of(b, selector_js):
    r = b.js(f"(() => {{ const r = ({selector_js}).getBoundingClientRect();"
             "return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    return r[0], r[1]


def frame_el(name):
    return f"[...document.querySelectorAll('#frames > g')].find(g => g.getAttribute('data-n') === {name!r}).querySelector('rect')"


def shot(b, tmp, name):
    path = os.path.join(tmp, name)
    b.screenshot(path)
    out = os.environ.get("SVG_SCREENSHOT_DIR")
    if out:
        os.makedirs(out, exist_ok=True)
        shutil.copy(path, os.path.join(out, name))
    log(f"screenshot: {path}")


@case("render")
def t_render(tmp):
    """A recording of rec-shlib in Chromium: the title names the command and
    the event; clicking lib_call zooms (it fills the width, its children
    scale with it, its ancestors stay full width and dimmed, the rest
    hides); Search for ^shlib_ highlights exactly the matching frames and
    says their share, as computed here from the file; Reset Zoom puts every
    box back."""
    out = os.path.join(tmp, "shlib.svg")
    _, err = tr.run_record(["-F", "499", "--format", "svg", "-o", out, "--", tr.fx("shlib"), "1"])
    title, frames, total = read_svg(out)
    check_title(title, tr.fx("shlib") + " 1", "(?:cpu-clock|cycles)", 300)
    lib_call = one(frames, "lib_call")
    if lib_call.v < total / 2:
        raise Fail(f"lib_call holds {lib_call.v} of {total}: the fixture's leaf is elsewhere")

    b = browser()
    try:
        b.navigate("file://" + out)
        if b.js("document.getElementById('title').textContent") != title:
            raise Fail("the browser shows another title")
        before = b.js(FRAMES_JS)
        if [f["name"] for f in before] != [f.name for f in frames]:
            raise Fail("the browser's frames are not the file's")
        shot(b, tmp, "render-0-loaded.png")

        # hovering tells samples and percentage
        b.call("Input.dispatchMouseEvent", type="mouseMoved", x=center_of(b, frame_el("lib_call"))[0],
               y=center_of(b, frame_el("lib_call"))[1])
        details = b.js("document.getElementById('details').textContent")
        if details != lib_call.title or not re.search(r"\(\d+ samples, [\d.]+ ms, [\d.]+%\)$", details):
            raise Fail(f"details line {details!r}, want {lib_call.title!r}")

        b.click(*center_of(b, frame_el("lib_call")))
        after = b.js(FRAMES_JS)
        lo, hi = lib_call.x, lib_call.x + lib_call.v
        for f, a in zip(frames, after):
            inside = f.d >= lib_call.d and f.x >= lo and f.x + f.v <= hi
            ancestor = f.d < lib_call.d and f.x <= lo and f.x + f.v >= hi
            if inside:
                want = f.v / lib_call.v * GRAPH_WIDTH
                want_x = XPAD + (f.x - lo) / lib_call.v * GRAPH_WIDTH
                if abs(a["width"] - want) > 0.011 or abs(a["x"] - want_x) > 0.011 or \
                        "hide" in a["cls"]:
                    raise Fail(f"zoomed {f.name}: x {a['x']} width {a['width']} class {a['cls']}, "
                               f"want {want_x:.2f} {want:.2f}")
            elif ancestor:
                if a["width"] != GRAPH_WIDTH or "parent" not in a["cls"]:
                    raise Fail(f"ancestor {f.name}: width {a['width']} class {a['cls']}")
            elif "hide" not in a["cls"]:
                raise Fail(f"{f.name} outside lib_call still shown: {a}")
        z = [a for a in after if a["name"] == "lib_call"][0]
        if z["width"] != GRAPH_WIDTH or z["x"] != XPAD:
            raise Fail(f"lib_call after the click: {z}")
        if not any("hide" in a["cls"] for a in after):
            raise Fail("nothing hidden: the fixture has frames beside lib_call (fx_warmup)")
        if "hide" in b.js("document.getElementById('unzoom').getAttribute('class')"):
            raise Fail("no Reset Zoom after zooming")
        log("zoom: lib_call fills the width; "
            f"{sum('hide' in a['cls'] for a in after)} frames hidden, "
            f"{sum('parent' in a['cls'] for a in after)} ancestors dimmed")

        # Search: the button asks with prompt(), answered here
        b.dialog_answer = "^shlib_"
        b.click(*center_of(b, "document.getElementById('search')"))
        matched = b.js("document.getElementById('matched').textContent")
        hits = sorted((f for f in frames if re.search("^shlib_", f.name)), key=lambda f: (f.x, -f.v))
        covered, end = 0, -1
        for f in hits:
            if f.x >= end:
                covered += f.v
                end = f.x + f.v
        want = f"Matched: {100 * covered / total:.2f}%"
        if matched != want:
            raise Fail(f"search: {matched!r}, want {want!r}")
        now = b.js(FRAMES_JS)
        lit = {a["name"] for a in now if "match" in (a["cls"] or "")}
        magenta = {a["name"] for a in now if a["fill"] == "rgb(230,0,230)"}
        names = {f.name for f in hits}
        if lit != names or magenta != names:
            raise Fail(f"highlighted {sorted(lit)} / magenta {sorted(magenta)}, want {sorted(names)}")
        log(f"search ^shlib_: {matched} ({', '.join(sorted(names))})")
        shot(b, tmp, "render-1-zoomed-searched.png")

        b.click(*center_of(b, "document.getElementById('unzoom')"))
        back = b.js(FRAMES_JS)
        for a, f in zip(back, before):
            if abs(a["width"] - f["width"]) > 0.011 or "hide" in a["cls"] or "parent" in a["cls"]:
                raise Fail(f"after Reset Zoom {a['name']}: {a}, before {f}")
    finally:
        b.close()


@case("off-cpu")
def t_off_cpu(tmp):
    """--off-cpu --format svg: -o names the on-CPU graph, the off-CPU one
    goes to OUT.off-cpu.svg, nothing else is written; each holds its own
    chain.  -o - cannot take the second: one line, non-zero exit."""
    out = os.path.join(tmp, "oc.svg")
    cmd = [tr.fx("ocsleep"), "20", "10", "0", "0", "1"]
    _, err = tr.run_record(["--off-cpu", "-F", "499", "--format", "svg", "-o", out, "--", *cmd])
    said = f"; profile written to {out} (and off-cpu in {tmp}/oc.off-cpu.svg)\n"
    if said not in err:
        raise Fail(f"the summary does not name both files: want {said!r}")
    if sorted(os.listdir(tmp)) != ["oc.off-cpu.svg", "oc.svg"]:
        raise Fail(f"files: {sorted(os.listdir(tmp))}")
    title, frames, _ = read_svg(out)
    check_title(title, " ".join(cmd), "(?:cpu-clock|cycles)", 300)
    one(frames, "spin_leaf")
    title, frames, total = read_svg(os.path.join(tmp, "oc.off-cpu.svg"))
    check_title(title, " ".join(cmd), "off-CPU time", 20)
    leaf = one(frames, "sleep_leaf")
    # 20 sleeps of 10 ms: 200 ms at least
    if leaf.v < 200e6 or "ms" not in leaf.title:
        raise Fail(f"sleep_leaf off-CPU: {leaf.v} ns, {leaf.title!r}")

    status, err = tr.run_record(["--off-cpu", "--format", "svg", "-o", "-", "--", *cmd],
                                check=False)
    last = err.strip().splitlines()
    want = "cfiprof: - is not a file: the off-cpu flame graph"
    if status == 0 or not any(line.startswith(want) for line in last):
        raise Fail(f"-o -: status {status}, stderr {err!r}; want non-zero and {want!r}")


def folded_from_pprof(samples, index):
    """What folded stacks of value `index` must be: comm, root first
    frames, summed, zero sums dropped, sorted bytewise."""
    sums = {}
    for s in samples:
        key = ";".join([s.labels.get("comm", "unknown")] + s.frames)
        sums[key] = sums.get(key, 0) + s.values[index]
    return "".join(f"{k} {v}\n" for k, v in sorted(sums.items(), key=lambda kv: kv[0].encode())
                   if v)


@case("convert")
def t_convert(tmp):
    """`cfiprof convert` of a recording: the folded stacks are the pprof's
    samples summed per stack (decoded here by test_record.py's own protobuf
    reader), the flame graph well-formed with the cpu total as its root;
    from stdin the same."""
    pb = os.path.join(tmp, "shlib.pb.gz")
    tr.run_record(["-F", "499", "-o", pb, "--", tr.fx("shlib"), "1"])
    samples, prof = tr.read_pprof(pb)
    if prof["sample_type"][:2] != [("samples", "count"), ("cpu", "nanoseconds")]:
        raise Fail(f"sample types {prof['sample_type']}")
    folded = os.path.join(tmp, "shlib.folded")
    subprocess.run([tr.CFIPROF, "convert", pb, "-o", folded], check=True)
    with open(folded) as f:
        got = f.read()
    want = folded_from_pprof(samples, 0)
    if got != want:
        raise Fail(f"convert's folded differs from the pprof's samples:\n{got}\n---\n{want}")
    if sum(int(line.rpartition(" ")[2]) for line in got.splitlines()) < 300:
        raise Fail("too few samples")
    with open(pb, "rb") as f:
        p = subprocess.run([tr.CFIPROF, "convert", "-", "--format", "folded"], stdin=f,
                           stdout=subprocess.PIPE, check=True, text=True)
    if p.stdout != want:
        raise Fail("convert from stdin differs")

    svg = os.path.join(tmp, "shlib.svg")
    subprocess.run([tr.CFIPROF, "convert", pb, "-o", svg], check=True)
    title, frames, total = read_svg(svg)
    check_title(title, pb, "on-CPU", 300)
    cpu = sum(s.values[1] for s in samples if s.values[1] > 0)
    if total != cpu or frames[0].v != cpu:
        raise Fail(f"root {frames[0].v}, total {total}; the samples' cpu sum {cpu}")
    log(f"convert: {len(got.splitlines())} stacks, {len(frames)} frames, {cpu} ns")


if __name__ == "__main__":
    sys.exit(tr.main())
