#!/usr/bin/env python3
"""`fastnn serve` throughput and latency beside onnxruntime on the exported model, in the same run.

    python3 scripts/bench/serve_bench.py --fastnn build/bin/fastnn [--work /tmp/serve_bench]
        [--models lenet,resnet_v1_50] [--concurrency 1,8,32] [--seconds 10] [--ort-python PY]
        [--torch-python PY [--torch-modes eager,compile]]

For each model: a checkpoint (LeNet: 50 steps on real Fashion-MNIST; ResNet-50 and MobileNet v2: random
initialisation, one step at learning rate 0 on synthetic data; the weights do not change the work),
`fastnn export` of it, and the request images (LeNet: Fashion-MNIST test images as PNGs; the others: the
JPEG photographs scripts/setup.sh fetched, 640x427). Then, at each concurrency C (C client threads, one
keep-alive connection each, raw image bodies; after one warm-up request per client, requests for
--seconds and at least two per client; throughput = requests / time to the last answer, latency p50/p99
over all of them):
  - fastnn bN dD: `fastnn serve --max_batch N --max_delay_ms D` for each N:D of --fastnn-configs (default
    32:0 the defaults, 32:2 waiting 2 ms for company, 1:0 one image per forward); N:D:bf16 adds
    `--precision bf16`;
  - ort-http: onnxruntime on the exported model behind a minimal Python http.server (ThreadingHTTPServer,
    one session shared, batch 1 per request: no batching), preprocessing by PIL + numpy from the model's
    metadata;
  - torch-eager-http, torch-compile-http (with --torch-python): the same server around PyTorch running the
    same network (scripts/peers/torch_cpu_train_bench.py's twin of the zoo net: lenet, resnet_v1_50,
    mobilenet_v2; random weights), evaluation mode, channels_last; compile = torch.compile with inductor's
    freezing (batch norm folded into the convolutions, as fastnn's inference plans do);
and, without HTTP, each peer's forward on preprocessed random tensors at batch 1, 8 and 32 (ort-inproc,
torch-*-inproc). The servers are separate processes; the clients are this script's threads (one Python
process, the same for every server). Everything shares this machine's cores. Prints one JSON line per
measurement and a table. The peers are optional (pip install onnxruntime / torch, numpy, pillow, onnx).
"""
import argparse
import gzip
import http.client
import json
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FASHION = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
PHOTOS = os.environ.get("FASTNN_SAMPLE_IMAGES", "/var/cache/fastnn/sample-images")


# --------------------------------------------------------------------------------------- peer servers
def input_metadata(model_path):
    """(h, w, c, classes, mean, scale) from the exported model: its fastnn.input_* metadata and logits."""
    import numpy as np
    import onnx

    m = onnx.load(model_path, load_external_data=False)
    md = {p.key: p.value for p in m.metadata_props}
    h, w, c = (int(md["fastnn.input_" + k]) for k in ("height", "width", "channels"))
    classes = m.graph.output[0].type.tensor_type.shape.dim[1].dim_value
    mean = np.array([float(v) for v in md["fastnn.input_mean"].split(",")], np.float32).reshape(-1, 1, 1)
    scale = np.array([float(v) for v in md["fastnn.input_scale"].split(",")], np.float32).reshape(-1, 1, 1)
    return h, w, c, classes, mean, scale


