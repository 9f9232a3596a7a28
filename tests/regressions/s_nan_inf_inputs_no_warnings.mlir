// Smaller: RuntimeWarnings leaked from the interpreters and the simulator on NaN / inf inputs
// (matmul, products over partitions; sin of NaN was even an error in the simulator; sin of
// inf is documented as meaningless, not NaN, so it is not drawn here). The
// runner treats every RuntimeWarning as an error.
// INPUT x: np.tile(np.array([np.nan, np.inf, -np.inf, 0.0, 1e30, -1e30, 1.5, -2.5], np.float32), (130, 1))
// INPUT w: np.tile(np.array([1e30, np.inf, 2.0, np.nan, -1e30, 0.5, 1.0, -1.0], np.float32), (8, 1))
// REF m: x.astype(np.float64) @ w.astype(np.float64)
// REF p: np.prod(x.astype(np.float64), axis=0)
// INPUT z: np.array([np.nan, 0.5, -3.0, 100.0, np.nan, 1e4, -2.0, 0.0], np.float32)
// REF s: np.sin(z.astype(np.float64))
graph @s_nan(%x: tensor<130x8xf32>, %w: tensor<8x8xf32>, %z: tensor<8xf32>) {
  %m = tensor.matmul %x, %w : tensor<130x8xf32>
  %p = tensor.reduce %x {axes = [0], kind = prod} : tensor<8xf32>
  %s = tensor.sin %z : tensor<8xf32>
  return m = %m, p = %p, s = %s
}
