#!/usr/bin/env bash
# fastnn driven from Spark without MPI (docs/FORMATS.md, "Converting on many machines"): a Spark job on
# local[2] converts three base64-TSV parts of real photograph crops on its executors
# (scripts/spark_convert.py), then merges them with one `fastnn convert tfrecord`. The merged
# set passes `fastnn check`, is balanced over 2 GPUs, and holds exactly the (image, label) records one
# process converting the three parts directly holds. A part that fails fails the job, naming it.
# Needs pyspark and a Java runtime: FASTNN_SPARK_PYTHON names a python3 that imports pyspark (else
# python3 is tried); skipped without them (scripts/setup.sh does not install Spark).
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"  # photos, fail (it recreates $SCRATCH)
cd "$SCRATCH"
SPARK_PY=${FASTNN_SPARK_PYTHON:-$(command -v python3 || true)}
[ -n "$SPARK_PY" ] && "$SPARK_PY" -c 'import pyspark' 2> /dev/null || { echo "SKIP: no pyspark"; exit 77; }
command -v java > /dev/null || { echo "SKIP: no Java runtime for Spark"; exit 77; }

photos photos daisy:10 roses:8 tulips:6
label=0
for class in daisy roses tulips; do  # one part per class, as a crawl's files rarely mix evenly
  for f in photos/$class/*.jpg; do printf '%s\t%d\n' "$(base64 -w0 "$f")" "$label"; done > "$class.tsv"
  label=$((label + 1))
done
"$SPARK_PY" "$SRC/scripts/spark_convert.py" "$FASTNN" 'local[2]' parts final 3 2 5 \
  "$PWD/daisy.tsv" "$PWD/roses.tsv" "$PWD/tulips.tsv" > spark.txt 2> spark.err || { cat spark.err; fail "the Spark job"; }
grep -q '3 parts converted by Spark, 3 shards merged into final' spark.txt || { cat spark.txt; fail "spark.txt"; }
"$FASTNN" check final -q > check.txt || { cat check.txt; fail "check of the merged set"; }
"$FASTNN" convert base64-tsv -i daisy.tsv -i roses.tsv -i tulips.tsv --num-gpus 2 --seed 5 -o direct -q > /dev/null ||
  fail "direct conversion"
# The same records, wherever they went: (image bytes, label) pairs of every shard, sorted.
records() {
  "$PY" - "$SRC/tests/integration" "$1" <<'PYEOF'
import glob, hashlib, json, sys
sys.path.insert(0, sys.argv[1])
from tfslim_layout import parse_example, read_tfrecord
out = []
for path in sorted(glob.glob(sys.argv[2] + "/*.tfrecord")):
    for rec in read_tfrecord(path):
        ex = parse_example(rec)
        out.append((hashlib.sha1(ex["image/encoded"][0]).hexdigest(), ex["image/class/label"][0]))
print(json.dumps(sorted(out)))
PYEOF
}
[ "$(records final)" = "$(records direct)" ] || fail "the merged set holds other records than one process's conversion"
n=$(records final | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
# 24 records over 2 GPUs x 4 shards: none dropped, so both sets must hold every record.
[ "$n" = 24 ] || fail "the merged set holds $n records, expected 24"
echo "--- Spark: 3 parts converted on executors and merged: $n records, the direct conversion's"

# A bad part fails the job with its name.
printf 'not base64\t0\n' > bad.tsv
"$SPARK_PY" "$SRC/scripts/spark_convert.py" "$FASTNN" 'local[2]' parts2 final2 3 2 5 "$PWD/daisy.tsv" \
  "$PWD/bad.tsv" > bad.txt 2>&1 && fail "a bad part did not fail the Spark job"
grep -q "bad.tsv: fastnn convert exited" bad.txt || { tail -20 bad.txt; fail "the failure does not name the part"; }
[ ! -e final2 ] || fail "a failed job left final2"
echo "--- Spark: a bad part fails the job, named"