def ort_forward(model_path, threads):
    """onnxruntime on the exported model: a function from an NCHW float32 batch to its logits."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    return lambda x: sess.run(None, {"images": x})[0]


def torch_forward(model, model_path, threads, mode):
    """PyTorch on the same network (scripts/peers/torch_cpu_train_bench.py's twin of the zoo net, random
    weights: the work does not depend on them), evaluation mode, channels_last, inference_mode.
    mode eager: as written; compile: torch.compile with inductor's freezing (weights constant, batch norm
    folded into the convolutions, as fastnn's inference plans fold it); compile-bf16: the same under CPU
    autocast to bfloat16 (the peer of `--precision bf16`). The first call per batch size compiles."""
    import numpy as np
    import torch

    sys.path.insert(0, os.path.join(ROOT, "scripts", "peers"))
    from torch_cpu_train_bench import build_net

    torch.set_num_threads(threads)
    h, w, c, classes, _, _ = input_metadata(model_path)
    net = build_net(model, classes).eval().to(memory_format=torch.channels_last)
    bf16 = mode == "compile-bf16"
    if mode in ("compile", "compile-bf16"):
        import torch._inductor.config as inductor_config
        inductor_config.freezing = True
        # A static graph per batch size: after a second size torch.compile would trace a dynamic one, and
        # PyTorch 2.15's frozen channels_last LeNet then failed its own stride check at batch 8.
        net = torch.compile(net, dynamic=False)

    def forward(x):
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            t = torch.from_numpy(np.ascontiguousarray(x)).contiguous(memory_format=torch.channels_last)
            return net(t).float().numpy()
    return forward


def make_forward(peer, model, model_path, threads):
    if peer == "ort":
        return ort_forward(model_path, threads)
    return torch_forward(model, model_path, threads, peer.split("-", 1)[1])


def peer_server(peer, model, model_path, threads):
    """Runs a peer (ort, torch-eager, torch-compile) behind http.server; prints the port, serves POST
    /v1/classify until SIGTERM."""
    import io
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import numpy as np
    from PIL import Image

    h, w, c, _, mean, scale = input_metadata(model_path)
    forward = make_forward(peer, model, model_path, threads)
    forward(np.zeros((1, c, h, w), np.float32))  # a compiled peer compiles here, before it listens

    def preprocess(body):
        img = Image.open(io.BytesIO(body))
        img = img.convert("L" if c == 1 else "RGB")
        if img.size != (w, h):
            img = img.resize((w, h), Image.BILINEAR)
        x = np.asarray(img, np.float32).reshape(h, w, c).transpose(2, 0, 1)
        return ((x - mean) * scale)[None]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stall

        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            logits = forward(preprocess(body))[0]  # concurrent requests run concurrently (one shared model)
            e = np.exp(logits - logits.max())
            p = e / e.sum()
            top = np.argsort(-logits)[:5]
            out = json.dumps({"predictions": [{"source": 0, "label": int(top[0]),
                                               "topk": [[int(k), float(p[k])] for k in top]}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 256  # the default backlog (5) resets 32 simultaneous connects
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening on http://127.0.0.1:{srv.server_address[1]}", flush=True)
    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=srv.shutdown).start())
    srv.serve_forever()


def peer_inproc(peer, model, model_path, threads, batches, seconds):
    """The peer's forward on random preprocessed batches, no decoding, no HTTP: images/s per batch size."""
    import numpy as np

    h, w, c, _, _, _ = input_metadata(model_path)
    forward = make_forward(peer, model, model_path, threads)
    rng = np.random.default_rng(0)
    out = []
    for b in batches:
        x = rng.standard_normal((b, c, h, w), dtype=np.float32)
        forward(x)
        n, t0 = 0, time.perf_counter()
        lat = []
        while time.perf_counter() - t0 < seconds or n < 3:
            t = time.perf_counter()
            forward(x)
            lat.append(time.perf_counter() - t)
            n += 1
        dt = time.perf_counter() - t0
        out.append({"batch": b, "images_per_s": n * b / dt, "batch_ms_p50": 1e3 * statistics.median(lat), "runs": n})
    return out


