"""The tuning namespaces: environment variables whose values change how fast a server runs.

Their values are shown in findings and enter the setup fingerprint (a secret-looking name
among them is still redacted: see envguard.knowledge.redaction). Each prefix says why.
"""

from __future__ import annotations

NAMESPACES: tuple[tuple[str, str], ...] = (
    ("NCCL_", "NCCL: collective algorithms, protocols, buffers, transports"),
    ("SGLANG_", "SGLang's own switches (kernels, overlap, memory)"),
    ("SGL_", "SGLang's older and kernel-library switches (SGL_ENABLE_JIT_DEEPGEMM)"),
    ("VLLM_", "vLLM's own switches (attention backend, V1 engine, compile levels)"),
    ("CUDA_", "the CUDA runtime: visible devices, launch blocking, module loading"),
    ("TORCH_", "PyTorch: TORCH_NCCL_* (async error handling, stream use), TORCH_CUDA_ARCH_LIST"),
    ("PYTORCH_", "PyTorch's allocator (PYTORCH_CUDA_ALLOC_CONF) and NVML checks"),
    ("NVIDIA_", "container runtime device and capability selection"),
    ("OMP_", "OpenMP threads of the CPU-side work (tokenizer, sampling)"),
    ("CUBLAS_", "cuBLAS workspace and math modes (CUBLAS_WORKSPACE_CONFIG)"),
    ("CUBLASLT_", "cuBLASLt heuristics and logging, used by FP8 GEMMs"),
    ("CUDNN_", "cuDNN algorithm selection and logging"),
    ("NVSHMEM_", "NVSHMEM transports for DeepEP expert parallelism"),
    ("UCX_", "UCX transports for disaggregated prefill/decode (NIXL, Mooncake)"),
    ("TRITON_", "Triton's kernel cache and autotuning, which decide kernels at load"),
    ("MKL_", "oneMKL threads for CPU-side math"),
    ("TORCHINDUCTOR_", "torch.compile's Inductor: autotuning, cache, max-autotune GEMMs"),
    ("FLASHINFER_", "FlashInfer's JIT and workspace, the attention kernels of both servers"),
)

PREFIXES = tuple(prefix for prefix, _ in NAMESPACES)


def in_tuning_namespace(name: str) -> bool:
    return name.startswith(PREFIXES)
