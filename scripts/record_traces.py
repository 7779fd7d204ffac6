"""Record real PyTorch Kineto traces on a GPU (or the CPU) for msreport's tests and checks.

    python scripts/record_traces.py OUT [--device cuda] [--steps 8] [--small]

Writes two jobs, each in a folder of its own, with a `meta.json` of what was measured independently of the
profiler (per-step wall time from `time.perf_counter` after a device synchronise, the model's parameter count,
tokens per step and analytic FLOPs per step):

- `OUT/single/`: one process trains a small decoder-only transformer (bf16 autocast on a GPU, AdamW) with
  `torch.profiler` recording shapes, memory and FLOPs (`record_shapes`, `profile_memory`, `with_flops`);
  schedule wait 1, warm-up 1, active `steps - 2`.
- `OUT/ddp/`: two processes on the same device, `DistributedDataParallel` over gloo (NCCL refuses two ranks on
  one GPU), the same model smaller; **rank 1 stalls about 200 ms in every step's backward** (a device sleep on a
  GPU, a host sleep on the CPU, from a backward hook on the first block, before its gradients' all-reduce), so
  both ranks' step times come out equal and rank 0 waits for rank 1 in the all-reduce. The case of issue 32,
  item 4 ("who waits for whom"), recorded for real.

- `OUT/moe/` (`--only moe`): two processes, one expert each (an MLP on the device), tokens exchanged with
  `all_to_all_single` over gloo (on host copies) forward and backward; the router sends **two thirds of every
  rank's tokens to rank 1's expert**, so rank 1's expert computes twice the tokens of rank 0's (issue 32, item 3).
- `OUT/compiled/` (`--only compiled`): the single job's model under `torch.compile(mode="reduce-overhead")`
  (Triton kernels replayed as CUDA graphs), the trace shape of compiled training.

Every trace is written gzipped by `torch.profiler.tensorboard_trace_handler` (`use_gzip=True`). The device
machine this was made for has PyTorch; this script needs nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

STALL_S = 0.200
STALL_RANK = 1


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, heads: int, seq: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, seq, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1), persistent=False)

    def forward(self, idx):
        x = self.emb(idx) + self.pos[:, : idx.shape[1]]
        for b in self.blocks:
            x = b(x, self.mask[: idx.shape[1], : idx.shape[1]])
        return self.head(self.ln(x))


def _config(small: bool, ddp: bool) -> dict:
    if small:
        return dict(vocab=512, d=64, layers=2, heads=4, seq=32, batch=2)
    if ddp:
        return dict(vocab=8192, d=512, layers=4, heads=8, seq=512, batch=8)
    return dict(vocab=16384, d=1024, layers=6, heads=16, seq=1024, batch=8)


def _flops_per_step(cfg: dict, params: int) -> float:
    """6 x parameters x tokens + the attention scores' 12 x layers x d x seq x tokens (Megatron's estimate)."""
    tokens = cfg["batch"] * cfg["seq"]
    return 6.0 * params * tokens + 12.0 * cfg["layers"] * cfg["d"] * cfg["seq"] * tokens


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _train(rank: int, world: int, out: Path, device: str, steps: int, small: bool, ddp: bool) -> None:
    torch.manual_seed(0)
    cfg = _config(small, ddp)
    model = GPT(cfg["vocab"], cfg["d"], cfg["layers"], cfg["heads"], cfg["seq"]).to(device)
    params = sum(p.numel() for p in model.parameters())
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[0] if device.startswith("cuda") else None)
        inner = model.module
        if rank == STALL_RANK:
            def stall(_module, _grad_in, _grad_out):
                if device.startswith("cuda"):
                    rate = torch.cuda.get_device_properties(0).clock_rate * 1e3  # kHz -> cycles per second
                    torch.cuda._sleep(int(STALL_S * rate))
                else:
                    time.sleep(STALL_S)
            inner.blocks[0].register_full_backward_hook(stall)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1), device=device)
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else torch.autocast("cpu", enabled=False)
    walls = []
    sched = torch.profiler.schedule(wait=1, warmup=1, active=steps - 2, repeat=1)
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    handler = torch.profiler.tensorboard_trace_handler(str(out), worker_name=f"rank{rank}", use_gzip=True)
    with torch.profiler.profile(activities=acts, schedule=sched, on_trace_ready=handler, record_shapes=True,
                                profile_memory=True, with_flops=True) as prof:
        for _ in range(steps):
            _sync(device)
            t0 = time.perf_counter()
            with amp:
                logits = model(data[:, :-1])
                loss = nn.functional.cross_entropy(logits.float().reshape(-1, cfg["vocab"]), data[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            _sync(device)
            walls.append((time.perf_counter() - t0) * 1e3)
            prof.step()
    meta = dict(rank=rank, world=world, device=device,
                device_name=torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu",
                torch=torch.__version__, config=cfg, params=params, tokens_per_step=cfg["batch"] * cfg["seq"],
                model_flops_per_step=_flops_per_step(cfg, params), step_wall_ms=walls,
                profiled_steps=list(range(2, steps)), stall_ms=STALL_S * 1e3 if ddp and rank == STALL_RANK else 0.0,
                note="step_wall_ms: perf_counter around each whole step after a device synchronise; index = step "
                     "number from 0; the profiler records steps 2..steps-1 (schedule wait 1, warm-up 1)")
    (out / f"meta_rank{rank}.json").write_text(json.dumps(meta, indent=1))


def _moe(rank: int, world: int, out: Path, device: str, steps: int, small: bool) -> None:
    from torch.distributed.nn.functional import all_to_all_single

    torch.manual_seed(rank)
    t, d = (64, 32) if small else (8192, 1024)
    expert = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)).to(device)
    opt = torch.optim.SGD(expert.parameters(), lr=1e-3)
    x = torch.randn(t, d, device=device, requires_grad=True)
    send = [t // 3, t - t // 3]  # a third to rank 0's expert, two thirds to rank 1's
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else torch.autocast("cpu", enabled=False)
    walls = []
    sched = torch.profiler.schedule(wait=1, warmup=1, active=steps - 2, repeat=1)
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    handler = torch.profiler.tensorboard_trace_handler(str(out), worker_name=f"rank{rank}", use_gzip=True)
    with torch.profiler.profile(activities=acts, schedule=sched, on_trace_ready=handler, record_shapes=True,
                                profile_memory=True, with_flops=True) as prof:
        for _ in range(steps):
            _sync(device)
            t0 = time.perf_counter()
            sizes = torch.tensor(send)
            recv = [send[rank]] * world  # every rank sends the same split: rank r receives send[r] from each
            got = all_to_all_single(torch.empty(sum(recv), d), x.float().cpu(), recv, sizes.tolist())
            with amp:
                y = expert(got.to(device))
            back = all_to_all_single(torch.empty(t, d), y.float().cpu(), send, recv)
            loss = back.to(device).pow(2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            _sync(device)
            walls.append((time.perf_counter() - t0) * 1e3)
            prof.step()
    tokens = [send[rank] * world]
    meta = dict(rank=rank, world=world, device=device, torch=torch.__version__,
                device_name=torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu",
                tokens_per_rank=t, d=d, tokens_to_expert=tokens[0], router_split=send, step_wall_ms=walls,
                expert_flops_per_step=3 * 2 * 2 * tokens[0] * d * 4 * d,
                note="one expert per rank; rank r's expert receives send[r] tokens from each rank; expert FLOPs = "
                     "forward + backward (3x) of two d x 4d matrix products")
    (out / f"meta_rank{rank}.json").write_text(json.dumps(meta, indent=1))


def _compiled(out: Path, device: str, steps: int, small: bool) -> None:
    torch.manual_seed(0)
    cfg = _config(small, False)
    model = GPT(cfg["vocab"], cfg["d"], cfg["layers"], cfg["heads"], cfg["seq"]).to(device)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.startswith("cuda"))
    cmodel = torch.compile(model, mode="reduce-overhead" if device.startswith("cuda") else "default")
    data = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1), device=device)
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else torch.autocast("cpu", enabled=False)

    def step():
        with amp:
            logits = cmodel(data[:, :-1])
            loss = nn.functional.cross_entropy(logits.float().reshape(-1, cfg["vocab"]), data[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):  # compile, record the graphs, warm up: outside the profile
        step()
    _sync(device)
    walls = []
    sched = torch.profiler.schedule(wait=1, warmup=1, active=steps - 2, repeat=1)
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    handler = torch.profiler.tensorboard_trace_handler(str(out), worker_name="rank0", use_gzip=True)
    with torch.profiler.profile(activities=acts, schedule=sched, on_trace_ready=handler, record_shapes=True,
                                profile_memory=True, with_flops=True) as prof:
        for _ in range(steps):
            _sync(device)
            t0 = time.perf_counter()
            step()
            _sync(device)
            walls.append((time.perf_counter() - t0) * 1e3)
            prof.step()
    meta = dict(rank=0, world=1, device=device, torch=torch.__version__,
                device_name=torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu", config=cfg,
                params=params, tokens_per_step=cfg["batch"] * cfg["seq"], model_flops_per_step=_flops_per_step(cfg, params),
                step_wall_ms=walls, compile_mode="reduce-overhead", profiled_steps=list(range(2, steps)))
    (out / "meta_rank0.json").write_text(json.dumps(meta, indent=1))


def _moe_worker(rank: int, world: int, out: str, device: str, steps: int, small: bool, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        _moe(rank, world, Path(out), device, steps, small)
    finally:
        dist.destroy_process_group()


def _ddp_worker(rank: int, world: int, out: str, device: str, steps: int, small: bool, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        _train(rank, world, Path(out), device, steps, small, ddp=True)
    finally:
        dist.destroy_process_group()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--small", action="store_true", help="a tiny model (a check of the script on the CPU)")
    ap.add_argument("--only", choices=["single", "ddp", "moe", "compiled"])
    ap.add_argument("--port", type=int, default=29533)
    a = ap.parse_args(argv)
    if a.only in (None, "single"):
        out = a.out / "single"
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        _train(0, 1, out, a.device, a.steps, a.small, ddp=False)
        print(f"single: {time.perf_counter() - t0:.1f} s", flush=True)
    if a.only in (None, "ddp"):
        out = a.out / "ddp"
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        mp.spawn(_ddp_worker, args=(2, str(out), a.device, a.steps, a.small, a.port), nprocs=2, join=True)
        print(f"ddp: {time.perf_counter() - t0:.1f} s", flush=True)
    if a.only == "moe":
        out = a.out / "moe"
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        mp.spawn(_moe_worker, args=(2, str(out), a.device, a.steps, a.small, a.port + 1), nprocs=2, join=True)
        print(f"moe: {time.perf_counter() - t0:.1f} s", flush=True)
    if a.only == "compiled":
        out = a.out / "compiled"
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        _compiled(out, a.device, a.steps, a.small)
        print(f"compiled: {time.perf_counter() - t0:.1f} s", flush=True)
    for p in sorted(a.out.rglob("*")):
        if p.is_file():
            print(f"{p.relative_to(a.out)}\t{p.stat().st_size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
