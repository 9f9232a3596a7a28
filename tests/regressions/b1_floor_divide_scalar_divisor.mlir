// B1: x // 0.1 and x % 0.1 with a Python-scalar divisor. Canonicalize folded the Dekker split
// of the divisor in float64 (full {value = 0.10000000000002274}), so the kernel's quotient
// of 5 * f32(0.1) was 5 instead of NumPy's 4 and its residues ~1e-13.
// INPUT x: np.arange(1, 7, dtype=np.float32) * np.float32(0.1)
// REF q: x // np.float32(0.1)
// REF r: x % np.float32(0.1)
graph @b1(%x: tensor<6xf32>) {
  %c = tensor.full {value = 0.1} : tensor<f32>
  %q = tensor.floor_divide %x, %c : tensor<6xf32>
  %r = tensor.mod %x, %c : tensor<6xf32>
  return q = %q, r = %r
}
