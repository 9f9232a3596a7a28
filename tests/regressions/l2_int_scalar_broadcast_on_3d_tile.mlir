// L2 (found by the for_loop single-op property, 2026-11-27): an int32 0-d input added to a
// (129, 1) int32 tensor. The group tiles it 43x3x1 and the exact GpSimd tensor_tensor read the
// scalar column as a (43, 1, 3) operand against a (43, 3, 1) tile: the NKI interpreter took it,
// the simulator failed to broadcast.
// INPUT x0: np.array(7, np.int32)
// INPUT x1: np.arange(129, dtype=np.int32).reshape(129, 1)
// REF y0: x1 + x0
graph @l2(%x0: tensor<i32>, %x1: tensor<129x1xi32>) {
  %add = tensor.add %x1, %x0 : tensor<129x1xi32>
  return y0 = %add
}
