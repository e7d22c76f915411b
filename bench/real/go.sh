#!/usr/bin/env bash
# On the device, after every part of ../shared/tools/device-verl was copied to /tmp/verl-parts (one call each):
# install verl + vLLM + Ray, patch verl's phase marks (patch_verl.py), make the models, run the campaign.
#   DEADLINE=<epoch s> LANES=<runs side by side> [FIRST="1.5b 3b" MORE=] setsid bash /tmp/dev/real/go.sh > /tmp/go.log 2>&1 &
# SGL=1: SGLang too (its parts copied to /tmp/sgl-parts; install_sglang.sh), runs with PYTHONPATH=/tmp/site-sgl:/tmp/site
# PROBE=1: attn_probe.py before the campaign (its JSON lines in /tmp/out, so in results.tgz)
# MEG=1: Megatron too (its parts copied to /tmp/meg-parts; install_megatron.sh), runs with PYTHONPATH=/tmp/site-meg:/tmp/site
set -x
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
D=/tmp/dev
bash /tmp/tools/install.sh || exit 1
export PYTHONPATH=/tmp/site:$D/wt
if [ "${SGL:-0}" = 1 ]; then
  bash $D/real/install_sglang.sh || exit 1
  export PYTHONPATH=$D/wt
  . /tmp/sgl-env.sh  # PYTHONPATH=/tmp/site-sgl:/tmp/site:$D/wt, LD_LIBRARY_PATH where libnuma travelled
  # campaign.py gives SGLang runs this path and every other run the kit's: one campaign can hold both kinds
  export SGL_PYTHONPATH=$PYTHONPATH PYTHONPATH=/tmp/site:$D/wt
fi
if [ "${MEG:-0}" = 1 ]; then  # Megatron too (its parts copied to /tmp/meg-parts; install_megatron.sh builds TE)
  bash $D/real/install_megatron.sh || exit 1
  export MEG_PYTHONPATH=/tmp/site-meg:/tmp/site:$D/wt  # campaign.py gives Megatron runs this path
fi
python3 $D/real/patch_verl.py /tmp/site
# FIRST: made on the GPU before any run starts (with the data); MORE: on the CPU beside the first runs (by default
# the sizes FIRST leaves out)
FIRST=${FIRST:-0.5b}
if [ -z "${MORE+set}" ]; then
  MORE=""
  for s in 0.5b 1.5b 3b; do case " $FIRST " in *" $s "*) ;; *) MORE="$MORE $s" ;; esac; done
fi
python3 $D/real/make_models.py /tmp/real $FIRST || exit 1
[ -n "${MORE// /}" ] && (python3 $D/real/make_models.py /tmp/real --cpu --no-data $MORE > /tmp/make_more.log 2>&1 &)
# PROBE=1: time the trainer's attention with and without the packed SDPA mask first (attn_probe.py, alone on the GPU)
[ "${PROBE:-0}" = 1 ] && mkdir -p /tmp/out && timeout 200 python3 $D/real/attn_probe.py /tmp/out/attn_probe.jsonl > /tmp/out/attn_probe.log 2>&1
python3 $D/real/campaign.py $D/campaign.json /tmp/out --deadline "${DEADLINE:-$(( $(date +%s) + 1200 ))}" --lanes "${LANES:-1}"
