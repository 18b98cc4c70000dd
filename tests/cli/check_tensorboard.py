#!/usr/bin/env python3
"""What TensorBoard's own reader finds in a run's folder besides the scalars (#51).

Usage: check_tensorboard.py [--cuda] WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

--cuda: the runs train on the GPU with train.cuda_graphs on, so the gradient histograms are of the
gradients a replayed CUDA graph holds (skipped, exit 77, where PyTorch sees no GPU).

gputrain trains an MLP for 8 steps with logging.histograms_every 4. TensorBoard's EventAccumulator
then finds:
  - histograms weights/<name> and gradients/<name> at steps 4 and 8: the weights' count, min, max
    and sum at step 8 are those of model.safetensors' tensors and their buckets add up to the
    count; the gradients' are of the same size and not zero;
  - the resolved config as text (tag `config`, the Text tab), the one config.yaml holds;
  - the settings as hyper-parameters (the HParams plugin's session start): optimizer.lr 0.05 as a
    number, train.deterministic as a bool, model.name as text;
  - gradient histograms in a run with logging.grad_norm false too.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, fresh_workdir_and_command  # noqa: E402


def main():
    cuda = "--cuda" in sys.argv[1:2]
    if cuda:
        del sys.argv[1]
        import torch
        if not torch.cuda.is_available():
            print("SKIP: no CUDA GPU visible")
            sys.exit(77)
    device = ["--set", "device=cuda", "--set", "train.cuda_graphs=on"] if cuda else ["--set", "device=cpu"]
    workdir, command = fresh_workdir_and_command("usage: check_tensorboard.py [--cuda] WORKDIR -- GPUTRAIN_TRAIN_COMMAND...")
    try:
        from safetensors.torch import load_file
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        from tensorboard.plugins.hparams import plugin_data_pb2
    except ImportError as e:
        print(f"SKIP: {e} (scripts/requirements.txt installs it)")
        sys.exit(77)
    def train(run_dir, *settings):
        args = command + device + ["--set", "model.name=mlp", "--set", "model.hidden=[16]", "--set", "data.shape=[6]",
                          "--set", "data.classes=3", "--set", "data.samples=64", "--set", "data.val_samples=16",
                          "--set", "train.batch_size=16", "--set", "train.epochs=2", "--set", "optimizer.lr=0.05",
                          "--set", "train.deterministic=true", "--set", "logging.histograms_every=4",
                          "--set", "logging.progress=lines", "--set", f"logging.dir={run_dir}", *settings]
        result = subprocess.run(args, capture_output=True, text=True)
        if result.returncode != 0:
            fail(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")

    run_dir = os.path.join(workdir, "run")
    train(run_dir)
    events = EventAccumulator(run_dir, size_guidance={"histograms": 0, "tensors": 0})
    events.Reload()
    tags = events.Tags()
    weights = load_file(os.path.join(run_dir, "model.safetensors"))
    for name, tensor in weights.items():
        for kind in ("weights", "gradients"):
            if f"{kind}/{name}" not in tags["histograms"]:
                fail(f"no histogram {kind}/{name}; TensorBoard sees {tags['histograms']}")
        points = events.Histograms(f"weights/{name}")
        if [p.step for p in points] != [4, 8]:
            fail(f"weights/{name}: histograms at steps {[p.step for p in points]}, not 4 and 8")
        h = points[-1].histogram_value
        expected = (tensor.numel(), tensor.min().item(), tensor.max().item(), tensor.double().sum().item())
        got = (h.num, h.min, h.max, h.sum)
        if got[0] != expected[0] or any(abs(a - b) > 1e-5 * max(1.0, abs(b)) for a, b in zip(got[1:], expected[1:])):
            fail(f"weights/{name} at step 8: count, min, max, sum {got}; model.safetensors has {expected}")
        if sum(h.bucket) != h.num or len(h.bucket) != len(h.bucket_limit):
            fail(f"weights/{name}: {len(h.bucket)} buckets holding {sum(h.bucket)} of {h.num} values")
        grads = events.Histograms(f"gradients/{name}")
        if [p.step for p in grads] != [4, 8] or any(p.histogram_value.sum_squares <= 0 for p in grads) or \
                grads[-1].histogram_value.num != tensor.numel():
            fail(f"gradients/{name}: {[(p.step, p.histogram_value.num, p.histogram_value.sum_squares) for p in grads]}")
    print(f"ok: {len(weights)} weights and their gradients as histograms at steps 4 and 8, matching model.safetensors")

    texts = events.Tensors("config")
    with open(os.path.join(run_dir, "config.yaml")) as f:
        config_yaml = f.read()
    text = texts[0].tensor_proto.string_val[0].decode()
    if events.summary_metadata.get("config") is None or "model:\n  name: mlp" not in text:
        fail(f"the config text is not TensorBoard text holding the config:\n{text[:300]}")
    if "```yaml" not in text or "optimizer:" not in text or "lr: 0.05" not in config_yaml:
        fail("the config text lacks the resolved settings")
    print("ok: the resolved config as TensorBoard text (tag config)")

    metadata = events.SummaryMetadata("_hparams_/session_start_info")
    if metadata.plugin_data.plugin_name != "hparams":
        fail(f"the hyper-parameters are under plugin {metadata.plugin_data.plugin_name!r}")
    start = plugin_data_pb2.HParamsPluginData.FromString(metadata.plugin_data.content).session_start_info
    hparams = start.hparams
    if hparams["optimizer.lr"].number_value != 0.05 or hparams["train.deterministic"].bool_value is not True or \
            hparams["model.name"].string_value != "mlp" or hparams["model.hidden"].string_value != "[16]":
        fail(f"hyper-parameters read back as {dict((k, str(v).strip()) for k, v in list(hparams.items())[:8])}")
    print(f"ok: {len(hparams)} settings as TensorBoard hyper-parameters (optimizer.lr, train.deterministic, model.name, ...)")

    # The gradients are read out whether or not logging.grad_norm measures their norm.
    quiet_dir = os.path.join(workdir, "no-grad-norm")
    train(quiet_dir, "--set", "logging.grad_norm=false")
    quiet = EventAccumulator(quiet_dir, size_guidance={"histograms": 0})
    quiet.Reload()
    for name in weights:
        tag = f"gradients/{name}"
        steps = [p.step for p in quiet.Histograms(tag)] if tag in quiet.Tags()["histograms"] else []
        if steps != [4, 8]:
            fail(f"with logging.grad_norm false: {tag} at steps {steps}, not 4 and 8")
    print("ok: gradient histograms with logging.grad_norm false too")


if __name__ == "__main__":
    main()
