"""tilesim benchmarks (issue 7): ``python -m benchmarks [--quick | --full] [--out PATH]``.

Every figure is timed in the same run as its baseline and reported as a ratio, with the absolute
times and the machine; see ``docs/performance.md`` for the method and what bounds each figure.
"""