# ------------------------------------------------------------------------------------------- client
def measure(port, bodies, ctype, concurrency, seconds, min_per_client=2):
    """C clients, one keep-alive connection each. Each first sends one warm-up request (not counted); when
    all have, the clock starts and each sends requests until `seconds` have passed and it has made at least
    `min_per_client`. Throughput: counted requests / (last answer - start); latency: each request's."""
    lat, errors = [], []
    lock = threading.Lock()
    t_start = [0.0]
    # The action runs before any thread leaves the barrier: every client sees the start time.
    warmed = threading.Barrier(concurrency + 1, action=lambda: t_start.__setitem__(0, time.perf_counter()))
    t_last = [0.0]

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        mine, i, ok = [], k, False
        try:
            for phase in ("warm-up", "measure"):
                while True:
                    if phase == "measure":
                        now = time.perf_counter()
                        if now >= t_start[0] + seconds and len(mine) >= min_per_client:
                            break
                    t = time.perf_counter()
                    conn.request("POST", "/v1/classify", body=bodies[i % len(bodies)], headers={"Content-Type": ctype})
                    i += concurrency
                    r = conn.getresponse()
                    r.read()
                    if r.status != 200:
                        raise RuntimeError(f"status {r.status}")
                    if phase == "warm-up":
                        break
                    mine.append(time.perf_counter() - t)
                if phase == "warm-up":
                    warmed.wait()
                    # Waiting for the slowest warm-up may outlast the server's keep-alive timeout: reconnect.
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
            ok = True
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
            warmed.abort()
        finally:
            conn.close()
            with lock:
                lat.extend(mine)
                if ok:
                    t_last[0] = max(t_last[0], time.perf_counter())

    threads = [threading.Thread(target=client, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    try:
        warmed.wait()
    except threading.BrokenBarrierError:
        pass
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} clients failed: {errors[0]}")
    lat.sort()
    n = len(lat)
    return {"requests": n, "req_per_s": n / (t_last[0] - t_start[0]),
            "p50_ms": 1e3 * lat[n // 2], "p99_ms": 1e3 * lat[min(n - 1, int(0.99 * n))]}


def start_server(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if "listening on" not in line:
        p.kill()
        raise RuntimeError(f"{cmd[0]} did not start: {line!r}")
    return p, int(line.strip().rsplit(":", 1)[1])


def stop_server(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()


# -------------------------------------------------------------------------------------------- setup
def png_gray(w, h, pixels):
    raw = b"".join(b"\x00" + pixels[r * w:(r + 1) * w] for r in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def run(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def setup(model, fastnn, work):
    d = os.path.join(work, model)
    os.makedirs(d, exist_ok=True)
    if model == "lenet":
        if not os.path.exists(os.path.join(d, "run", "checkpoint")):
            run([fastnn, "convert", "mnist", "--input", FASHION, "--output", os.path.join(d, "data"), "--num-gpus", "1",
                 "--shards-per-gpu", "2", "-q", "--overwrite"])
            run([fastnn, "train", "--model_name=lenet", "--dataset_dir=" + os.path.join(d, "data"),
                 "--output_dir=" + os.path.join(d, "run"), "--batch_size=64", "--stop_at_step=50", "--device=cpu"])
        data = gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")).read()
        bodies = [png_gray(28, 28, data[16 + i * 784:16 + (i + 1) * 784]) for i in range(256)]
        ctype = "image/png"
    else:
        if not os.path.exists(os.path.join(d, "run", "checkpoint")):
            run([fastnn, "convert", "synthetic", "-o", os.path.join(d, "syn"), "--num-gpus", "1", "--shards-per-gpu", "1",
                 "--num-records", "8", "-q", "--overwrite"])
            run([fastnn, "train", "--model_name=" + model, "--dataset_dir=" + os.path.join(d, "syn"),
                 "--output_dir=" + os.path.join(d, "run"), "--batch_size=2", "--stop_at_step=1", "--learning_rate=0",
                 "--device=cpu"])
        bodies = [open(os.path.join(PHOTOS, f), "rb").read() for f in sorted(os.listdir(PHOTOS)) if f.endswith(".jpg")]
        if not bodies:
            raise SystemExit(f"no JPEG photographs in {PHOTOS} (scripts/setup.sh fetches them)")
        ctype = "image/jpeg"
    onnx_path = os.path.join(d, "model.onnx")
    if not os.path.exists(onnx_path):
        run([fastnn, "export", "--checkpoint", os.path.join(d, "run"), "-o", onnx_path, "-q"])
    return os.path.join(d, "run"), onnx_path, bodies, ctype


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fastnn", default=os.path.join(ROOT, "build", "bin", "fastnn"))
    ap.add_argument("--work", default="/tmp/fastnn_serve_bench")
    ap.add_argument("--models", default="lenet,resnet_v1_50")
    ap.add_argument("--concurrency", default="1,8,32")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per point (after 1 s of warm-up)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="compute threads of onnxruntime")
    ap.add_argument("--fastnn-configs", default="32:0,32:2,1:0",
                    help="fastnn serve settings to measure, MAX_BATCH:MAX_DELAY_MS[:bf16], comma-separated, one server each")
    ap.add_argument("--ort-python", default=sys.executable, help="a python with onnxruntime, numpy, PIL, onnx")
    ap.add_argument("--torch-python", help="a python with torch, numpy, PIL, onnx: PyTorch peers too")
    ap.add_argument("--torch-modes", default="eager,compile", help="PyTorch peers: eager, compile (torch.compile)")
    ap.add_argument("--peer-server", nargs=3, metavar=("PEER", "MODEL", "ONNX"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer_server:
        return peer_server(*a.peer_server, a.threads)

    def importable(py, modules):
        return bool(py) and shutil.which(py) is not None and subprocess.run(
            [py, "-c", "import " + modules], stderr=subprocess.DEVNULL).returncode == 0
    peers = []  # (peer, python)
    if importable(a.ort_python, "onnxruntime, numpy, PIL, onnx"):
        peers.append(("ort", a.ort_python))
    else:
        print(f"onnxruntime, numpy, PIL or onnx not importable by {a.ort_python}: no onnxruntime peer", file=sys.stderr)
    if a.torch_python:
        if importable(a.torch_python, "torch, numpy, PIL, onnx"):
            peers += [("torch-" + m, a.torch_python) for m in a.torch_modes.split(",")]
        else:
            print(f"torch, numpy, PIL or onnx not importable by {a.torch_python}: no PyTorch peer", file=sys.stderr)
    conc = [int(c) for c in a.concurrency.split(",")]
    rows = []
    for model in a.models.split(","):
        ckpt, onnx_path, bodies, ctype = setup(model, a.fastnn, a.work)
        servers = []
        for cfg in a.fastnn_configs.split(","):
            mb, delay, *precision = cfg.split(":")
            extra = ["--precision", precision[0]] if precision else []
            name = f"fastnn b{mb} d{delay}" + (f" {precision[0]}" if precision else "")
            servers.append((name, [a.fastnn, "serve", "--checkpoint", ckpt, "--port", "0", "--device",
                                   "cpu", "-q", "--max_batch", mb, "--max_delay_ms", delay,
                                   "--threads", "64", "--queue", "4096"] + extra))
        for peer, py in peers:
            servers.append((peer + "-http", [py, os.path.abspath(__file__), "--peer-server", peer, model, onnx_path,
                                             "--threads", str(a.threads)]))
        for name, cmd in servers:
            p, port = start_server(cmd)
            try:
                for c in conc:
                    r = {"model": model, "server": name, "concurrency": c, **measure(port, bodies, ctype, c, a.seconds)}
                    print(json.dumps(r), flush=True)
                    rows.append(r)
            finally:
                stop_server(p)
        for peer, py in peers:
            code = ("import json, sys; sys.path.insert(0, %r); import serve_bench as b; "
                    "print(json.dumps(b.peer_inproc(%r, %r, %r, %d, [1, 8, 32], %f)))"
                    % (HERE, peer, model, onnx_path, a.threads, a.seconds / 2))
            run = subprocess.run([py, "-c", code], capture_output=True, text=True)
            if run.returncode != 0:  # one peer's failure costs its rows, not the run's other results
                print(f"{peer}-inproc failed (exit {run.returncode}): {run.stderr.strip()[-2000:]}", file=sys.stderr)
                continue
            res = json.loads(run.stdout.splitlines()[-1])
            for r in res:
                r = {"model": model, "server": peer + "-inproc", **r}
                print(json.dumps(r), flush=True)
                rows.append(r)
    print()
    print(f"{'model':<14}{'server':<22}{'conc/batch':>11}{'req/s | img/s':>15}{'p50 ms':>10}{'p99 ms':>10}")
    for r in rows:
        if r["server"].endswith("-inproc"):
            print(f"{r['model']:<14}{r['server']:<22}{'b' + str(r['batch']):>11}{r['images_per_s']:>15.1f}"
                  f"{r['batch_ms_p50']:>10.2f}{'':>10}")
        else:
            print(f"{r['model']:<14}{r['server']:<22}{r['concurrency']:>11}{r['req_per_s']:>15.1f}"
                  f"{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}")


if __name__ == "__main__":
    main()
