#!/usr/bin/env bash
# The HTML report in a real browser: headless Chromium renders the page of
# a racy trace, and the checks read the DOM it produced (the page's script
# has run: the current operation's stack is in the panel), then click an
# operation and check the panel shows its stack, and check in the rendered
# layout that no two operations overlap. Exits 77 (skipped) without
# Chromium (tools/setup installs Debian's `chromium`).
#   browser_test.sh STREAMSAN GOLDEN_TRACE_TOOL
set -u
streamsan=$1 golden_trace=$2
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then
  echo "SKIP: no chromium"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$golden_trace" event_recorded_early "$dir/t.trace" || exit 1
"$streamsan" analyze "$dir/t.trace" --source-root /home/user/app --format html -o "$dir/report.html"
status=$?
if [[ $status -ne 66 ]]; then
  echo "FAIL: streamsan analyze --format html exited $status (expected 66)"
  exit 1
fi

# A copy of the page whose extra script clicks the previous operation and
# measures the laid-out boxes, leaving its findings in the DOM.
python3 - "$dir/report.html" "$dir/probe.html" <<'PY'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
probe = """<script>
(function () {
  var out = [];
  var previous = document.querySelector('.op.previous');
  previous.dispatchEvent(new MouseEvent('click', {bubbles: true}));
  var panel = document.querySelector('.stack-panel');
  out.push('showing=' + panel.getAttribute('data-showing'));
  out.push('expected=' + previous.getAttribute('data-stack'));
  out.push('selected=' + document.querySelectorAll('.op.selected').length);
  out.push('panel=' + panel.textContent.replace(/\\s+/g, ' '));
  var boxes = Array.prototype.map.call(document.querySelectorAll('.op rect'), function (r) {
    return r.getBoundingClientRect();
  });
  var svg = document.querySelector('svg').getBoundingClientRect();
  var overlaps = 0, outside = 0;
  for (var i = 0; i < boxes.length; ++i) {
    var a = boxes[i];
    if (a.width <= 0 || a.left < svg.left || a.right > svg.right || a.top < svg.top || a.bottom > svg.bottom) ++outside;
    for (var j = i + 1; j < boxes.length; ++j) {
      var b = boxes[j];
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) ++overlaps;
    }
  }
  out.push('boxes=' + boxes.length + ' overlaps=' + overlaps + ' outside=' + outside);
  var result = document.createElement('pre');
  result.id = 'probe';
  result.textContent = out.join('\\n');
  document.body.appendChild(result);
})();
</script>
</body>"""
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("</body>", probe, 1))
PY

render() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --window-size=1280,900 --virtual-time-budget=2000 --dump-dom "file://$1" \
    2>"$dir/browser.log"
}
render "$dir/report.html" >"$dir/dom.html" || { echo "FAIL: chromium"; cat "$dir/browser.log"; exit 1; }
render "$dir/probe.html" >"$dir/probe-dom.html" || { echo "FAIL: chromium"; cat "$dir/browser.log"; exit 1; }

python3 - "$dir/dom.html" "$dir/probe-dom.html" <<'PY'
import re, sys
from html.parser import HTMLParser

class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elements = []   # (tag, attrs)
        self.text = {}       # id -> text
        self._capture = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if "id" in a or a.get("class", "").startswith("stack-panel"):
            self._capture.append([a.get("id") or "stack-panel", tag, ""])
    def handle_endtag(self, tag):
        if self._capture and self._capture[-1][1] == tag:
            key, _, text = self._capture.pop()
            self.text.setdefault(key, text)
            if self._capture:
                self._capture[-1][2] += text
    def handle_data(self, data):
        if self._capture:
            self._capture[-1][2] += data

def parse(path):
    dom = Dom()
    dom.feed(open(path, encoding="utf-8").read())
    return dom

failures = []
def check(condition, message):
    if not condition:
        failures.append(message)

dom = parse(sys.argv[1])
classes = [a.get("class", "") for _, a in dom.elements]
lanes = [a["data-lane"] for t, a in dom.elements if "data-lane" in a]
ops = [a for t, a in dom.elements if t == "g" and a.get("class", "").startswith("op")]
edges = [a for t, a in dom.elements if t == "path" and a.get("class", "").startswith("edge")]
check(sum(1 for c in classes if c == "warning") == 1, "one warning section")
check(lanes == ["stream#1", "stream#2"], f"lanes {lanes}")
check(len(ops) == 4, f"{len(ops)} operations, expected record, k_write, wait, k_read")
check(sum("conflict" in a["class"] for a in ops) == 2, "two conflicting operations")
kinds = sorted(a.get("data-kind", "missing") for a in edges)
check(kinds == ["event", "missing"], f"edges {kinds}")
missing = [a for a in edges if "missing" in a["class"]]
current = [a for a in ops if "current" in a["class"]]
previous = [a for a in ops if "previous" in a["class"]]
check(missing and previous and current and missing[0]["data-from"] == previous[0]["data-index"]
      and missing[0]["data-to"] == current[0]["data-index"], "the missing edge joins the pair")
# The page's script ran: the current operation is selected, its stack shown.
panel = [a for t, a in dom.elements if a.get("class") == "stack-panel"]
check(panel and panel[0].get("data-showing") == current[0]["data-stack"],
      "the panel shows the current operation after load")
check(any("selected" in a["class"] for a in current), "the current operation is selected")
check("launch of k_read<<<…>>> from main at event_recorded_early.cu:43" in dom.text.get("stack-panel", ""),
      "the panel holds k_read's stack: " + dom.text.get("stack-panel", "")[:200])

probe = parse(sys.argv[2]).text.get("probe", "")
fields = dict(line.split("=", 1) for line in probe.splitlines() if "=" in line)
check(fields.get("showing") == fields.get("expected"), f"click shows the clicked stack: {probe}")
check(fields.get("selected") == "1", "one operation selected after the click")
check("launch of k_write<<<…>>> from main at event_recorded_early.cu:41" in fields.get("panel", ""),
      "the panel holds k_write's stack after the click")
boxes = fields.get("boxes", "")
check(boxes.startswith("4 ") and "overlaps=0" in boxes and "outside=0" in boxes, f"layout: {boxes}")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS: rendered DOM has 2 lanes, 4 operations, the event edge and the missing edge; "
      "clicking shows stacks; " + boxes)
PY
