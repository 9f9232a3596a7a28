// P1 (N = 1 and M = 1 with batch dims): one tiny matmul per batch instance before; now a
// multiply and a row sum.
// INPUT a: rng.uniform(-1, 1, (40, 7, 24)).astype(np.float32)
// INPUT b: rng.uniform(-1, 1, (40, 24, 1)).astype(np.float32)
// INPUT c: rng.uniform(-1, 1, (40, 1, 7)).astype(np.float32)
// REF y: a.astype(np.float64) @ b.astype(np.float64)
// REF z: c.astype(np.float64) @ a.astype(np.float64)
graph @p1_mv(%a: tensor<40x7x24xf32>, %b: tensor<40x24x1xf32>, %c: tensor<40x1x7xf32>) {
  %y = tensor.matmul %a, %b : tensor<40x7x1xf32>
  %z = tensor.matmul %c, %a : tensor<40x1x24xf32>
  return y = %y, z = %z
}
