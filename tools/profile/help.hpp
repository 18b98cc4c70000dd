#pragma once
// What `gputrain profile --help` says before its options.

namespace gputrain::tools {

inline constexpr const char* kProfileHelp =
    "gputrain profile: how to feed this box, measured on your data and model.\n\n"
    "  (default)  sweep the data loader: loader threads 0, 1, 2, 4, ... up to the usable cores,\n"
    "             pinned staging on/off (GPU), prefetch 1/2/4, and the caches that fit (vram,\n"
    "             ram); warm-up batches, then timed repeats, medians. Prints a table with the\n"
    "             fastest marked, the caches' gather speed alone, and the YAML lines to paste.\n"
    "  --step     run real training steps (after untimed warm-up steps) and split each into data\n"
    "             wait, host-to-device copy and compute, with the data stall (on a GPU also\n"
    "             timed on the GPU's own clock, which decides) and the GPU's utilisation\n"
    "             (NVML): \"is my GPU starving?\" The verdict: data-starved, host-bound (the\n"
    "             GPU idles though the data keeps up) or compute-bound. Also the host's time and\n"
    "             ATen operators per step and, on a GPU, its kernel and CUDA-graph launches\n"
    "             against the kernels the GPU ran (what train.cuda_graphs takes off the host),\n"
    "             and how busy those kernels kept the GPU (CUPTI's times; it decides the verdict)\n"
    "  --memory   the memory model of one training step: parameters, gradients, optimizer state,\n"
    "             dataset, workspace, and the bytes each sample adds (peak = fixed + per_sample x\n"
    "             batch, fitted through the large probe steps of the --batch search)\n"
    "  --batch    the micro-batch `train.batch_size: auto` picks (a few probe steps, no training);\n"
    "             --exhaustive also finds the true largest batch by bisection, to check the search\n\n"
    "Without a config, --path/--labels (and --source, when the file's name does not tell it) describe\n"
    "the data (the sweep needs no model).\n"
    "--max-memory 8GiB caps memory as a smaller GPU (or machine) would, so you can plan for one.\n"
    "docs/profiling.md explains the sweep and its JSON; docs/memory.md the memory model.\n\n"
    "Exit codes: 0 done, 1 the model does not fit even at batch 1, 2 invalid config or usage,\n"
    "3 no usable device.\n\n"
    "Examples:\n"
    "  gputrain profile configs/resnet18-cifar.yaml\n"
    "  gputrain profile --source image_folder --path data/train --set data.image_size=[128,128] --plot loader.svg\n"
    "  gputrain profile --step configs/resnet18-cifar.yaml\n"
    "  gputrain profile --batch configs/resnet18-cifar.yaml --max-memory 8GiB\n"
    "  gputrain profile --memory configs/mlp.yaml --set train.precision=bf16-mixed --json";

}  // namespace gputrain::tools
