"""Drive `fastnn convert` from Spark, where a cluster has Spark and no MPI (docs/FORMATS.md,
"Converting on many machines"): each input part is converted on an executor into a shard set of its
own; the driver then shuffles and balances all of them at once with `fastnn convert tfrecord`.

    python3 spark_convert.py FASTNN MASTER OUT_DIR FINAL_DIR NUM_CLASSES NUM_GPUS SEED PART...

MASTER is Spark's (local[2], spark://host:7077, yarn); OUT_DIR and FINAL_DIR must be on a file system
every executor and the driver see. Every part is told the whole dataset's class count: a part holding
only some classes would otherwise write a labels.txt of its own classes, and the merge, which takes
the first part's, refuses the others' labels. Parts are base64-TSV files here; another converter
only changes the command in convert_part."""
import os
import subprocess
import sys

from pyspark import SparkContext


def convert_part(fastnn, out_dir, num_classes, index, part):
    """One executor task: one part, one shard set (a seed of its own; the final pass reshuffles)."""
    out = os.path.join(out_dir, f"part-{index:05d}")
    cmd = [fastnn, "convert", "base64-tsv", "-i", part, "-o", out, "--num-gpus", "1", "--shards-per-gpu", "1",
           "--seed", str(index), "--num-classes", num_classes, "--threads", "1", "--overwrite", "-q"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{part}: fastnn convert exited {r.returncode}: {r.stderr.strip()}")
    return out


def main():
    fastnn, master, out_dir, final_dir, num_classes, num_gpus, seed, *parts = sys.argv[1:]
    sc = SparkContext(master, "fastnn-convert")
    sc.setLogLevel("ERROR")
    try:
        tasks = sc.parallelize(list(enumerate(parts)), len(parts))
        outs = tasks.map(lambda p: convert_part(fastnn, out_dir, num_classes, p[0], p[1])).collect()
    finally:
        sc.stop()
    # One pass over every part's shards: the global shuffle and the per-GPU balance.
    shards = [os.path.join(o, f) for o in outs for f in sorted(os.listdir(o)) if f.endswith(".tfrecord")]
    cmd = [fastnn, "convert", "tfrecord", "--split", "train", "--num-gpus", num_gpus, "--seed", seed, "-o", final_dir, "-q"]
    for s in shards:
        cmd += ["-i", s]
    subprocess.run(cmd, check=True)
    print(f"{len(parts)} parts converted by Spark, {len(shards)} shards merged into {final_dir}")


if __name__ == "__main__":
    main()
