# The LeNet / Fashion-MNIST training recipe shared by scripts/quickstart.sh and
# tests/integration/train_fashion_lenet.sh (sourced; bash): 2.5 epochs (2342 steps of 64) of momentum
# 0.9 at lr 0.01, dropped to 0.001 after 2 epochs (step 1874). 88.76% test top-1; the cheapest recipe
# tried with a margin over 88% (docs/TRAINING.md, "The LeNet recipe"). LENET_STEPS may be set before
# sourcing (the drop stays at step 1874 when that is inside the run, else there is none).
LENET_STEPS=${LENET_STEPS:-2342}
if [ "$LENET_STEPS" -gt 1874 ]; then
  LENET_LR=(--learning_rate_decay_type=piecewise --lr_boundaries=1874 --lr_values=0.01,0.001)  # no learning_rate: inert
else
  LENET_LR=(--learning_rate=0.01 --learning_rate_decay_type=fixed)
fi
LENET_RECIPE=(--batch_size=64 --optimizer=momentum --momentum=0.9 "${LENET_LR[@]}" --weight_decay=0
              --stop_at_step="$LENET_STEPS" --seed=1)
