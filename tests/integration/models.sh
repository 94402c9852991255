#!/usr/bin/env bash
# fastnn models: every zoo model listed once, in text and as JSON, with parameter counts that match
# the published figures docs/MODELS.md cites; --num-classes 1001 gives TF-slim's checkpoint counts;
# a bad option is a usage error (exit 2).
FASTNN=$1 SRC=$2 SCRATCH=$3
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
source "$SRC/tests/integration/convert_helpers.bash"

"$FASTNN" models > "$SCRATCH/models.txt" || fail "fastnn models failed"
head -5 "$SCRATCH/models.txt"
"$FASTNN" models --json > "$SCRATCH/models.json" || fail "fastnn models --json failed"
"$FASTNN" models --json --num-classes 1001 > "$SCRATCH/models1001.json" || fail "--num-classes 1001 failed"

"$PY" - "$SCRATCH/models.txt" "$SCRATCH/models.json" "$SCRATCH/models1001.json" <<'PYEOF' || fail "models output did not check out"
import json, sys
text = open(sys.argv[1]).read().splitlines()
rows = json.load(open(sys.argv[2]))
rows1001 = {r["name"]: r for r in json.load(open(sys.argv[3]))}
names = [r["name"] for r in rows]
assert len(names) == len(set(names)), "a model listed twice"
assert set(names) == set(rows1001), "the 1001-class listing differs"
listed = {line.split()[0] for line in text[1:]}
assert listed == set(names), sorted(listed ^ set(names))
issue16 = ["alexnet_v2", "overfeat", "vgg_a", "vgg_11", "inception_v1", "inception_v2", "inception_v4",
           "resnet_v1_200", "resnet_v2_101", "resnet_v2_152", "resnet_v2_200", "mobilenet_v1", "mobilenet_v1_075",
           "mobilenet_v1_050", "mobilenet_v1_025", "mobilenet_v2", "mobilenet_v2_140", "mobilenet_v2_035",
           "nasnet_cifar", "nasnet_mobile", "nasnet_large", "pnasnet_mobile", "pnasnet_large"]
missing = [n for n in issue16 if n not in names]
assert not missing, missing
by = {r["name"]: r for r in rows}
for r in rows:
    assert r["trainable_params"] > 0 and r["macs"] > 0 and r["flops"] == 2 * r["macs"], r
    assert r["preprocessing"] in ("lenet", "cifarnet", "inception", "vgg", "resnet"), r
    assert r["input"]["height"] >= r["min_size"], r
# Published counts (docs/MODELS.md): torchvision resnet50, Keras ResNet101V2 (trainable + moving),
# torchvision googlenet (+ its BN gammas = moving / 2), TF-slim MobileNet v1 with 1001 classes.
assert by["resnet_v1_50"]["trainable_params"] == 25557032
r = by["resnet_v2_101"]; assert r["trainable_params"] + r["moving_statistics"] == 44675560, r
r = by["inception_v1"]; assert r["trainable_params"] + r["moving_statistics"] // 2 == 6624904, r
assert rows1001["mobilenet_v1"]["trainable_params"] == 4233001
assert rows1001["resnet_v1_50"]["trainable_params"] - by["resnet_v1_50"]["trainable_params"] == 2049
assert (by["overfeat"]["input"]["height"], by["overfeat"]["preprocessing"]) == (231, "vgg")
assert (by["inception_v4"]["input"]["height"], by["inception_v4"]["aux_logits"]) == (299, True)
# NASNet / PNASNet as trained (aux head on): slim's sizes and presets; multiply-adds near TF-slim's tables
# (564 M, 23.8 G, 588 M, 25.0 G without the aux head, which adds 0.06 % - 0.6 %).
for n, size, preset in [("nasnet_cifar", 32, "cifarnet"), ("nasnet_mobile", 224, "inception"),
                        ("nasnet_large", 331, "inception"), ("pnasnet_mobile", 224, "inception"),
                        ("pnasnet_large", 331, "inception")]:
    assert (by[n]["input"]["height"], by[n]["preprocessing"], by[n]["aux_logits"]) == (size, preset, True), by[n]
for n, macs in [("nasnet_mobile", 564e6), ("nasnet_large", 23.8e9), ("pnasnet_mobile", 588e6), ("pnasnet_large", 25.0e9)]:
    assert abs(by[n]["macs"] / macs - 1) < 0.01, (n, by[n]["macs"])
PYEOF

help=$("$FASTNN" models --help)
grep -q -- "--json" <<< "$help" || fail "--help does not mention --json"
rc=0
"$FASTNN" models --num-classes -1 > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--num-classes -1 exited $rc, want 2 (usage)"
echo "models: OK"
