"""The PyTorch side of capture: the hook and everything in capture that imports torch.

`hook` holds `Hook` (public as `trainguard.torch`): its API, registration, the hook bodies and
the lifecycle. What a saved step does is split by job, in internal modules (a leading
underscore: nothing outside this package imports them): `_plan` (which tensors, which device, the
packed layout), `_step` (what a saved step gathers; the `Path` interface), one module per path
(`_multi_path` for GPUs, `_packed` for other accelerators and the general case, `_kernel_path`
for the C kernel on CPU, `_worker_path` for the CPU statistics worker), `_paths` (which path,
chosen at registration and checked at each saved step), `_finalize` (the result buffers and the
write), `_transfer` (the non-blocking copy to the host and the thread that writes the step), `_forward` (the forward hooks on the
user's modules and when they are installed), `_streams` (prediction counts) and `_guard`
(fail-open). Below them: `_multi` (the multi-tensor op), `device_stats` (statistics on the
device), `c_kernel` (the C kernel's wrapper) and `worker_thread` (the background thread of the
statistics worker and of the transfer's deliveries). Nothing
outside `trainguard.capture` and `trainguard.torch` imports torch, so `import trainguard` never
does.
"""
