"""Named model graphs (the workloads that matter: softmax, norms, RoPE, attention, MLPs).

``WORKLOADS[name](**shape_options) -> Graph`` and ``reference(name)`` gives the float64 NumPy
reference written independently of the compiler.
"""

from .registry import WORKLOADS, Workload, get_workload

__all__ = ["WORKLOADS", "Workload", "get_workload"]
