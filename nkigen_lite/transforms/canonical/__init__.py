"""The canonicalization rules, grouped by kind; ``PATTERNS`` is the full set in a fixed order."""

from .attention import ATTENTION_PATTERNS
from .causal_attention import CAUSAL_ATTENTION_PATTERNS
from .decode_attention import DECODE_ATTENTION_PATTERNS
from .empty import EMPTY_PATTERNS
from .expert_matmul import EXPERT_MATMUL_PATTERNS
from .folding import FOLDING_PATTERNS
from .gather_shapes import GATHER_SHAPE_PATTERNS
from .gathered_matmul import GATHERED_MATMUL_PATTERNS
from .gqa import GQA_PATTERNS
from .grouped_attention import GROUPED_ATTENTION_PATTERNS
from .identities import IDENTITY_PATTERNS
from .leaky_relu import LEAKY_RELU_PATTERNS
from .masks import MASK_PATTERNS
from .matmul_split import MATMUL_SPLIT_PATTERNS
from .recompose import RECOMPOSE_PATTERNS
from .shapes import SHAPE_PATTERNS
from .sink_attention import SINK_ATTENTION_PATTERNS
from .sink_softmax import SINK_SOFTMAX_PATTERNS
from .small_axis_sum import SMALL_AXIS_SUM_PATTERNS
from .softmax_scale import SOFTMAX_SCALE_PATTERNS

PATTERNS = (
    EMPTY_PATTERNS
    + FOLDING_PATTERNS
    + IDENTITY_PATTERNS
    + SHAPE_PATTERNS
    + RECOMPOSE_PATTERNS
    + MASK_PATTERNS
    + LEAKY_RELU_PATTERNS
    + SOFTMAX_SCALE_PATTERNS
    + GATHER_SHAPE_PATTERNS
    + GQA_PATTERNS
    + DECODE_ATTENTION_PATTERNS
    + ATTENTION_PATTERNS
    + GROUPED_ATTENTION_PATTERNS
    + SINK_SOFTMAX_PATTERNS
    + SINK_ATTENTION_PATTERNS
    + CAUSAL_ATTENTION_PATTERNS
    + MATMUL_SPLIT_PATTERNS
    + GATHERED_MATMUL_PATTERNS
    + EXPERT_MATMUL_PATTERNS
    + SMALL_AXIS_SUM_PATTERNS
)

__all__ = ["PATTERNS"]
