#!/usr/bin/env python3
"""Loopback checks of `fastnn serve` (standard library only), run by serve_loopback.sh.

serve_check.py FASTNN CHECKPOINT IMAGE_DIR PREDICT_JSONL EMBEDDINGS_NPY

IMAGE_DIR holds the PNGs that PREDICT_JSONL (`fastnn predict --batch_size 1 --embeddings`) answered, in
path order. Starts the server on an ephemeral port (--port 0, the bound port read from its stdout), then:
  1. warm-up, then bounded concurrent load: CLIENTS threads x REQUESTS requests (raw PNG bodies and
     base64 JSON of 1-3 images, /v1/classify and /v1/embed) must get predict's answers;
  2. a burst of 48 simultaneous connections is answered in full; hostile requests get their status codes (truncated body, oversized body, wrong content type, not an
     image, an undecodable PNG, invalid JSON, bad base64, too many images, unknown path), and so do
     hostile framings (a gzip bomb and a brotli body: 415 without inflating; chunked over the limit:
     413; chunked under it: answered; no length: 411; two Content-Lengths, Content-Length with chunked,
     obs-fold, a bad Content-Length: 400; another transfer coding: 501; JSON nested 60 KB deep: 400),
     none of them growing the server's memory; a client that stalls mid-request is timed out while
     others are served;
  3. (first round) 2 x --threads clients trickle requests a byte at a time: others, /healthz included,
     are still answered within a second each, and the tricklers get 408 once --timeout_s has passed
     since their first byte;
  4. load + hostile three times more; the server's VmRSS must stay flat (see RSS_* below);
  5. SIGTERM with requests in flight and a client trickling: the requests are answered in full, the
     trickler is cut when --grace_s is over, and the process exits 0 within the grace period.
Exits non-zero with a message on the first failure.
"""
import base64
import gzip
import http.client
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

FASTNN, CKPT, IMAGES, PREDICT, NPY = sys.argv[1:6]
CLIENTS, REQUESTS = 8, 100
MAX_BODY = 64 * 1024
TIMEOUT_S = 2
THREADS = 16
GRACE_S = 1.5  # shorter than TIMEOUT_S: the trickler at SIGTERM is cut by the grace period, not its own deadline
# Probabilities: serve runs whatever batch the queue makes, predict ran batch 1; the CPU kernels' sum
# order depends on the batch (docs/INFERENCE.md), so they may differ in the last float32 digits.
PROB_TOL = 2e-6
EMB_TOL = 1e-5
# RSS: after warm-up the server holds the model; the first round adds a graph plan per batch size seen
# (1..16), the handler threads' stacks and buffers and the decoders' scratch (~20 MB measured), after
# which rounds repeat the same work: with MALLOC_ARENA_MAX=2, measured 73.7, 78.0, 78.6, 78.6, 78.7,
# 78.7 MB over six rounds (allocator settling in round 2, then < 0.6 MB a round). In a clean-clone CI run
# beside other tests one round added 2.8 MB (210.6, 231.5, 231.8, 234.6 MB): allocator noise of a few MB a
# round, so the check spans the last two of four rounds: together they may add at most RSS_TWO_ROUNDS_MB.
# A leak of 3 KB per request (~1100 requests a round) would break that; nothing may pass warm-up +
# RSS_TOTAL_MB.
RSS_TWO_ROUNDS_MB = 6
RSS_TOTAL_MB = 48


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def load_npy(path):
    with open(path, "rb") as f:
        assert f.read(6) == b"\x93NUMPY", "not an npy file"
        major = f.read(2)[0]
        hlen = struct.unpack("<H" if major == 1 else "<I", f.read(2 if major == 1 else 4))[0]
        header = eval(f.read(hlen).decode("latin1"))  # noqa: S307 - the test's own file
        assert header["descr"] == "<f4" and not header["fortran_order"], header
        n, d = header["shape"]
        data = f.read()
        assert len(data) == n * d * 4, (len(data), n, d)
        flat = struct.unpack("<%df" % (n * d), data)
        return [flat[i * d:(i + 1) * d] for i in range(n)]


