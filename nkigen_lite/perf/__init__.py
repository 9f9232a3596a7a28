"""Performance accounting: static/dynamic instruction counts, DMA traffic, cost estimates,
performance warnings."""

from .costmodel import Estimate, estimate
from .perf_warnings import PerfWarning, kernel_warnings
from .stats import KernelStats, kernel_stats

__all__ = ["Estimate", "KernelStats", "PerfWarning", "estimate", "kernel_stats", "kernel_warnings"]
