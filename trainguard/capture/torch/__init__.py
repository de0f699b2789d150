"""The PyTorch side of capture: the hook and everything in capture that imports torch.

Owns `hook` (`Hook`, public as `trainguard.torch`), the statistics computed on the device
(`device_stats`), the C kernel's CPU path (`native`) and the CPU statistics worker
(`stats_worker`). Nothing outside `trainguard.capture` and `trainguard.torch` imports torch
(an import-linter contract), so `import trainguard` never does.
"""
