// B3 (int32 maximum, matmul operand): iotas of extent 1 along their axis are zeros.
// INPUT x: rng.integers(-5, 5, (8, 16)).astype(np.int32)
// INPUT w: rng.uniform(-1, 1, (16, 8)).astype(np.float32)
// REF m: np.maximum(x, np.int32(0)).sum(axis=0, dtype=np.int64).astype(np.int32)
// REF p: np.zeros((1, 16)) @ w.astype(np.float64)
graph @b3_int(%x: tensor<8x16xi32>, %w: tensor<16x8xf32>) {
  %i = tensor.iota {axis = 0} : tensor<1xi32>
  %mx = tensor.maximum %x, %i : tensor<8x16xi32>
  %m = tensor.reduce %mx {axes = [0], kind = sum} : tensor<16xi32>
  %j = tensor.iota {axis = 0} : tensor<1x16xf32>
  %p = tensor.matmul %j, %w : tensor<1x8xf32>
  return m = %m, p = %p
}
