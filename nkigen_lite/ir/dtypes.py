"""Element types: IR name, NumPy storage dtype, byte size, kind, and NumPy-style promotion.

trn2 has no 64-bit types, so where NumPy would produce float64 / int64 / uint64 the result is
narrowed to float32 / int32 / uint32 (the same choice JAX makes with x64 disabled).
"""

from __future__ import annotations

import enum
import re

import ml_dtypes
import numpy as np

from .errors import BuildError


class DTypeKind(enum.Enum):
    """Broad category of an element type."""

    FLOAT = "float"
    INT = "int"
    UINT = "uint"
    BOOL = "bool"


class DType:
    """One element type; instances are singletons compared by identity."""

    __slots__ = ("name", "numpy_name", "np_dtype", "itemsize", "kind", "mantissa_bits")

    def __init__(self, name, numpy_name, np_dtype, itemsize, kind, mantissa_bits=0):
        self.name = name
        self.numpy_name = numpy_name
        self.np_dtype = np.dtype(np_dtype)
        self.itemsize = itemsize
        self.kind = kind
        self.mantissa_bits = mantissa_bits

    @property
    def is_float(self) -> bool:
        return self.kind is DTypeKind.FLOAT

    @property
    def is_int(self) -> bool:
        """True for signed and unsigned integers (not bool)."""
        return self.kind in (DTypeKind.INT, DTypeKind.UINT)

    @property
    def is_bool(self) -> bool:
        return self.kind is DTypeKind.BOOL

    @property
    def is_signed(self) -> bool:
        return self.kind in (DTypeKind.INT, DTypeKind.FLOAT)

    @property
    def is_native_numpy(self) -> bool:
        """True when NumPy itself defines the type (promotion and ufunc rules come from NumPy)."""
        # isbuiltin: ml_dtypes types are user-defined (float8_e5m2 even reports kind 'f')
        return self.np_dtype.isbuiltin == 1 and self.np_dtype.kind in "biuf" and self is not tfloat32

    @property
    def bits(self) -> int:
        return self.itemsize * 8

    def python_value(self, value):
        """Convert a Python scalar to the Python type matching this dtype (bool, int or float)."""
        if self.is_bool:
            return bool(value)
        if self.is_int:
            return int(value)
        return float(value)

    def __repr__(self) -> str:
        return f"nk.{self.numpy_name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (get_dtype, (self.name,))


float32 = DType("f32", "float32", np.float32, 4, DTypeKind.FLOAT, 23)
float16 = DType("f16", "float16", np.float16, 2, DTypeKind.FLOAT, 10)
bfloat16 = DType("bf16", "bfloat16", ml_dtypes.bfloat16, 2, DTypeKind.FLOAT, 7)
# tf32 is stored in 4 bytes (as float32) with a 10-bit mantissa; values are rounded on write.
tfloat32 = DType("tf32", "tfloat32", np.float32, 4, DTypeKind.FLOAT, 10)
float8_e4m3 = DType("f8e4m3", "float8_e4m3", ml_dtypes.float8_e4m3, 1, DTypeKind.FLOAT, 3)
float8_e4m3fn = DType("f8e4m3fn", "float8_e4m3fn", ml_dtypes.float8_e4m3fn, 1, DTypeKind.FLOAT, 3)
float8_e5m2 = DType("f8e5m2", "float8_e5m2", ml_dtypes.float8_e5m2, 1, DTypeKind.FLOAT, 2)
float8_e3m4 = DType("f8e3m4", "float8_e3m4", ml_dtypes.float8_e3m4, 1, DTypeKind.FLOAT, 4)
int8 = DType("i8", "int8", np.int8, 1, DTypeKind.INT)
int16 = DType("i16", "int16", np.int16, 2, DTypeKind.INT)
int32 = DType("i32", "int32", np.int32, 4, DTypeKind.INT)
uint8 = DType("u8", "uint8", np.uint8, 1, DTypeKind.UINT)
uint16 = DType("u16", "uint16", np.uint16, 2, DTypeKind.UINT)
uint32 = DType("u32", "uint32", np.uint32, 4, DTypeKind.UINT)
bool_ = DType("bool", "bool_", np.bool_, 1, DTypeKind.BOOL)

ALL_DTYPES: tuple[DType, ...] = (
    float32,
    float16,
    bfloat16,
    tfloat32,
    float8_e4m3,
    float8_e4m3fn,
    float8_e5m2,
    float8_e3m4,
    int8,
    int16,
    int32,
    uint8,
    uint16,
    uint32,
    bool_,
)
FLOAT_DTYPES = tuple(d for d in ALL_DTYPES if d.is_float)
INT_DTYPES = tuple(d for d in ALL_DTYPES if d.is_int)
FP8_DTYPES = (float8_e4m3, float8_e4m3fn, float8_e5m2, float8_e3m4)

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({d.numpy_name: d for d in ALL_DTYPES})
_BY_NAME["bool"] = bool_
_BY_NP = {d.np_dtype: d for d in ALL_DTYPES if d is not tfloat32}
_DTYPE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_FLOAT_STORAGE = {np.dtype(np.float64)} | {d.np_dtype for d in FLOAT_DTYPES}
_NARROW = {np.dtype(np.float64): float32, np.dtype(np.int64): int32, np.dtype(np.uint64): uint32}


