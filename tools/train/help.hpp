#pragma once
// What `gputrain train --help` says before its options.

namespace gputrain::tools {

inline constexpr const char* kTrainHelp =
    "gputrain train: train a model from YAML config files.\n\n"
    "Settings resolve as: built-in defaults < CONFIG files (later wins) < --set overrides\n"
    "< --max-memory and the launcher flags (--nproc-per-node, ...).\n"
    "Every key is in docs/configuration.md; configs/ holds ready configs.\n"
    "A run writes config.yaml, training.log, metrics.jsonl (with system readings and alerts:\n"
    "docs/monitoring.md), TensorBoard events, checkpoints, model.safetensors and report.json to\n"
    "logging.dir. SIGINT/SIGTERM (and SIGHUP, SIGUSR1/2: a closed terminal, a\n"
    "scheduler's warning) finish the current step, save a checkpoint and exit 130; run the same\n"
    "command again to resume (checkpoint.resume: auto). train.max_time: 11h30m ends a run that has\n"
    "trained that long (over resumes) with a checkpoint and its weights, exit 0: inside a job's limit.\n"
    "Out of memory mid-run, a step is split into smaller micro-batches (same samples, same step);\n"
    "when no smaller one is allowed (oom.*), the run saves a checkpoint and exits 1.\n"
    "A loss that turns nan/inf stops the run (exit 1) before it checkpoints broken weights.\n"
    "train.early_stop_patience: N stops a run after N epochs without a better validation figure\n"
    "(checkpoint.best_metric) and writes the best epoch's weights; scheduler.name: plateau lowers the\n"
    "learning rate when that figure stops improving (PyTorch's ReduceLROnPlateau).\n"
    "Unbalanced classes: train.class_weights: balanced weighs the rarer ones up in the training loss,\n"
    "and checkpoint.best_metric: val_balanced_accuracy keeps best.pt by each class's accuracy averaged;\n"
    "such a run ends with each class's recall and precision on the validation data.\n"
    "--evaluate WEIGHTS measures a trained model (best.pt, a step-*.pt, model.safetensors, or a\n"
    "state_dict torch.save wrote) on the config's validation data instead of training: give the\n"
    "run's config.yaml, and a test set as data.val_path. Nothing is written; --json prints the\n"
    "figures for scripts.\n"
    "model.init_weights: a run's model.safetensors or checkpoint, or a state_dict Python's torch.save\n"
    "wrote (torchvision's .pth), starts a new run from those weights (fine-tuning: a new head for\n"
    "other classes, train.freeze, optimizer.param_groups); checkpoint.resume continues the run itself.\n\n"
    "Exit codes: 0 done, 1 the run failed, 2 invalid config or usage, 3 no usable device,\n"
    "130 interrupted after a checkpoint.\n\n"
    "Examples:\n"
    "  gputrain train configs/quickstart.yaml\n"
    "  gputrain train --set data.path=X_train.npy --set data.labels=y_train.npy   (no config: the format told by the path)\n"
    "  gputrain train configs/resnet18-cifar.yaml --set train.precision=bf16-mixed --set train.max_steps=500\n"
    "  gputrain train configs/mlp.yaml --set train.batch_size=auto --max-memory 2GiB\n"
    "  gputrain train configs/mlp.yaml --print-config\n"
    "  gputrain train runs/churn/config.yaml --evaluate runs/churn/checkpoints/best.pt --set data.val_path=test.csv\n"
    "  gputrain train configs/resnet18-cifar.yaml --nproc-per-node 8      (one rank per GPU, NCCL)\n"
    "  gputrain train configs/mlp.yaml --set device=cpu --nproc-per-node 2 (CPU ranks, MPI)\n\n"
    "Distributed: run under torchrun (--no-python), srun or mpirun, or let --nproc-per-node start\n"
    "the ranks of this node (with --nnodes, --node-rank, --master-addr and --master-port, of each\n"
    "node, as torchrun does); batch_size is per rank; rank 0 writes the run directory.\n"
    "See docs/distributed.md.";

}  // namespace gputrain::tools