names = sorted(os.listdir(IMAGES))
pngs = [open(os.path.join(IMAGES, n), "rb").read() for n in names]
expected = [json.loads(line) for line in open(PREDICT)]
embeddings = load_npy(NPY)
if len(expected) != len(pngs) or len(embeddings) != len(pngs):
    fail(f"{len(pngs)} images, {len(expected)} predictions, {len(embeddings)} embeddings")

server = subprocess.Popen(
    [FASTNN, "serve", "--checkpoint", CKPT, "--port", "0", "--device", "cpu", "--max_batch", "16",
     "--max_delay_ms", "2", "--queue", "64", "--max_body_bytes", str(MAX_BODY), "--threads", str(THREADS),
     "--timeout_s", str(TIMEOUT_S), "--grace_s", str(GRACE_S)],
    stdout=subprocess.PIPE, stderr=open("serve.err", "w"), text=True,
    # Two glibc arenas instead of one per handler thread: RSS then measures what is allocated, not how
    # many arenas the scheduler happened to spread 16 threads over (that alone moved it by 1-3 MB a round).
    env=dict(os.environ, MALLOC_ARENA_MAX="2"))
line = server.stdout.readline()
if not line.startswith("listening on http://127.0.0.1:"):
    fail(f"serve did not start: {line!r}; see serve.err")
PORT = int(line.rsplit(":", 1)[1])
# Under AddressSanitizer (scripts/sanitize.sh) freed memory waits in ASan's quarantine (256 MB by
# default) before it is reused, so RSS grows by design: the memory checks only apply without it.
SANITIZED = any("libasan" in l for l in open(f"/proc/{server.pid}/maps"))


