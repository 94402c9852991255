#!/usr/bin/env python3
"""Soak of `fastnn serve` under good and hostile clients at once: its memory stays under the bound its flags
imply (docs/INFERENCE.md, "Limits"), every good request is answered, and it stops cleanly.

    python3 scripts/bench/serve_soak.py --fastnn build/bin/fastnn [--seconds 60] [--clients 64]
        [--work /tmp/fastnn_serve_soak] [--hostile 0.3]

A LeNet checkpoint (50 steps on real Fashion-MNIST, as scripts/bench/serve_bench.py makes it) served on
the CPU with explicit limits (LIMITS below). Each of --clients threads has its own client address
(127.0.X.Y: Linux routes all of 127/8 to loopback) and loops until the time is up; a request is hostile with
probability --hostile, else good: one raw PNG or a base64 JSON of 1-3 images to /v1/classify or /v1/embed,
which must be answered 200 with one answer per image. Hostile requests, each with the answers it may get:
slowloris (headers a byte every 0.2 s: 408), fat_stall (900 KB of a declared 1 MiB body, then silence: 408),
gzip_bomb (200 MB of zeros gzipped: 415), chunked_over (1.2 MiB chunked: 413), deep_json (1 MiB of '[':
400), two_lengths / length_and_chunked (400), no_length (411), oversized (Content-Length 2 MiB: 413),
many_headers / huge_header (431), too_many_images (300 strings, the queue holds 256: 413), garbage (any
4xx/5xx or a close), idle (connects, sends nothing: closed after the idle wait), half_body (half a body,
then the client closes). One more thread is a greedy client: from one address it opens 100 connections at
a time, each with 512 KB of a declared 1 MiB body, then stalls: the per-address caps answer it 429 and the
deadline 408, while it must not slow the others down.
VmRSS is sampled every 0.2 s and the peak (VmHWM) compared with
    bound = baseline + max_buffered_bytes + 2 x threads x max_body_bytes
where baseline is the RSS after a warm-up that ran the largest batch. Then SIGTERM: the server must exit 0
within --grace_s + 1 s although 8 clients are still trickling requests (their deadline comes after the grace
period: they are cut by it). Prints one JSON line and a summary; exits 1 when a check fails.
"""
import argparse
import base64
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from serve_bench import setup  # noqa: E402 - the same LeNet checkpoint and PNG bodies

MIB = 1 << 20
LIMITS = {"max_body_bytes": MIB, "threads": 8, "timeout_s": 2, "max_connections": 512,
          "max_connections_per_client": 64, "max_buffered_bytes": 64 * MIB, "queue": 256, "grace_s": 1,
          "max_batch": 32}