def get_dtype(spec) -> DType:
    """Resolve a DType, an IR name ('bf16'), a NumPy name ('bfloat16') or a NumPy dtype."""
    if isinstance(spec, DType):
        return spec
    if isinstance(spec, str) and spec in _BY_NAME:
        return _BY_NAME[spec]
    if isinstance(spec, str) and not _DTYPE_WORD.fullmatch(spec):
        # np.dtype would read structured specs like '(2,3)f4' with ast.literal_eval
        raise BuildError(f"unknown dtype {spec!r}")
    try:
        npd = np.dtype(spec)
    except TypeError:
        raise BuildError(f"unknown dtype {spec!r}") from None
    if npd in _BY_NP:
        return _BY_NP[npd]
    raise BuildError(
        f"dtype {npd} is not supported on trn2; supported: " + ", ".join(d.numpy_name for d in ALL_DTYPES)
    )


def from_numpy(npd: np.dtype, *, narrow: bool = True) -> DType:
    """Map a NumPy result dtype to a DType, narrowing 64-bit types to 32-bit ones."""
    npd = np.dtype(npd)
    if narrow and npd in _NARROW:
        return _NARROW[npd]
    return get_dtype(npd)


def _float_rank(d: DType) -> int:
    return {1: 0, 2: 1}.get(d.itemsize, 3 if d is float32 else 2)


def promote_types(a: DType, b: DType) -> DType:
    """Result dtype of a binary op on two tensors (NumPy rules, 64-bit narrowed)."""
    if a is b:
        return a
    if a.is_native_numpy and b.is_native_numpy:
        return from_numpy(np.promote_types(a.np_dtype, b.np_dtype))
    if a.is_float and b.is_float:
        ra, rb = _float_rank(a), _float_rank(b)
        if ra != rb:
            return a if ra > rb else b
        # same width, different formats: widen to the next common format
        return {0: bfloat16, 1: float32, 2: tfloat32}[ra]
    f, other = (a, b) if a.is_float else (b, a)
    if other.is_bool:
        return f
    # integer with a non-NumPy float: the float must hold the integer the way NumPy would
    need = from_numpy(np.promote_types(other.np_dtype, np.float16))
    if need is float16:
        return f if f.itemsize >= 2 else bfloat16
    return float32


def weak_scalar_dtype(tensor_dtype: DType, value) -> DType:
    """Dtype a Python scalar takes next to a tensor under NEP 50 (Python scalars are weak)."""
    if isinstance(value, (bool, np.bool_)):
        return tensor_dtype
    if isinstance(value, (int, np.integer)):
        if tensor_dtype.is_bool:
            return int32
        if tensor_dtype.is_int:
            info = np.iinfo(tensor_dtype.np_dtype)
            if not info.min <= int(value) <= info.max:
                raise BuildError(f"Python integer {value} is out of bounds for {tensor_dtype.numpy_name}")
        return tensor_dtype
    if isinstance(value, (float, np.floating)):
        return tensor_dtype if tensor_dtype.is_float else float32
    raise BuildError(f"unsupported scalar {value!r} of type {type(value).__name__}")


def round_tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 values to tf32 precision (10-bit mantissa, round to nearest even)."""
    x = np.array(x, dtype=np.float32, order="C")  # (ascontiguousarray would make 0-d 1-d)
    bits = x.view(np.uint32).astype(np.uint64)
    finite = np.isfinite(x)
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0xFFF + lsb) & ~np.uint64(0x1FFF)).astype(np.uint32)
    out = np.where(finite, rounded.view(np.float32), x)
    return out.astype(np.float32)


def cast_array(x, dtype: DType, float_to_int: str = "truncate") -> np.ndarray:
    """Convert an array to a dtype's storage (rounding floats as a hardware write does).

    Float -> integer conversion saturates (NaN -> 0) and rounds either toward zero
    (``"truncate"``, NumPy's ``astype``) or to nearest even (``"rne"``, what NKI engines do).
    """
    x = np.asarray(x)
    if dtype is tfloat32:
        return round_tf32(x.astype(np.float32))
    if dtype.is_int and x.dtype in _FLOAT_STORAGE:
        info = np.iinfo(dtype.np_dtype)
        xf = x.astype(np.float64)
        r = np.trunc(xf) if float_to_int == "truncate" else np.rint(xf)
        r = np.where(np.isnan(r), 0, np.clip(r, info.min, info.max))
        return r.astype(dtype.np_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype.np_dtype)