def rss_kb():
    for l in open(f"/proc/{server.pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
    fail("no VmRSS")


def alive():
    if server.poll() is not None:
        fail(f"the server died with status {server.returncode}; see serve.err")


def close_enough(got, want, path):
    if got["label"] != want["label"] or got.get("name") != want.get("name"):
        fail(f"{path}: {got} vs predict's {want}")
    if [k for k, _ in got["topk"]] != [k for k, _ in want["topk"]]:
        fail(f"{path}: topk {got['topk']} vs predict's {want['topk']}")
    for (_, p), (_, q) in zip(got["topk"], want["topk"]):
        if abs(p - q) > PROB_TOL:
            fail(f"{path}: probability {p} vs predict's {q}")


def check_embedding(got, i, path):
    want = embeddings[i]
    if len(got) != len(want) or any(abs(a - b) > EMB_TOL * max(1.0, abs(b)) for a, b in zip(got, want)):
        fail(f"{path}: embedding of image {i} differs from predict --embeddings")


def client(seed, count, errors):
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    try:
        for _ in range(count):
            embed = rng.random() < 0.25
            path = "/v1/embed" if embed else "/v1/classify"
            if rng.random() < 0.5:
                idx = [rng.randrange(len(pngs))]
                body, ctype = pngs[idx[0]], "image/png"
            else:
                idx = [rng.randrange(len(pngs)) for _ in range(rng.randint(1, 3))]
                body = json.dumps({"base64_string": [base64.b64encode(pngs[i]).decode() for i in idx]})
                ctype = "application/json"
            conn.request("POST", path, body=body, headers={"Content-Type": ctype})
            r = conn.getresponse()
            data = r.read()
            if r.status != 200:
                raise AssertionError(f"{path}: status {r.status}: {data[:200]!r}")
            ans = json.loads(data)
            if embed:
                inst = ans["instance"]
                assert len(inst) == len(idx), ans
                for e, i in zip(inst, idx):
                    check_embedding(e["embedding"], i, path)
            else:
                preds = ans["predictions"]
                assert len(preds) == len(idx), ans
                for k, (p, i) in enumerate(zip(preds, idx)):
                    assert p["source"] == k, p
                    close_enough(p, expected[i], path)
    except BaseException as e:  # noqa: BLE001 - reported by the main thread
        errors.append(repr(e))
    finally:
        conn.close()


def load(seed):
    errors = []
    threads = [threading.Thread(target=client, args=(seed * 100 + c, REQUESTS, errors)) for c in range(CLIENTS)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail(f"{len(errors)} clients failed, first: {errors[0]}")
    n = CLIENTS * REQUESTS
    print(f"load: {n} requests from {CLIENTS} clients in {time.time() - t0:.1f} s, all equal to predict")
    alive()


def raw(payload, read=True, timeout=10):
    """Sends bytes on a fresh connection; returns the status code of the answer (0 for none)."""
    return raw_answer(payload, read, timeout)[0]


def raw_answer(payload, read=True, timeout=10):
    """Sends bytes on a fresh connection; returns (status, body) of the answer ((0, b"") for none)."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    try:
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered and closed before all was sent: the answer is still there to read
        if not read:
            return 0, b""
        data = b""
        while True:
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if len(rest) >= length:
                    return int(head.split(b" ", 2)[1]), rest[:length]
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return 0, b""
            data += chunk
    finally:
        s.close()


def post(path, body, ctype):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": ctype} if ctype else {})
        r = conn.getresponse()
        data = r.read()
        return r.status, data
    finally:
        conn.close()


def expect(status, got, what):
    if got[0] != status:
        fail(f"{what}: status {got[0]} ({got[1][:200]!r}), expected {status}")
    if status != 200:
        try:
            err = json.loads(got[1])["error"]
        except Exception:  # noqa: BLE001
            fail(f"{what}: the {status} body is not {{\"error\": ...}}: {got[1][:200]!r}")
        if not err:
            fail(f"{what}: empty error message")


def hostile():
    png = pngs[0]
    # Content-Length larger than what is sent, then the client closes: the server drops it.
    raw(b"POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: 5000\r\n\r\n" + png[:50],
        read=False)
    expect(413, post("/v1/classify", b"\x89PNG\r\n\x1a\n" + b"x" * (MAX_BODY + 1), "image/png"), "oversized body")
    big = json.dumps({"base64_string": [base64.b64encode(b"\x00" * 60000).decode()]})
    expect(413, post("/v1/classify", big, "application/json"), "oversized JSON")
    expect(415, post("/v1/classify", png, "text/plain"), "wrong content type")
    expect(415, post("/v1/classify", png, None), "no content type")
    expect(400, post("/v1/classify", b"GIF89a not one of ours", "image/png"), "not an image")
    expect(400, post("/v1/classify", png[:40], "image/png"), "a truncated PNG")
    expect(400, post("/v1/embed", b"\x89PNG\r\n\x1a\n" + os.urandom(200), "image/png"), "an undecodable PNG")
    expect(400, post("/v1/classify", b"", "image/png"), "an empty body")
    expect(400, post("/v1/classify", '{"base64_string": [', "application/json"), "invalid JSON")
    expect(400, post("/v1/classify", '{"images": []}', "application/json"), "JSON without base64_string")
    expect(400, post("/v1/classify", '{"base64_string": ["not base64!"]}', "application/json"), "bad base64")
    bad2 = json.dumps({"base64_string": [base64.b64encode(png).decode(), base64.b64encode(b"text").decode()]})
    got = post("/v1/classify", bad2, "application/json")
    expect(400, got, "a bad second image")
    if b"base64_string[1]" not in got[1]:
        fail(f"the error does not name the bad image: {got[1]!r}")
    many = json.dumps({"base64_string": [base64.b64encode(pngs[1]).decode()] * 65})
    expect(413, post("/v1/classify", many, "application/json"), "more images than the queue holds")
    expect(404, post("/v2/classify", png, "image/png"), "unknown path")
    expect(405, post("/healthz", png, "image/png"), "POST to a GET endpoint")
    expect(404, post("/v1/%0Aserve:%20forged%1B[31m", png, "image/png"), "a path that decodes to a newline and an escape")
    hostile_framing()
    alive()


def req_head(path="/v1/classify", ctype="image/png"):
    return b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n" % (path.encode(), ctype.encode())


def chunked(body, size=4096):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


# Built once: 60 MB of zeros gzip to ~58 KB, under --max_body_bytes; inflating them would cost 60 MB.
GZIP_BOMB = gzip.compress(bytes(60_000_000), 9)


def hostile_framing():
    """Request framings a server must not trust: each gets its status and an {"error"} body, and none
    of them grows the server's memory."""
    before = rss_kb()
    png = pngs[2]
    cases = [
        (415, req_head() + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(GZIP_BOMB) + GZIP_BOMB, "a gzip bomb"),
        (415, req_head() + b"Content-Encoding: br\r\nContent-Length: 4\r\n\r\n\x0b\x02\x80x", "a brotli body"),
        (413, req_head() + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(os.urandom(MAX_BODY + 5000)), "chunked over the limit"),
        (411, req_head() + b"\r\n" + png, "a POST without Content-Length"),
        (400, req_head() + b"Content-Length: %d\r\nContent-Length: 10\r\n\r\n" % len(png) + png, "two Content-Lengths"),
        (400, req_head() + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(png) + chunked(png), "Content-Length and chunked"),
        (501, req_head() + b"Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked(png), "a transfer coding besides chunked"),
        (400, req_head() + b"X-Folded: a\r\n b\r\nContent-Length: %d\r\n\r\n" % len(png) + png, "an obs-fold header"),
        (400, req_head() + b"Content-Length: +%d\r\n\r\n" % len(png) + png, "a signed Content-Length"),
        (400, req_head(ctype="application/json") + b"Content-Length: 60016\r\n\r\n" + b'{"base64_string": ' + b"[" * 59998,
         "JSON nested 60 KB deep"),
    ]
    for status, payload, what in cases:
        got = raw_answer(payload)
        expect(status, got, what)
    # Chunked under the limit is read and answered like any body.
    body = json.dumps({"base64_string": [base64.b64encode(pngs[i]).decode() for i in (3, 4)]}).encode()
    got = raw_answer(req_head(ctype="application/json") + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                     chunked(body, 1000))
    expect(200, got, "a chunked JSON body")
    for p, i in zip(json.loads(got[1])["predictions"], (3, 4)):
        close_enough(p, expected[i], "chunked")
    grown = rss_kb() - before
    if grown > 8 * 1024 and not SANITIZED:
        fail(f"hostile framings grew the server's RSS by {grown / 1024:.1f} MB")


def burst(n=48):
    """n clients connect at once (3 x the 16 handler threads) and each sends one request: every one is
    answered 200 with predict's answer."""
    gate = threading.Barrier(n)
    errors = []

    def one(k):
        try:
            gate.wait()
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
            conn.request("POST", "/v1/classify", body=pngs[k], headers={"Content-Type": "image/png"})
            r = conn.getresponse()
            ans = json.loads(r.read())
            conn.close()
            assert r.status == 200, r.status
            close_enough(ans["predictions"][0], expected[k], "burst")
        except BaseException as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail(f"burst of {n} connections: {len(errors)} failed, first: {errors[0]}")
    alive()


def slow_client():
    """A client that sends its headers and stalls: others are served meanwhile; it is dropped after the timeout."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=5 * TIMEOUT_S + 10)
    s.sendall(b"POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: 400\r\n\r\n")
    t0 = time.time()
    served = 0
    while time.time() - t0 < TIMEOUT_S / 2:  # others get answers while it stalls
        st = post("/v1/classify", pngs[served % len(pngs)], "image/png")
        expect(200, st, "a request beside a stalled client")
        served += 1
    try:
        rest = s.recv(4096)  # the server times it out: closes (b"") or answers an error, never waits forever
    except ConnectionResetError:
        rest = b""
    waited = time.time() - t0
    s.close()
    if rest and not rest.startswith(b"HTTP/1.1 4"):
        fail(f"stalled client got {rest[:100]!r}")
    if waited > 3 * TIMEOUT_S + 5:
        fail(f"stalled client held for {waited:.1f} s (timeout {TIMEOUT_S} s)")
    print(f"slow client: dropped after {waited:.1f} s; {served} requests answered meanwhile")
    alive()


def trickle(payload, interval, stop, result):
    """Sends payload a byte every `interval` s until the server answers or closes; result: [status, s]."""
    t0 = time.time()
    s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    s.setblocking(False)
    data = b""
    try:
        for i in range(len(payload)):
            if stop.is_set():
                break
            try:
                s.send(payload[i:i + 1])
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(interval)
            try:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
                break
            except BlockingIOError:
                pass
            except ConnectionResetError:
                break
        s.setblocking(True)
        s.settimeout(30)
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    finally:
        s.close()
    result[:] = [int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0, time.time() - t0]


def tricklers():
    """2 x --threads clients send their requests a byte every 0.1 s: no handler thread is held by them,
    so others (and /healthz) are answered within a second; they get 408 --timeout_s after their first byte."""
    n = 2 * THREADS
    payload = req_head() + b"Content-Length: %d\r\n\r\n" % len(pngs[0]) + pngs[0]
    stop = threading.Event()
    results = [[] for _ in range(n)]
    threads = [threading.Thread(target=trickle, args=(payload, 0.1, stop, results[k])) for k in range(n)]
    for t in threads:
        t.start()
    time.sleep(0.3)  # all of them connected and trickling
    t0 = time.time()
    slowest = 0.0
    served = 0
    while time.time() - t0 < TIMEOUT_S * 0.75:
        t1 = time.time()
        if served % 4 == 3:
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
            conn.request("GET", "/healthz")
            r = conn.getresponse()
            st = (r.status, r.read())
            conn.close()
        else:
            st = post("/v1/classify", pngs[served % len(pngs)], "image/png")
        expect(200, st, f"a request beside {n} trickling clients")
        slowest = max(slowest, time.time() - t1)
        served += 1
    for t in threads:
        t.join(timeout=3 * TIMEOUT_S + 10)
    stop.set()
    statuses = sorted(r[0] for r in results if r)
    held = max(r[1] for r in results if r)
    if len(statuses) != n or any(st != 408 for st in statuses):
        fail(f"trickling clients got {statuses}, expected {n} x 408")
    if held > TIMEOUT_S + 1.5:
        fail(f"a trickling client was held {held:.1f} s (--timeout_s {TIMEOUT_S})")
    if slowest > 1.0:
        fail(f"beside {n} trickling clients a request took {slowest:.2f} s")
    print(f"tricklers: {n} clients cut with 408 after at most {held:.1f} s; {served} requests answered meanwhile, "
          f"slowest {slowest * 1000:.0f} ms")
    alive()


def sigterm_in_flight():
    """Requests whose bodies are half sent when SIGTERM arrives are answered in full; a client trickling
    its request is cut when the grace period ends; then exit 0 within it."""
    conns = []
    for i in range(4):
        idx = [(7 * i + k) % len(pngs) for k in range(8)]
        body = json.dumps({"base64_string": [base64.b64encode(pngs[j]).decode() for j in idx]}).encode()
        s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
        s.sendall(b"POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:len(body) // 2])
        conns.append((s, body, idx))
    stop = threading.Event()
    trickled = []
    trickler = threading.Thread(target=trickle, args=(req_head() + b"Content-Length: 400\r\n\r\n" + b"x" * 400, 0.2, stop, trickled))
    trickler.start()
    time.sleep(0.2)  # it has begun: its own deadline is --timeout_s after, later than the grace period
    server.send_signal(signal.SIGTERM)
    signalled = time.time()
    # Stopped accepting once a new connection is refused; the half-sent requests are still in flight.
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
        except OSError:
            break
        time.sleep(0.01)
    else:
        fail("still accepting connections after SIGTERM")
    for s, body, idx in conns:
        s.sendall(body[len(body) // 2:])
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        head, _, payload = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            fail(f"in-flight request after SIGTERM: {head[:100]!r}")
        preds = json.loads(payload)["predictions"]
        for p, i in zip(preds, idx):
            close_enough(p, expected[i], "in flight at SIGTERM")
    try:
        rc = server.wait(timeout=GRACE_S + 30)
    except subprocess.TimeoutExpired:
        server.kill()
        fail(f"the server did not exit within {GRACE_S + 30} s of SIGTERM")
    took = time.time() - signalled
    stop.set()
    trickler.join()
    if rc != 0:
        fail(f"exit status {rc} after SIGTERM, expected 0")
    if took > GRACE_S + 1.0:
        fail(f"the server took {took:.1f} s to exit after SIGTERM with a trickling client (--grace_s {GRACE_S})")
    if trickled != [] and trickled[0] != 0:
        fail(f"the trickling client was answered {trickled[0]}, not cut at the end of the grace period")
    print(f"SIGTERM: 4 requests in flight answered, a trickling client cut, exit 0 after {took:.1f} s (grace {GRACE_S} s)")


try:
    # /healthz and /v1/model
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    conn.request("GET", "/healthz")
    r = conn.getresponse()
    if r.status != 200 or json.loads(r.read()) != {"status": "ok"}:
        fail("healthz")
    conn.request("GET", "/v1/model")
    model = json.loads(conn.getresponse().read())
    conn.close()
    if model["model_name"] != "lenet" or model["num_classes"] != 10 or model["input"]["height"] != 28:
        fail(f"/v1/model: {model}")
    if model["embedding"]["size"] != len(embeddings[0]):
        fail(f"/v1/model embedding size {model['embedding']['size']} vs predict's {len(embeddings[0])}")

    # A second server on the same port fails (no silent port sharing), naming the address.
    second = subprocess.run([FASTNN, "serve", "--checkpoint", CKPT, "--port", str(PORT), "--device", "cpu"],
                            capture_output=True, text=True, timeout=120)
    if second.returncode != 1 or f"127.0.0.1:{PORT}" not in second.stderr:
        fail(f"a second server on port {PORT}: status {second.returncode}, stderr {second.stderr[-300:]!r}")

    client(1, 100, errs := [])  # warm-up: one client, every code path once
    if errs:
        fail(errs[0])
    rss = [rss_kb()]
    for round_ in range(1, int(os.environ.get("SERVE_ROUNDS", "4")) + 1):
        load(round_)
        burst()
        hostile()
        slow_client()
        if round_ == 1:
            tricklers()
        rss.append(rss_kb())
    print("VmRSS: warm-up", ", ".join(f"{r / 1024:.1f} MB" for r in rss[:1]), "rounds",
          ", ".join(f"{r / 1024:.1f} MB" for r in rss[1:]))
    if len(rss) < 4:
        fail("SERVE_ROUNDS must be at least 3 for the memory check")
    if SANITIZED:
        print("VmRSS not checked: the server runs under AddressSanitizer")
    elif rss[-1] - rss[-3] > RSS_TWO_ROUNDS_MB * 1024:
        fail(f"RSS grew by {(rss[-1] - rss[-3]) / 1024:.1f} MB in the last two rounds (bound {RSS_TWO_ROUNDS_MB} MB)")
    if not SANITIZED and max(rss[1:]) - rss[0] > RSS_TOTAL_MB * 1024:
        fail(f"RSS grew by {(max(rss[1:]) - rss[0]) / 1024:.1f} MB over warm-up (bound {RSS_TOTAL_MB} MB)")
    sigterm_in_flight()
finally:
    if server.poll() is None:
        server.kill()
print("ok")
