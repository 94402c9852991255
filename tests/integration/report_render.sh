#!/usr/bin/env bash
# Both picture pages render in a real browser: headless Chromium (Debian package `chromium`) loads
# `check --report`'s page and `fastnn report`'s page from file:// with the network off, the DOM it built
# holds every section, the sample <img> elements and the charts' SVG, and a screenshot of each is a
# picture, not a blank page: its pixels vary, and the charts' colours (#1f77b4, #ff7f0e) and the sample
# images' grays are there. Exit 77 (skipped) when no Chromium is installed or Fashion-MNIST is not.
FASTNN=$1 SRC=$2 SCRATCH=$3
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROMIUM" ] || { echo "skip: no chromium (apt-get install chromium)"; exit 77; }
[ -f "$DATA_SRC/train-images-idx3-ubyte.gz" ] || { echo "skip: $DATA_SRC has no Fashion-MNIST"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
export PYTHONPATH="$SRC/tests/integration"

"$FASTNN" convert mnist --input "$DATA_SRC" --output data --num-gpus 1 --shards-per-gpu 2 -q > /dev/null || fail "convert"
"$FASTNN" check data -q --report check.html > /dev/null || fail "check --report"
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=run --batch_size=64 --stop_at_step=20 \
  --log_loss_every_n_iters=5 --learning_rate=0.01 --device=cpu > train.log 2>&1 || { cat train.log; fail "train"; }
"$FASTNN" report run -o run.html > /dev/null || fail "report"

# Chromium: no sandbox (containers, root), no GPU, its own profile, nothing fetched from a network.
chrome() {
  timeout 180 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$SCRATCH/profile" --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' "$@" 2> chrome.err
}
for page in check run; do
  chrome --dump-dom "file://$SCRATCH/$page.html" > $page.dom.html || { tail chrome.err; fail "chromium --dump-dom $page"; }
  chrome --screenshot="$SCRATCH/$page.png" --window-size=1000,1400 "file://$SCRATCH/$page.html" > /dev/null ||
    { tail chrome.err; fail "chromium --screenshot $page"; }
  [ -s $page.png ] || fail "no screenshot of $page"
done

python3 - <<'PY' || fail "rendered pages"
import png_pixels, report_page_data as rp

def colours(path):
    w, h, c, rows = png_pixels.decode(open(path, "rb").read())
    assert (w, h) == (1000, 1400), (w, h)
    seen, px = set(), []
    for r in rows:
        for i in range(0, len(r), c):
            p = tuple(r[i:i + 3]) if c >= 3 else (r[i],) * 3
            seen.add(p)
    return seen, png_pixels.stddev(rows)

def near(seen, rgb, tol=6):
    return any(all(abs(a - b) <= tol for a, b in zip(p, rgb)) for p in seen)

for page, sections in (("check", ["summary", "classes", "samples", "balance", "sizes", "channels", "problems"]),
                       ("run", ["curves", "confusion", "misclassified", "notes"])):
    dom = rp.parse(f"{page}.dom.html")  # what Chromium built, serialized back
    assert dom.sections == sections, (page, dom.sections)
    seen, sd = colours(f"{page}.png")
    assert sd > 8, f"{page}.png looks blank (pixel stddev {sd:.1f})"
    assert near(seen, (0x1f, 0x77, 0xb4)), f"{page}.png: no chart blue"
    if page == "check":
        assert len(dom.images) == 80, len(dom.images)
        grays = {p for p in seen if p[0] == p[1] == p[2] and 40 < p[0] < 200}
        assert len(grays) > 50, f"check.png: {len(grays)} gray levels, the sample images are not drawn"
    else:
        assert any(p["data-name"] == "train loss" for _, p in dom.polylines), "no loss curve in the DOM"
        assert near(seen, (0xff, 0x7f, 0x0e)) or near(seen, (0xfd, 0xd7, 0xb0), 30), "run.png: no second colour"
    print(f"{page}: sections {sections}, screenshot stddev {sd:.1f}, {len(seen)} colours")
PY
echo PASS
