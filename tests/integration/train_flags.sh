#!/usr/bin/env bash
# No flag silently does nothing (issue 17): each flag that used to be ignored now works or is named in a
# warning or an error with the reason. One check per flag, on a small synthetic 28x28 dataset with LeNet:
#   dataset_name, log_device_placement, loss_scale on the CPU, unknown hooks (did-you-mean),
#   num_epochs_per_decay without decay_scheme epochs, another optimizer's hyperparameter, ckpt_file_name
#   in pretrain, checkpoint_exclude_scopes without a start checkpoint, eval_every_n_steps without a
#   held-out split, hooks that drop the fields' readers, conv_search / use_fp16 on the CPU, one-process
#   distributed fields, the config's `net` (trained, not ignored);
#   TF-slim fine-tuning: checkpoint_path + checkpoint_exclude_scopes restore all but the excluded
#   scope, trainable_scopes updates only its scope (checked array by array in the checkpoints);
#   --batch-size spelled with a dash; no run written into the current directory unless asked, and eval
#   finds that run; a training flag given to eval is named;
#   the memory estimate refuses a run over memory_limit_mb before allocating, FastNN's defaults on
#   28x28 data included, naming why and what to change; data_format=NHWC trains bitwise as NCHW;
#   fuse_conv_bn (with and without fuse_ops) trains ResNet-20 bitwise as without; timm's --mixup / --cutmix
#   train (and mixup_prob alone is named inert); gradient_accumulation_steps (timm's grad_accum_steps) trains
#   steps of 2 x batch_size, with mixup too (and in timm's elem and pair modes); class_weights=balanced trains and logs the weights, a list
#   of the wrong length is refused; class_balanced_sampling trains and says what each class sends, and
#   is refused for training files without a manifest.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/integration/train_helpers.bash"
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
PY=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }

"$FASTNN" convert synthetic --output data --num-gpus 1 --num-records 128 --num-test-records 32 --height 28 --width 28 \
  --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
mkdir -p trainonly && cp data/train-*.tfrecord trainonly/
base=(--model_name=lenet --dataset_dir=data --batch_size=16 --stop_at_step=2 --num_preprocessing_threads=1)

# ok NAME NEEDLE ARGS...: the run succeeds and its output holds NEEDLE.
ok() {
  local name=$1 needle=$2
  shift 2
  "$FASTNN" train "${base[@]}" --output_dir="runs/$name" "$@" > "$name.log" 2>&1 || { cat "$name.log"; fail "$name: train failed"; }
  grep -qF -- "$needle" "$name.log" || { cat "$name.log"; fail "$name: output lacks \"$needle\""; }
  echo "ok: $name"
}

# Flags inert because of another flag's value or the device: named, with the reason.
ok dataset_name 'dataset_name=flowers has no effect: fastnn reads the records by their Example keys, and data/manifest.json says the shards are synthetic data' --dataset_name=flowers
ok loss_scale 'loss_scale=128 has no effect on the CPU backend' --loss_scale=128
ok loss_scale_f32 'loss_scale=128 has no effect: loss scaling is for fp16 compute' --loss_scale=128 --nouse_fp16
ok num_epochs_per_decay 'num_epochs_per_decay=4 has no effect: it sets the decay interval of decay_scheme epochs' --num_epochs_per_decay=4
ok decay_type 'learning_rate_decay_type=exponential keeps the rate constant' --learning_rate_decay_type=exponential
ok adam_beta1 'adam_beta1=0.8 has no effect: optimizer is rmsprop; only adam, adamweightdecay, adamw or lamb read it' --adam_beta1=0.8
ok ckpt_file_name 'ckpt_file_name="ckpt-9" has no effect' --ckpt_file_name=ckpt-9
ok exclude_scopes 'checkpoint_exclude_scopes="LeNet/fc4" has no effect: no checkpoint starts the run' --checkpoint_exclude_scopes=LeNet/fc4
ok saver_hook 'save_checkpoints_steps=5 has no effect: hooks does not name CheckpointSaverHook' \
  --hooks=StopAtStepHook,LoggingTensorHook --save_checkpoints_steps=5
ok conv_search 'conv_search=exhaustive has no effect on the CPU backend' --conv_search=exhaustive
ok conv_api 'conv_api=graph has no effect on the CPU backend' --conv_api=graph
ok fuse_conv_bn "fuse_conv_bn has no effect on the CPU backend's speed" --fuse_conv_bn
ok one_process 'allreduce_bucket_mb=8 has no effect: this is a world of one process' --allreduce_bucket_mb=8
ok warmup_scheme 'warmup_scheme="linear" has no effect: warmup_steps is 0' --warmup_scheme=linear
ok mixup_prob 'mixup_prob=0.5 has no effect: mixup_alpha and cutmix_alpha are 0' --mixup_prob=0.5
ok eval_every "eval_every_n_steps=1 has no effect: trainonly has no validation or test split" \
  --dataset_dir=trainonly --num_classes=10 --train_files="$(cd trainonly && ls train-*.tfrecord | paste -sd, -)" --eval_every_n_steps=1
