"""Hardware runtimes: the offline AMDGPU toolchain and compile cache, and the AMD/NVIDIA device runners.

The target table itself is the ground floor, ``tilesim.targets``.
"""
