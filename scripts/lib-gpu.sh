# scripts/lib-gpu.sh — sourced by the quick GPU loops (scripts/sm90-ab.sh, scripts/sm90-profile.sh): the full-size
# random checkpoint they time with, and the card's state at the start of a run. Needs WORK, RES, PY and stamp().

# sg_gpu_checkpoint: sets CKPT to $WORK/siglip2-base-random, made once with scripts/make_fixtures.py (speed does not
# depend on the values); exits on failure.
sg_gpu_checkpoint() {
    CKPT=$WORK/siglip2-base-random
    if [ ! -f "$CKPT/model.safetensors" ]; then
        stamp checkpoint
        $PY scripts/make_fixtures.py --full-size "$CKPT" >"$WORK/ckpt.log" 2>&1 || { tail "$WORK/ckpt.log"; exit 1; }
    fi
}

# sg_gpu_info: the GPU's name, driver, clocks, power and temperature, printed and kept as $RES/gpu.txt.
sg_gpu_info() {
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv |
        tee "$RES/gpu.txt"
}
