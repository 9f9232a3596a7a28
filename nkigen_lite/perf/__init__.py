"""Performance accounting: static/dynamic instruction counts, DMA traffic, cost estimates."""

from .stats import KernelStats, kernel_stats

__all__ = ["KernelStats", "kernel_stats"]
