"""A fake of hip-python's ``hip`` package for tilesim's tests: ``from hip import hip`` gives a module
with the subset of hip-python's API that :func:`tilesim.hw.amd.run_amd` calls, with hip-python's
return conventions, whose "device" is tilesim's own AMDGPU ISA emulator. **Not AMD hardware.**

Put ``tests/fakes`` first on ``sys.path`` and set ``TILESIM_ALLOW_FAKE_HIP=1`` (tilesim refuses the
fake otherwise) and ``TILESIM_FAKE_HIP_ARCH`` (the device's gcnArchName). See ``hip/hip.py``.
"""

from hip import hip

__all__ = ["hip"]
