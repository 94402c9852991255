#!/usr/bin/env bash
# fastnn serve on loopback (serve_check.py does the talking): LeNet trained 100 steps on the real
# Fashion-MNIST (Debian dataset-fashion-mnist; exit 77 when absent); 200 test images written as PNGs;
# `fastnn predict --batch_size 1 --embeddings` on them is the reference every served answer must equal
# (label, name, topk classes; probabilities and embeddings to float32 rounding), under 8 concurrent
# clients x 100 requests, four rounds, with hostile requests and framings, a stalled client and 2 x
# --threads trickling clients in between, memory flat, and a SIGTERM that lets the requests in flight
# finish, cuts a trickling client at the end of the grace period and exits 0.
FASTNN=$1 SRC=$2 SCRATCH=$3
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
[ -f "$DATA_SRC/t10k-images-idx3-ubyte.gz" ] || { echo "skip: $DATA_SRC has no Fashion-MNIST"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

"$FASTNN" convert mnist --input "$DATA_SRC" --output data --num-gpus 1 --shards-per-gpu 2 -q > /dev/null || fail "convert"
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=run --batch_size=64 --optimizer=momentum \
  --learning_rate=0.01 --stop_at_step=100 --device=cpu > train.log 2>&1 || { tail train.log; fail "train"; }
python3 "$SRC/tests/integration/fashion_pngs.py" "$DATA_SRC/t10k-images-idx3-ubyte.gz" images 200 || fail "pngs"
"$FASTNN" predict --checkpoint run --input images --device=cpu --batch_size=1 --embeddings emb.npy -q \
  > pred.jsonl || fail "predict"
python3 "$SRC/tests/integration/serve_check.py" "$FASTNN" run images pred.jsonl emb.npy ||
  { tail -20 serve.err; fail "serve"; }
# The access log has one line per request answered, with its status.
grep -q '"POST /v1/classify" 200 ' serve.err || fail "no access log line for a 200"
grep -q '"POST /v1/classify" 413 ' serve.err || fail "no access log line for a 413"
grep -q '"POST /v1/embed" 400 ' serve.err || fail "no access log line for a 400"
grep -q "stopped after" serve.err || fail "no stop summary"
# Framing refusals and timeouts are logged too; a path decoding to a newline and an escape is one line.
grep -q '"POST /v1/classify" 415 .* -$' serve.err || fail "no access log line for a 415"
grep -q '"POST /v1/classify" 408 ' serve.err || fail "no access log line for a 408"
grep -qF '"POST /v1/\x0aserve: forged\x1b[31m" 404 ' serve.err || fail "the injected path is not escaped in the log"
grep -q '^serve: forged' serve.err && fail "a client forged an access log line"
grep -q $'\x1b' serve.err && fail "a client put a terminal escape into the log"
echo "ok"
