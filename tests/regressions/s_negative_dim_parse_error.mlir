// Smaller: a negative dimension was reported as "unknown dtype '-2x3xf32'".
// ERROR: negative dimension -2
graph @neg(%x: tensor<-2x3xf32>) {
  return y = %x
}