# Defaults stay quiet: a plain run warns about nothing.
ok plain 'trained 2 steps'
grep -q "^W " plain.log && { cat plain.log; fail "a run with default flags printed a warning"; }

# Flags that work now.
ok log_device_placement 'LeNet/fc4  fully_connected  -> cpu f32' --log_device_placement
ok batch_dash '32 batches of 4 per epoch' --batch-size=4
ok mixup 'mixup (alpha 0.2) or CutMix (alpha 1), CutMix at p 0.5 of training batches, labels mixed alike' --mixup=0.2 --cutmix=1
ok grad_accum '4 batches of 32 per epoch (each 2 accumulated batches of 16 per rank)' --grad_accum_steps=2
ok class_weights 'class_weights=balanced: class weights ' --class_weights=balanced
refused class_weights_count 'class_weights lists 2 weight(s) for 10 classes; give one per class' -- "${base[@]}" \
  --class_weights=1,2
ok class_balanced 'class_balanced_sampling: each epoch every one of 10 classes sends ' --class_balanced_sampling
refused class_balanced_files 'class_balanced_sampling: balance_classes: ' -- "${base[@]}" --dataset_dir=trainonly \
  --num_classes=10 --train_files="$(cd trainonly && ls train-*.tfrecord | paste -sd, -)" --class_balanced_sampling
ok grad_accum_mixup 'trained 2 steps' --gradient_accumulation_steps=2 --mixup=0.2 --cutmix=1
ok mixup_elem 'CutMix (alpha 1), CutMix at p 0.5 of each training image, labels mixed alike' --mixup=0.2 --cutmix=1 \
  --mixup_mode=elem --gradient_accumulation_steps=2
ok mixup_pair 'mixup (alpha 0.2) of each pair of partners in training batches' --mixup=0.2 --mixup_mode=pair
rc=0; "$FASTNN" train "${base[@]}" --mixup=0.2 --mixup_mode=pairs > mixup_mode.log 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -qF 'mixup_mode must be one of: batch, pair, elem' mixup_mode.log ||
  { cat mixup_mode.log; fail "mixup_mode=pairs: exit $rc, expected a usage error naming the modes"; }
refused hooks 'unknown hook "LogingTensorHook"; did you mean LoggingTensorHook?' -- "${base[@]}" \
  --hooks=StopAtStepHook,LogingTensorHook
cat > net.pbtxt <<'EOF'
net {
  name: "tiny"
  input { channels: 1 height: 28 width: 28 }
  layers { name: "tiny/fc" inputs: "data" fully_connected { units: 10 } }
  logits: "tiny/fc"
}
EOF
"$FASTNN" train --config net.pbtxt --dataset_dir=data --batch_size=16 --stop_at_step=2 --output_dir=runs/net \
  --preprocessing_name=lenet > net.log 2>&1 || { cat net.log; fail "net: train failed"; }
grep -q "training tiny on cpu" net.log || { cat net.log; fail "net: the config's net was not trained"; }
grep -q '"tiny/fc/weights"' runs/net/ckpt-2.weights.safetensors || fail "net: checkpoint lacks tiny/fc/weights"
"$FASTNN" eval --dataset_dir=data --output_dir=runs/net > net_eval.log 2>&1 || { cat net_eval.log; fail "net: eval failed"; }
grep -q "on 32 examples" net_eval.log || { cat net_eval.log; fail "net: eval of the net's checkpoint"; }
refused net_classes 'net: the logits layer has 10 units, and num_classes is 7' -- --config net.pbtxt \
  --dataset_dir=data --num_classes=7 --output_dir=runs/net7
echo "ok: net"

# No run in the current directory unless asked: the default is runs/<model_name>.
mkdir -p cwd && (cd cwd && "$FASTNN" train --model_name=lenet --dataset_dir=../data --batch_size=16 --stop_at_step=1 \
  --num_preprocessing_threads=1 > ../cwd.log 2>&1) || { cat cwd.log; fail "default output_dir: train failed"; }
