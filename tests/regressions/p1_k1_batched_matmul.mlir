// P1: x(513,129,1,1) @ v(1,) compiled into 330,885 executed instructions (one 1x1x1 matmul per
// batch instance). A K = 1 contraction is a broadcast multiply.
// INPUT x: rng.uniform(-1, 1, (513, 129, 1, 1)).astype(np.float32)
// INPUT v: rng.uniform(-1, 1, (1,)).astype(np.float32)
// REF y: x.astype(np.float64) @ v.astype(np.float64)
graph @p1(%x: tensor<513x129x1x1xf32>, %v: tensor<1xf32>) {
  %y = tensor.matmul %x, %v : tensor<513x129x1xf32>
  return y = %y
}
