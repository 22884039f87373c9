"""Run C expressions of the code generator on the host: the exact text ``tilesim.codegen.elements``
emits, compiled with the ziglang wheel's clang for x86-64 (``python -m ziglang cc``) and fed 64-bit
words on stdin. The element codecs are integer code plus f32/f64 arithmetic that behaves the same
on every IEEE machine, so the host answers what the GPU answers (the GPU side is compiled for
every target in tests/test_emit_dtypes.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from tilesim.codegen.elements import HELPERS

_PRE = r"""
#include <stdio.h>
#include <stdlib.h>
typedef unsigned char ts_u8; typedef unsigned short ts_u16; typedef unsigned int ts_u32; typedef unsigned long long ts_u64;
#define TS_DEV
static inline float ts_f32(ts_u32 x) { return __builtin_bit_cast(float, x); }
static inline ts_u32 ts_bits(float x) { return __builtin_bit_cast(ts_u32, x); }
static inline float ts_f16_to_f32(ts_u32 x) { return (float)__builtin_bit_cast(_Float16, (ts_u16)x); }
static inline ts_u32 ts_f32_to_f16(float x) { return __builtin_bit_cast(ts_u16, (_Float16)x); }
"""


def host_functions(funcs: dict[str, str]) -> "HostProgram":
    """A host program with one function per entry: ``name -> C expression over ts_u64 x`` giving a
    value converted to ts_u64."""
    if importlib.util.find_spec("ziglang") is None:
        pytest.skip("the ziglang wheel (host clang) is not installed")
    names = sorted(funcs)
    cases = "".join(f"      case {i}: y = (ts_u64)({funcs[n]}); break;\n" for i, n in enumerate(names))
    src = (_PRE + "".join(HELPERS.values()) +
           "int main(int argc, char** argv) {\n  const int k = atoi(argv[1]);\n  size_t n;\n"
           "  if (fread(&n, 8, 1, stdin) != 1) return 2;\n"
           "  ts_u64* buf = (ts_u64*)malloc(n * 8); if (fread(buf, 8, n, stdin) != n) return 3;\n"
           "  for (size_t i = 0; i < n; ++i) { const ts_u64 x = buf[i]; ts_u64 y = 0; (void)x;\n"
           "    switch (k) {\n" + cases + "      default: return 4; }\n    buf[i] = y; }\n"
           "  fwrite(buf, 8, n, stdout); return 0; }\n")
    key = hashlib.sha256(src.encode()).hexdigest()[:16]
    d = os.path.join(tempfile.gettempdir(), f"tilesim-hostc-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, key)
    if not os.path.exists(exe):
        with open(exe + ".c", "w") as f:
            f.write(src)
        r = subprocess.run([sys.executable, "-m", "ziglang", "cc", "-O1", "-o", exe + ".tmp", exe + ".c"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        os.replace(exe + ".tmp", exe)
    return HostProgram(exe, {n: i for i, n in enumerate(names)})


class HostProgram:
    def __init__(self, exe: str, index: dict[str, int]) -> None:
        self.exe, self.index = exe, index

    def __call__(self, name: str, words: np.ndarray) -> np.ndarray:
        w = np.ascontiguousarray(np.asarray(words).astype(np.uint64))
        data = np.array([w.size], np.uint64).tobytes() + w.tobytes()
        r = subprocess.run([self.exe, str(self.index[name])], input=data, capture_output=True, timeout=300)
        assert r.returncode == 0, (name, r.returncode)
        return np.frombuffer(r.stdout, np.uint64)
