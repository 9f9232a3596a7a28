// B5: a reduction over all axes was planned on one partition; the project's own verifier
// rejected sum(cast(x(129, 300), i32)) (SBUF peak 237,604 > 212,984 B/partition).
// INPUT x: rng.uniform(-4, 4, (129, 300)).astype(np.float32)
// REF y: np.trunc(x).astype(np.int32).sum(dtype=np.int64).astype(np.int32)
graph @b5(%x: tensor<129x300xf32>) {
  %i = tensor.cast %x {dtype = i32} : tensor<129x300xi32>
  %y = tensor.reduce %i {axes = [0, 1], kind = sum} : tensor<i32>
  return y = %y
}
