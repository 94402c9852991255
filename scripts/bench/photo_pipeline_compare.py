#!/usr/bin/env python3
"""Issue 4's benchmark (b) in one go: fastnn's pipeline vs its same-run ceiling, with and without
crop-window + DCT-scaled JPEG decode, and PyTorch's DataLoader on the same JPEGs, in alternating runs.

Each round runs, in an order that rotates from round to round:
  fastnn bench pipeline --preset inception (224, crop-window + DCT-scaled decode: the default)
  the same with --no-crop-decode --no-dct-scale (whole image decoded at full size)
  scripts/peers/torch_dataloader_bench.py (ImageFolder, RandomResizedCrop(224), flip, ToTensor,
  Normalize, --workers = --threads)
and prints each run's JSON line, then a table of medians. Besides images/s, every run reports the CPU
time it got: on a shared machine a process may get less than its threads' worth of cores, so
images per CPU second (load-independent) is shown beside the wall-clock rates.

  /usr/bin/python3 scripts/bench/photo_pipeline_compare.py --fastnn build/bin/fastnn \\
      --folder /tmp/photos --shards /tmp/photos-tfr --rounds 3

--folder: class subfolders of JPEGs (scripts/bench/make_photo_folder.py makes one from real photos);
--shards: `fastnn convert image-folder` of it (made here when missing).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "peers", "torch_dataloader_bench.py")


def run_json(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    return json.loads(line)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fastnn", required=True)
    p.add_argument("--folder", required=True)
    p.add_argument("--shards", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=40, help="fastnn: timed batches per run")
    p.add_argument("--torch-steps", type=int, default=24,
                   help="PyTorch: timed batches per run (its workers hold up to 2 x workers batches ready "
                        "when the clock starts, which flatters short runs)")
    p.add_argument("--python", default="/usr/bin/python3")
    a = p.parse_args()

    if not os.path.exists(os.path.join(a.shards, "manifest.json")):
        subprocess.run([a.fastnn, "convert", "image-folder", "-i", a.folder, "-o", a.shards, "--num-gpus", "1",
                        "--shards-per-gpu", "4", "-q"], check=True)
    base = [a.fastnn, "bench", "pipeline", "--data", a.shards, "--preset", "inception", "--image-size", "224",
            "--batch-size", str(a.batch_size), "--threads", str(a.threads), "--steps", str(a.steps), "--json"]
    runs = {
        "fastnn": base,
        "fastnn_full_decode": base + ["--no-crop-decode", "--no-dct-scale"],
        "torch": [a.python, PEER, "--folder", a.folder, "--batch-size", str(a.batch_size), "--workers",
                  str(a.threads), "--steps", str(a.torch_steps)],
    }
    names = list(runs)
    results = {n: [] for n in names}
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            j = run_json(runs[n])
            j["run"] = n
            j["round"] = r
            with open("/proc/loadavg") as f:
                j["loadavg_1min"] = float(f.read().split()[0])
            print(json.dumps(j), flush=True)
            results[n].append(j)

    def med(n, key):
        vals = [j[key] for j in results[n] if j.get(key) is not None]
        return statistics.median(vals) if vals else float("nan")

    print(f"\nmedians of {a.rounds} alternating rounds; batch {a.batch_size}, {a.threads} threads/workers, 224x224")
    print(f"{'run':<20}{'images/s':>10}{'ceiling':>10}{'of ceil':>9}{'img/CPU-s':>11}{'ceil img/CPU-s':>16}"
          f"{'CPU eff':>9}{'cores':>7}")
    for n in ("fastnn", "fastnn_full_decode"):
        print(f"{n:<20}{med(n, 'images_per_sec'):>10.0f}{med(n, 'ceiling_images_per_sec'):>10.0f}"
              f"{med(n, 'fraction_of_ceiling'):>9.2f}{med(n, 'images_per_cpu_sec'):>11.0f}"
              f"{med(n, 'ceiling_images_per_cpu_sec'):>16.0f}{med(n, 'cpu_efficiency'):>9.2f}{med(n, 'cpu_cores'):>7.2f}")
    print(f"{'torch':<20}{med('torch', 'images_per_sec'):>10.0f}{'':>10}{'':>9}{med('torch', 'images_per_cpu_sec'):>11.0f}"
          f"{'':>16}{'':>9}{med('torch', 'cpu_cores'):>7.2f}")
    # Ratios per round (same round = closest in time), then their median.
    def ratio(x, y, key):
        return statistics.median(results[x][i][key] / results[y][i][key] for i in range(a.rounds))
    print(f"crop-window + DCT gain: {ratio('fastnn', 'fastnn_full_decode', 'images_per_sec'):.2f}x images/s, "
          f"{ratio('fastnn', 'fastnn_full_decode', 'images_per_cpu_sec'):.2f}x images per CPU second")
    print(f"fastnn / PyTorch: {ratio('fastnn', 'torch', 'images_per_sec'):.2f}x images/s, "
          f"{ratio('fastnn', 'torch', 'images_per_cpu_sec'):.2f}x images per CPU second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