[ "$(ls -A cwd)" = "runs" ] || fail "default output_dir wrote into the current directory: $(ls -A cwd)"
[ -f cwd/runs/lenet/ckpt-1.weights.safetensors ] || fail "default output_dir: no checkpoint in runs/lenet"
# eval in that folder with no run named: the only run under runs/, its model from the checkpoint; a
# training flag given to eval is named.
(cd cwd && "$FASTNN" eval --dataset_dir=../data --learning_rate=3 > ../cwd_eval.log 2>&1) \
  || { cat cwd_eval.log; fail "eval of the default run directory"; }
grep -q "runs/lenet/ckpt-1 (step 1)" cwd_eval.log || { cat cwd_eval.log; fail "eval did not find runs/lenet"; }
grep -q -- "--learning_rate has no effect on eval" cwd_eval.log || { cat cwd_eval.log; fail "eval --learning_rate silent"; }
echo "ok: default output_dir"

# TF-slim fine-tuning. The start: 3 steps of LeNet.
ok start 'trained 3 steps' --stop_at_step=3
START=runs/start/ckpt-3
cmp_arrays() {  # A B: prints "<name> same|differs" for every array of A
  "$PY" -c "
import sys; sys.path.insert(0, '$SRC/tests/integration')
from compare_safetensors import read
a, b = read('$1'), read('$2')
for k in sorted(a): print(k, 'same' if a[k][2] == b[k][2] else 'differs')
"
}
# checkpoint_path + checkpoint_exclude_scopes: everything restored but LeNet/fc4, and the log says so.
ok finetune 'excluded by scope' --checkpoint_path=$START --checkpoint_exclude_scopes=LeNet/fc4 --stop_at_step=1 \
  --learning_rate=0 --learning_rate_decay_type=fixed
cmp_arrays $START.weights.safetensors runs/finetune/ckpt-1.weights.safetensors > finetune.cmp
grep -qx "LeNet/conv1/weights same" finetune.cmp || { cat finetune.cmp; fail "finetune: conv1 not restored"; }
grep -qx "LeNet/fc4/weights differs" finetune.cmp || { cat finetune.cmp; fail "finetune: the excluded fc4 was restored"; }
refused exclude_typo 'checkpoint_exclude_scopes: "LeNet/fc9" matches no variable' -- "${base[@]}" \
  --output_dir=runs/typo --checkpoint_path=$START --checkpoint_exclude_scopes=LeNet/fc9
# trainable_scopes: from the same start, only LeNet/fc4 moves.
ok trainable 'trained 2 steps' --checkpoint_path=$START --trainable_scopes=LeNet/fc4 --learning_rate=0.1
cmp_arrays $START.weights.safetensors runs/trainable/ckpt-2.weights.safetensors > trainable.cmp
for a in conv1/weights conv1/biases conv2/weights fc3/weights fc3/biases; do
  grep -qx "LeNet/$a same" trainable.cmp || { cat trainable.cmp; fail "trainable_scopes: LeNet/$a changed"; }
done
grep -qx "LeNet/fc4/weights differs" trainable.cmp || { cat trainable.cmp; fail "trainable_scopes: fc4 did not train"; }
refused trainable_typo 'trainable_scopes: "LeNet/fc5" matches no parameter of the model; did you mean' -- \
  "${base[@]}" --output_dir=runs/typo2 --trainable_scopes=LeNet/fc5

# The memory estimate: printed with print_model_statistics, and a run over the limit is refused before
# allocating, with the parts and the knobs. The limit is lowered with memory_limit_mb, so the test does
# not depend on this machine's memory.
ok estimate 'Memory estimate of lenet (batch 16, input 1x28x28, host):' --print_model_statistics
refused memory_lenet 'the run needs an estimated' 'is available (memory_limit_mb)' 'lower batch_size' -- "${base[@]}" \
  --output_dir=runs/mem1 --memory_limit_mb=20
[ ! -e runs/mem1 ] || fail "a refused run created its run directory"
# FastNN's defaults (inception_resnet_v2 at 299x299, batch 32) on 28x28 data, under a 16 GiB limit.
TIME=(); [ -x /usr/bin/time ] && TIME=(/usr/bin/time -f "%M" -o defaults.rss)
"${TIME[@]}" "$FASTNN" train --dataset_dir=data --output_dir=runs/defaults \
  --memory_limit_mb=16384 > defaults.log 2>&1 && fail "FastNN's defaults were not refused under 16 GiB"
for n in 'inception_resnet_v2 trains at 299x299, the data is 28x28' 'model_name=lenet' 'lower batch_size (now 32' \
         'is available (memory_limit_mb)'; do
  grep -qF -- "$n" defaults.log || { cat defaults.log; fail "defaults refusal lacks \"$n\""; }
