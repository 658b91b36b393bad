"""The row-parallel linears of the symmetric-memory configurations
(config.TORCH_SYMM_CONFIGS): the GEMM written straight into a buffer of
torch's symmetric memory (allocated and rendezvoused once a shape, on the
first, uncaptured call), then reduced there by symm_mem's one-shot or
two-shot kernel into a fresh output. Each is a custom op, so that
torch.compile keeps the GEMM and the exchange together and the CUDA-graph
capture replays both."""
import torch
import torch.distributed as dist

_BUFFERS = {}


def group_name():
    return dist.group.WORLD.group_name


def symm_buffer(shape, dtype, device, site):
    """One buffer a call site (site: its weight's address), so that a rank
    never writes the next GEMM into a buffer a peer may still be reading."""
    key = (tuple(shape), dtype, str(device), site)
    if key not in _BUFFERS:
        import torch.distributed._symmetric_memory as symm_mem
        buf = symm_mem.empty(shape, dtype=dtype, device=device)
        symm_mem.rendezvous(buf, group_name())
        _BUFFERS[key] = buf
    return _BUFFERS[key]


def _linear_symm(a, w, two_shot):
    shape = (*a.shape[:-1], w.shape[0])
    buf = symm_buffer(shape, a.dtype, a.device, w.data_ptr())
    torch.mm(a.reshape(-1, a.shape[-1]), w.t(), out=buf.view(-1, w.shape[0]))
    out = torch.empty(shape, dtype=a.dtype, device=a.device)
    reduce = torch.ops.symm_mem.two_shot_all_reduce_out if two_shot else torch.ops.symm_mem.one_shot_all_reduce_out
    reduce(buf, "sum", group_name(), out)
    return out


_OPS = {}


def linear_op(two_shot):
    """The custom op fgbench::linear_one_shot or fgbench::linear_two_shot,
    registered on first use."""
    name = "linear_two_shot" if two_shot else "linear_one_shot"
    if name not in _OPS:
        @torch.library.custom_op("fgbench::" + name, mutates_args=())
        def op(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return _linear_symm(a, w, two_shot)

        @op.register_fake
        def _(a, w):
            return a.new_empty((*a.shape[:-1], w.shape[0]))
        _OPS[name] = op
    return _OPS[name]


def inductor_one_shot(message_bytes):
    """Inductor's own lowering of the all-reduce to symm_mem's one-shot
    kernel: on for the group, its size threshold raised to cover the
    block's message. Returns the undo."""
    import torch._inductor.config as ic
    from torch.distributed._symmetric_memory import enable_symm_mem_for_group
    enable_symm_mem_for_group(group_name())
    old = (ic._collective.auto_select, ic._collective.one_shot_all_reduce_threshold_bytes)
    ic._collective.auto_select = True
    ic._collective.one_shot_all_reduce_threshold_bytes = max(old[1], message_bytes)

    def undo():
        ic._collective.auto_select, ic._collective.one_shot_all_reduce_threshold_bytes = old
    return undo
