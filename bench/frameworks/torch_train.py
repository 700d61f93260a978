"""bench/frameworks/torch_train.py - F1: PyTorch training a small MLP (SGD) with
every tensor in managed memory, through a pluggable allocator (managed_alloc.cu:
one cudaMallocManaged / cudaFree per tensor). Prints nanoseconds per step, as
the other benchmarks do; bench/run.sh runs it with and without the shim.

usage: torch_train.py ALLOCATOR_SO [STEPS [WIDTH]]"""
import sys
import time

import torch

so = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
width = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
alloc = torch.cuda.memory.CUDAPluggableAllocator(so, "ac_bench_malloc", "ac_bench_free")
torch.cuda.memory.change_current_allocator(alloc)
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(width, width), torch.nn.ReLU(),
    torch.nn.Linear(width, width), torch.nn.ReLU(),
    torch.nn.Linear(width, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, width, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(10):  # warm-up: kernels loaded, allocator steady
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    loss = step()
final = loss.item()
torch.cuda.synchronize()
elapsed = time.perf_counter() - t0
print(int(elapsed * 1e9 / steps))
print(f"loss {final:.4f}", file=sys.stderr)