done
# Refused before allocating: the process never grew past a few hundred MiB (the estimate is > 20 GiB).
[ "$(tail -1 defaults.rss 2>/dev/null || echo 0)" -lt 512000 ] || fail "the refusal came after allocating ($(cat defaults.rss) KiB)"
# check_memory=false turns the refusal into a warning (LeNet: it then trains).
ok memory_warn 'the run needs an estimated' --memory_limit_mb=20 --check_memory=false
# data_format=NHWC on the CPU: the pipeline writes NHWC batches. With FASTNN_CPU_KERNELS=reference every
# op runs behind the layout adapter, so the run is bitwise the NCHW one (each step's loss, every weight);
# with the fast kernels (oneDNN's convolution) it agrees within f32 rounding, and `auto` takes them.
ok nchw 'batches float32 NCHW' --data_format=NCHW --log_loss_every_n_iters=1 --seed=3
FASTNN_CPU_KERNELS=reference ok nhwc_reference 'batches float32 NHWC' --data_format=NHWC --log_loss_every_n_iters=1 --seed=3
ok nhwc 'batches float32 NHWC' --data_format=NHWC --log_loss_every_n_iters=1 --seed=3
ok auto "batches float32 $("$FASTNN" --version | grep -q '^CPU kernels: oneDNN' && echo NHWC || echo NCHW)" \
  --log_loss_every_n_iters=1 --seed=3
# The CPU kernel choices and the log level read from the environment take their documented values only.
FASTNN_CPU_KERNELS=fastest refused cpu_kernels_env "FASTNN_CPU_KERNELS='fastest': use 'fast' (the default) or 'reference'" \
  -- "${base[@]}" --output_dir=runs/cpu_kernels_env
FASTNN_LOG_LEVEL=verbose refused log_level_env "FASTNN_LOG_LEVEL='verbose': use debug, info (the default), warn or error" \
  -- "${base[@]}" --output_dir=runs/log_level_env
if "$FASTNN" --version | grep -q '^CPU kernels: oneDNN'; then
  FASTNN_CPU_WINOGRAD=yes refused winograd_env "FASTNN_CPU_WINOGRAD='yes': use '1' (the default) or '0'" \
    -- "${base[@]}" --output_dir=runs/winograd_env
fi
$PY - runs/nchw/metrics.jsonl runs/nhwc_reference/metrics.jsonl runs/nhwc/metrics.jsonl <<'PY' || fail "data_format=NHWC trained other losses than NCHW"
import json, sys
loss = [[r["loss"] for r in map(json.loads, open(p)) if r.get("event") == "train"] for p in sys.argv[1:]]
assert len(loss[0]) == 2 and loss[0] == loss[1], loss
assert all(abs(a - b) <= 1e-4 * abs(a) for a, b in zip(loss[0], loss[2])), loss
PY
$PY "$SRC/tests/integration/compare_safetensors.py" runs/nchw/ckpt-2.weights.safetensors runs/nhwc_reference/ckpt-2.weights.safetensors \
  --atol 0 --rtol 0 > /dev/null || fail "data_format=NHWC on the reference kernels ended with other weights than NCHW"
$PY "$SRC/tests/integration/compare_safetensors.py" runs/nchw/ckpt-2.weights.safetensors runs/nhwc/ckpt-2.weights.safetensors \
  --atol 1e-5 --rtol 1e-3 > /dev/null || fail "data_format=NHWC on the fast kernels ended far from NCHW's weights"
# fuse_conv_bn on the CPU: each convolution joins its batch norm (with fuse_ops too, batch_norm+relu and
# batch_norm+add+relu), the two kernels run in order, so ResNet-20 trains bitwise as without.
rn=(--model_name=resnet_cifar_20 --log_loss_every_n_iters=1 --seed=3 --data_format=NCHW)  # the reference kernels, bitwise
ok rn_plain 'trained 2 steps' "${rn[@]}"
ok rn_fcb 'fuse_conv_bn has no effect' "${rn[@]}" --fuse_conv_bn --log_device_placement
ok rn_fcb_fused 'fuse_conv_bn has no effect' "${rn[@]}" --fuse_conv_bn --fuse_ops --log_device_placement
grep -q 'conv+batch_norm  ' rn_fcb.log || { cat rn_fcb.log; fail "fuse_conv_bn: no conv+batch_norm layer"; }
grep -q 'conv+batch_norm+add+relu ' rn_fcb_fused.log || { cat rn_fcb_fused.log; fail "fuse_conv_bn: no conv+batch_norm+add+relu layer"; }
for run in rn_fcb rn_fcb_fused; do
  $PY "$SRC/tests/integration/compare_safetensors.py" runs/rn_plain/ckpt-2.weights.safetensors runs/$run/ckpt-2.weights.safetensors \
    --atol 0 --rtol 0 > /dev/null || fail "$run ended with other weights than the unfused run"
done
echo PASS
