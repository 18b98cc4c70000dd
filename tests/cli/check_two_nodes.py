#!/usr/bin/env python3
"""Two nodes for real: two network namespaces joined by a veth pair, one CPU rank each.

Usage: check_two_nodes.py WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

Each namespace is a node with its own network stack and address (10.231.7.1 and .2); each runs
`gputrain train ... --nnodes 2 --node-rank N --master-addr 10.231.7.1 --nproc-per-node 1`, as
docs/distributed.md says, and the ranks meet and reduce (Gloo) over the veth link only. Checks:
  same-weights  together they train to the weights of one node with 2 ranks (--nproc-per-node 2);
  node-dies     SIGKILL to every process of node 1 mid-run stops node 0 within a minute, with a
                message naming the failed collective, and its last checkpoint is there to resume.
Needs root (ip netns); exits 77 (skipped) with the reason where namespaces are not permitted.
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from check_launch_paths import fail, weights  # noqa: E402

SKIP = 77
ADDRESSES = ("10.231.7.1", "10.231.7.2")


def ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True)


class Nodes:
    """The two namespaces and their link; removed again on exit, whatever happened."""

    def __init__(self):
        tag = str(os.getpid() % 100000)
        self.names = (f"gtnode{tag}a", f"gtnode{tag}b")
        self.links = (f"gtv{tag}a", f"gtv{tag}b")

    def __enter__(self):
        if os.geteuid() != 0:
            print("SKIP: network namespaces need root (ip netns)")
            sys.exit(SKIP)
        if shutil.which("ip") is None:
            print("SKIP: no `ip` command (apt-get install iproute2)")
            sys.exit(SKIP)
        made = ip("netns", "add", self.names[0])
        if made.returncode != 0:
            print(f"SKIP: network namespaces are not permitted here: {made.stderr.strip()}")
            sys.exit(SKIP)
        steps = [("netns", "add", self.names[1]),
                 ("link", "add", self.links[0], "netns", self.names[0], "type", "veth", "peer", "name", self.links[1], "netns",
                  self.names[1])]
        for node in (0, 1):
            steps += [("-n", self.names[node], "addr", "add", ADDRESSES[node] + "/24", "dev", self.links[node]),
                      ("-n", self.names[node], "link", "set", self.links[node], "up"),
                      ("-n", self.names[node], "link", "set", "lo", "up")]
        for step in steps:
            done = ip(*step)
            if done.returncode != 0:
                self.__exit__()
                fail(f"ip {' '.join(step)}: {done.stderr.strip()}")
        return self

    def __exit__(self, *_):
        for name in self.names:
            for pid in ip("netns", "pids", name).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            ip("netns", "del", name)

    def start(self, node, argv):
        """Node `node`'s launcher, in its namespace, its Gloo on its veth end; one intra-op thread, as
        each of the reference's ranks has (mpirun binds each to one core), so sums run in its order."""
        command = ["ip", "netns", "exec", self.names[node], "env", f"GLOO_SOCKET_IFNAME={self.links[node]}", "OMP_NUM_THREADS=1"] + argv + [
            "--nnodes", "2", "--node-rank", str(node), "--master-addr", ADDRESSES[0], "--master-port", "29500", "--nproc-per-node", "1"]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def same_weights(nodes, base, common, workdir):
    reference = subprocess.run(base + common + ["--set", f"logging.dir={workdir}/one-node", "--nproc-per-node", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if reference.returncode != 0:
        fail(f"one node, 2 ranks: exit {reference.returncode}", reference.stdout)
    launchers = [nodes.start(n, base + common + ["--set", f"logging.dir={workdir}/two-nodes"]) for n in (0, 1)]
    outputs = [p.communicate(timeout=300)[0] for p in launchers]
    for n, (p, out) in enumerate(zip(launchers, outputs)):
        if p.returncode != 0:
            fail(f"node {n}: exit {p.returncode}", out)
    if "2 ranks over gloo" not in outputs[0] or "node 0 of 2, meeting at 10.231.7.1:29500" not in outputs[0]:
        fail("node 0 did not train 2 ranks over Gloo across the nodes", outputs[0])
    want = weights(f"{workdir}/one-node/model.safetensors")
    got = weights(f"{workdir}/two-nodes/model.safetensors")
    differ = [k for k in want if got.get(k) != want[k]]
    if differ:
        fail(f"two nodes' weights differ from one node's in {differ}", outputs[0])
    print(f"same-weights: two nodes over the veth link wrote one node's weights ({len(want)} tensors)")


def node_dies(nodes, base, common, workdir):
    run_dir = f"{workdir}/node-dies"
    long_run = common + ["--set", f"logging.dir={run_dir}", "--set", "train.epochs=1000", "--set", "checkpoint.every_steps=5",
                         "--set", "logging.every_steps=1", "--set", "distributed.timeout=60"]
    launchers = [nodes.start(n, base + long_run) for n in (0, 1)]
    seen, deadline = [], time.time() + 120
    while time.time() < deadline and not glob.glob(f"{run_dir}/checkpoints/step-*.pt"):
        seen.append(launchers[0].stdout.readline())
    if not glob.glob(f"{run_dir}/checkpoints/step-*.pt"):
        fail("no checkpoint within 120 s", "".join(seen))
    killed_at = time.time()
    for pid in ip("netns", "pids", nodes.names[1]).stdout.split():
        os.kill(int(pid), signal.SIGKILL)
    try:
        rest = launchers[0].communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        launchers[0].kill()
        fail("node 0 still runs 60 s after node 1 died: it hangs", "".join(seen))
    seconds = time.time() - killed_at
    out = "".join(seen) + rest
    if launchers[0].returncode == 0:
        fail("node 0 exited 0 after node 1 died", out)
    if "rank 0: " not in out or "failed" not in out:
        fail("node 0 does not say which collective failed", out)
    if "resume" not in out.split("rank 0: ", 1)[1]:
        fail("node 0's failure does not point to the checkpoint to resume from", out)
    print(out[-1500:])
    print(f"node-dies: node 0 stopped {seconds:.1f} s after node 1 was killed, exit {launchers[0].returncode}; checkpoints: "
          f"{sorted(os.path.basename(p) for p in glob.glob(run_dir + '/checkpoints/*.pt'))}")


def main():
    workdir = sys.argv[1]
    base = sys.argv[sys.argv.index("--") + 1:]
    common = ["--set", "device=cpu", "--set", "logging.progress=lines", "--set", "data.samples=1024", "--set", "data.val_samples=128",
              "--set", "train.epochs=1", "--set", "model.hidden=[64]", "--set", "checkpoint.resume=never"]
    shutil.rmtree(workdir, ignore_errors=True)
    with Nodes() as nodes:
        same_weights(nodes, base, common, workdir)
        node_dies(nodes, base, common, workdir)


if __name__ == "__main__":
    main()