def gzip_bomb(zeros=200_000_000):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip wrapper
    block = bytes(MIB)
    out = [c.compress(block) for _ in range(zeros // MIB)]
    return b"".join(out) + c.flush()


class Soak:
    def __init__(self, port, bodies, deadline):
        self.port, self.bodies, self.deadline = port, bodies, deadline
        self.lock = threading.Lock()
        self.good_latency = []
        self.good_failures = []
        self.hostile = {}      # kind -> {outcome: count}
        self.unexpected = []
        self.bomb = gzip_bomb()

    def record(self, kind, outcome, allowed):
        with self.lock:
            self.hostile.setdefault(kind, {}).setdefault(str(outcome), 0)
            self.hostile[kind][str(outcome)] += 1
            if outcome not in allowed:
                self.unexpected.append(f"{kind}: {outcome}")

    def connect(self, source, timeout=30):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.bind((source, 0))
        s.connect(("127.0.0.1", self.port))
        return s

    @staticmethod
    def read_status(s):
        """Status of the answer on s, or "closed" when the server closed (or reset) without one."""
        data = b""
        try:
            while b"\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except (ConnectionResetError, socket.timeout, TimeoutError):
            pass
        return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else "closed"

    def send(self, source, payload, stall=0.0):
        s = self.connect(source)
        try:
            try:
                s.sendall(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass
            if stall:
                time.sleep(stall)
            return self.read_status(s)
        finally:
            s.close()

    def good(self, source, rng):
        embed = rng.random() < 0.25
        path = "/v1/embed" if embed else "/v1/classify"
        if rng.random() < 0.5:
            n, body, ctype = 1, rng.choice(self.bodies), "image/png"
        else:
            n = rng.randint(1, 3)
            body = json.dumps({"base64_string": [base64.b64encode(rng.choice(self.bodies)).decode() for _ in range(n)]})
            ctype = "application/json"
        t0 = time.time()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30, source_address=(source, 0))
            conn.request("POST", path, body=body, headers={"Content-Type": ctype})
            r = conn.getresponse()
            data = r.read()
            conn.close()
            ok = r.status == 200 and len(json.loads(data)["instance" if embed else "predictions"]) == n
            why = f"{path}: {r.status} {data[:120]!r}"
        except Exception as e:  # noqa: BLE001 - every failure of a good request is reported
            ok, why = False, f"{path}: {e!r}"
        with self.lock:
            if ok:
                self.good_latency.append(time.time() - t0)
            else:
                self.good_failures.append(why)

    def hostile_request(self, source, rng, kind=None):
        head = b"POST /v1/classify HTTP/1.1\r\nHost: soak\r\nContent-Type: image/png\r\n"
        kind = kind or rng.choice(["slowloris", "fat_stall", "gzip_bomb", "chunked_over", "deep_json", "two_lengths",
                           "length_and_chunked", "no_length", "oversized", "many_headers", "huge_header",
                           "too_many_images", "garbage", "idle", "half_body"])
        if kind in ("slowloris", "slowloris_at_stop"):
            s = self.connect(source)
            try:
                out = "closed"
                for b in head:
                    s.send(bytes([b]))
                    time.sleep(0.2)
                    s.setblocking(False)
                    try:
                        s.recv(1, socket.MSG_PEEK)
                        break  # an answer came, or the server closed
                    except BlockingIOError:
                        pass
                    finally:
                        s.setblocking(True)
                        s.settimeout(30)
                out = self.read_status(s)
            except (BrokenPipeError, ConnectionResetError):
                out = "closed"
            finally:
                s.close()
            return self.record(kind, out, {408} if kind == "slowloris" else {"closed"})
        if kind == "fat_stall":
            return self.record(kind, self.send(source, head + b"Content-Length: %d\r\n\r\n" % MIB + bytes(900_000)), {408})
        if kind == "gzip_bomb":
            payload = head + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(self.bomb) + self.bomb
            return self.record(kind, self.send(source, payload), {415})
        if kind == "chunked_over":
            chunk = b"%x\r\n" % 65536 + os.urandom(65536) + b"\r\n"
            return self.record(kind, self.send(source, head + b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 20), {413})
        if kind == "deep_json":
            body = b"[" * (MIB - 100)
            return self.record(kind, self.send(source, head.replace(b"image/png", b"application/json") +
                                               b"Content-Length: %d\r\n\r\n" % len(body) + body), {400})
        if kind == "two_lengths":
            return self.record(kind, self.send(source, head + b"Content-Length: 3\r\nContent-Length: 30\r\n\r\nabc"), {400})
        if kind == "length_and_chunked":
            return self.record(kind, self.send(source, head + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), {400})
        if kind == "no_length":
            return self.record(kind, self.send(source, head + b"\r\n" + rng.choice(self.bodies)), {411})
        if kind == "oversized":
            return self.record(kind, self.send(source, head + b"Content-Length: %d\r\n\r\n" % (2 * MIB) + bytes(100_000)), {413})
        if kind == "many_headers":
            return self.record(kind, self.send(source, head + b"".join(b"X-%d: v\r\n" % i for i in range(100)) + b"\r\n"), {431})
        if kind == "huge_header":
            return self.record(kind, self.send(source, head + b"X: " + b"v" * 20000 + b"\r\n\r\n"), {431})
        if kind == "too_many_images":
            body = json.dumps({"base64_string": [base64.b64encode(self.bodies[0]).decode()] * 300}).encode()
            return self.record(kind, self.send(source, head.replace(b"image/png", b"application/json") +
                                               b"Content-Length: %d\r\n\r\n" % len(body) + body), {413})
        if kind == "garbage":
            out = self.send(source, bytes(rng.randrange(256) for _ in range(300)) + b"\r\n\r\n")
            return self.record(kind, out, {"closed"} | set(range(400, 600)))
        if kind == "idle":
            s = self.connect(source)
            t0 = time.time()
            out = self.read_status(s)
            s.close()
            return self.record(kind, out if time.time() - t0 < LIMITS["timeout_s"] + 1 else "held", {"closed"})
        s = self.connect(source)  # half_body
        s.sendall(head + b"Content-Length: 1000\r\n\r\n" + b"x" * 500)
        s.close()
        return self.record(kind, "sent", {"sent"})

    def client(self, k, share):
        rng = random.Random(k)
        source = f"127.0.{1 + k // 200}.{10 + k % 200}"
        while time.time() < self.deadline:
            if rng.random() < share:
                try:
                    self.hostile_request(source, rng)
                except OSError as e:
                    self.record("connect", repr(e), set())
            else:
                self.good(source, rng)

    def greedy(self):
        source = "127.0.9.1"
        head = b"POST /v1/classify HTTP/1.1\r\nHost: soak\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n" % MIB
        while time.time() < self.deadline:
            socks = []
            for _ in range(100):
                try:
                    s = self.connect(source)
                    s.sendall(head + bytes(512 * 1024))
                    socks.append(s)
                except OSError:
                    self.record("greedy", "closed", {"closed"})
            for s in socks:
                self.record("greedy", self.read_status(s), {408, 429, "closed"})
                s.close()


def rss_kb(pid, field="VmRSS"):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fastnn", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "bin", "fastnn"))
    ap.add_argument("--work", default="/tmp/fastnn_serve_soak")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--hostile", type=float, default=0.3, help="share of hostile requests per client")
    a = ap.parse_args()

    ckpt, _, bodies, _ = setup("lenet", a.fastnn, a.work)
    flags = [f"--{k}={v}" for k, v in LIMITS.items()]
    log = open(os.path.join(a.work, "serve_soak.err"), "w")
    server = subprocess.Popen([a.fastnn, "serve", "--checkpoint", ckpt, "--port", "0", "--device", "cpu", *flags],
                              stdout=subprocess.PIPE, stderr=log, text=True)
    line = server.stdout.readline()
    if "listening on" not in line:
        raise SystemExit(f"serve did not start: {line!r}")
    port = int(line.rsplit(":", 1)[1])
    # Warm-up: one request per batch size the soak can make, the largest batch (32 images) included.
    for n in (1, 2, 3, 32):
        body = json.dumps({"base64_string": [base64.b64encode(b).decode() for b in bodies[:n]]})
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", "/v1/embed", body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        conn.close()
        if r.status != 200:
            raise SystemExit(f"warm-up request of {n} images: status {r.status}")
    baseline = rss_kb(server.pid)
    bound = baseline * 1024 + LIMITS["max_buffered_bytes"] + 2 * LIMITS["threads"] * LIMITS["max_body_bytes"]

    soak = Soak(port, bodies, time.time() + a.seconds)
    samples = []
    done = threading.Event()

    def sample():
        while not done.is_set():
            samples.append(rss_kb(server.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    threads = [threading.Thread(target=soak.client, args=(k, a.hostile)) for k in range(a.clients - 1)]
    threads.append(threading.Thread(target=soak.greedy))
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - t0
    alive = server.poll() is None
    peak = rss_kb(server.pid, "VmHWM")
    done.set()
    sampler.join()
    at_stop = [threading.Thread(target=soak.hostile_request, args=(f"127.0.8.{10 + k}", None, "slowloris_at_stop"))
               for k in range(8)]
    for t in at_stop:
        t.start()
    time.sleep(0.3)  # trickling; their deadline is --timeout_s after their first byte, after the grace period
    server.send_signal(signal.SIGTERM)
    t_stop = time.time()
    try:
        rc = server.wait(timeout=LIMITS["grace_s"] + 30)
    except subprocess.TimeoutExpired:
        server.kill()
        rc = None
    stop_s = time.time() - t_stop
    for t in at_stop:
        t.join()

    lat = sorted(soak.good_latency)
    result = {
        "seconds": round(elapsed, 1), "clients": a.clients, "hostile_share": a.hostile, "limits": LIMITS,
        "good_answered": len(lat), "good_failed": len(soak.good_failures),
        "good_p50_ms": round(1000 * statistics.median(lat), 1) if lat else None,
        "good_p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 1) if lat else None,
        "good_max_ms": round(1000 * lat[-1], 1) if lat else None,
        "hostile": soak.hostile, "unexpected": len(soak.unexpected),
        "rss_baseline_mb": round(baseline / 1024, 1), "rss_peak_mb": round(peak / 1024, 1),
        "rss_max_sampled_mb": round(max(samples) / 1024, 1) if samples else None,
        "rss_bound_mb": round(bound / MIB, 1), "exit_status": rc, "exit_seconds": round(stop_s, 2),
    }
    print(json.dumps(result))
    checks = [
        (alive, "the server died during the soak"),
        (not soak.good_failures, f"{len(soak.good_failures)} good requests failed, first: "
                                 f"{soak.good_failures[0] if soak.good_failures else ''}"),
        (not soak.unexpected, f"{len(soak.unexpected)} unexpected hostile outcomes, first: "
                              f"{soak.unexpected[0] if soak.unexpected else ''}"),
        (peak * 1024 <= bound, f"peak RSS {peak / 1024:.1f} MB over the bound {bound / MIB:.1f} MB"),
        (rc == 0, f"exit status {rc} after SIGTERM"),
        (stop_s <= LIMITS["grace_s"] + 1, f"exit took {stop_s:.1f} s (grace {LIMITS['grace_s']} s)"),
    ]
    hostile_n = sum(sum(v.values()) for v in soak.hostile.values())
    print(f"good: {len(lat)} answered ({len(lat) / elapsed:.0f}/s), p50 {result['good_p50_ms']} ms, p99 "
          f"{result['good_p99_ms']} ms, max {result['good_max_ms']} ms, {len(soak.good_failures)} failed; "
          f"hostile: {hostile_n} ({len(soak.unexpected)} unexpected); RSS baseline {result['rss_baseline_mb']} MB, "
          f"peak {result['rss_peak_mb']} MB, bound {result['rss_bound_mb']} MB; exit {rc} in {stop_s:.1f} s")
    failed = [why for ok, why in checks if not ok]
    for why in failed:
        print("FAIL:", why, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
