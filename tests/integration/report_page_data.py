#!/usr/bin/env python3
"""Reads a fastnn report page (check --report, fastnn report) with the standard library's html.parser:
the JSON data block, the section ids, the <img> elements, the SVG polylines and their axis mapping, the
text of the tables. Used by report_pages.sh and report_render.sh; `python3 report_page_data.py PAGE`
prints a summary."""
import html.parser
import json
import sys


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.data = None
        self.sections = []
        self.images = []        # attribute dicts
        self.polylines = []     # (svg attrs, polyline attrs)
        self.scripts = []       # attribute dicts of every <script>
        self.texts = []
        self.cells = []         # attribute dicts of <td> with data-v
        self._svg = None
        self._in_data = False
        self._buf = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        elif tag == "img":
            self.images.append(a)
        elif tag == "svg":
            self._svg = a
        elif tag == "polyline":
            self.polylines.append((self._svg, a))
        elif tag == "td" and "data-v" in a:
            self.cells.append(a)
        elif tag == "script":
            self.scripts.append(a)
            if a.get("type") == "application/json" and a.get("id") == "data":
                self._in_data = True
                self._buf = []

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None
        elif tag == "script" and self._in_data:
            self._in_data = False
            self.data = json.loads("".join(self._buf))

    def handle_data(self, d):
        if self._in_data:
            self._buf.append(d)
        else:
            self.texts.append(d)

    def text(self):
        return " ".join(t.strip() for t in self.texts if t.strip())


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.close()
    assert p.data is not None, f"{path}: no <script type=application/json id=data>"
    return p


def points(svg, polyline):
    """The polyline's points turned back into data coordinates through the svg's data-* mapping."""
    x0, x1 = float(svg["data-x-min"]), float(svg["data-x-max"])
    y0, y1 = float(svg["data-y-min"]), float(svg["data-y-max"])
    left, top, w, h = map(float, svg["data-plot"].split())
    out = []
    for p in polyline["points"].split():
        px, py = map(float, p.split(","))
        out.append((x0 + (px - left) / w * (x1 - x0), y1 - (py - top) / h * (y1 - y0)))
    tol = (0.006 * (x1 - x0) / w, 0.006 * (y1 - y0) / h)  # coordinates carry 2 decimals
    return out, tol


if __name__ == "__main__":
    page = parse(sys.argv[1])
    print(json.dumps({"sections": page.sections, "images": len(page.images), "polylines": len(page.polylines),
                      "kind": page.data.get("kind")}))
