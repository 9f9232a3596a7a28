"""Performance accounting: static/dynamic instruction counts, DMA traffic, cost estimates."""

from .costmodel import Estimate, estimate
from .stats import KernelStats, kernel_stats

__all__ = ["Estimate", "KernelStats", "estimate", "kernel_stats"]
