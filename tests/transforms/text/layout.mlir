// RUN: canonicalize,decompose,layout
// The layout solver's choices (roles per dim; conversions where users disagree).

// softmax: rows on the partitions, the reduced axis free; no conversion
graph @softmax(%x: tensor<256x512xf32>) {
  %m = tensor.reduce %x {axes = [1], kind = max, keepdims = true} : tensor<256x1xf32>
  %s = tensor.sub %x, %m : tensor<256x512xf32>
  %e = tensor.exp %s : tensor<256x512xf32>
  %z = tensor.reduce %e {axes = [1], kind = sum, keepdims = true} : tensor<256x1xf32>
  %p = tensor.div %e, %z : tensor<256x512xf32>
  return y = %p
}
// CHECK-NOT: layout_convert
// CHECK: // layout @softmax (partitions = 128)
// CHECK: //   %x 
// CHECK-SAME: 256x512  [P, F]  128
// CHECK: //   %m 
// CHECK-SAME: 256x1    [P, F]  128
// CHECK: //   %mul
// CHECK-SAME: [P, F]  128
// CHECK-NOT: conversion

// -----
// layernorm: the weight vector broadcast along rows is F
graph @layernorm(%x: tensor<128x1024xf32>, %w: tensor<1024xf32>, %b: tensor<1024xf32>) {
  %mu = tensor.reduce %x {axes = [1], kind = mean, keepdims = true} : tensor<128x1xf32>
  %xc = tensor.sub %x, %mu : tensor<128x1024xf32>
  %v = tensor.reduce %xc {axes = [1], kind = var, keepdims = true} : tensor<128x1xf32>
  %eps = tensor.full {value = 1e-05} : tensor<f32>
  %ve = tensor.add %v, %eps : tensor<128x1xf32>
  %r = tensor.rsqrt %ve : tensor<128x1xf32>
  %n = tensor.mul %xc, %r : tensor<128x1024xf32>
  %s = tensor.mul %n, %w : tensor<128x1024xf32>
  %y = tensor.add %s, %b : tensor<128x1024xf32>
  return y = %y
}
// CHECK-NOT: layout_convert
// CHECK: //   %x 
// CHECK-SAME: [P, F]  128
// CHECK-NEXT: //   %w 
// CHECK-SAME: 1024      [F]     1
// CHECK-NEXT: //   %b 
// CHECK-SAME: [F]
// CHECK-NOT: conversion

// -----
// attention softmax(Q Kᵀ / 8) V: Q and K with d on the partitions (contraction), scores with
// query rows on the partitions; P·V contracts over the key axis, which softmax keeps free: the
// one genuine conversion moves P's key axis onto the partitions
graph @attention(%q: tensor<128x64xf32>, %k: tensor<128x64xf32>, %v: tensor<128x64xf32>) {
  %kt = tensor.transpose %k {perm = [1, 0]} : tensor<64x128xf32>
  %s0 = tensor.matmul %q, %kt : tensor<128x128xf32>
  %c = tensor.full {value = 8.0} : tensor<f32>
  %s = tensor.div %s0, %c : tensor<128x128xf32>
  %m = tensor.reduce %s {axes = [1], kind = max, keepdims = true} : tensor<128x1xf32>
  %sm = tensor.sub %s, %m : tensor<128x128xf32>
  %e = tensor.exp %sm : tensor<128x128xf32>
  %z = tensor.reduce %e {axes = [1], kind = sum, keepdims = true} : tensor<128x1xf32>
  %p = tensor.div %e, %z : tensor<128x128xf32>
  %o = tensor.matmul %p, %v : tensor<128x64xf32>
  return o = %o
}
// CHECK: %mul_2 = tensor.mul %exp, %reciprocal : tensor<128x128xf32>
// CHECK-NEXT: %mul_2_conv = tensor.layout_convert %mul_2 : tensor<128x128xf32>
// CHECK-NEXT: %o = tensor.matmul %mul_2_conv, %v : tensor<128x64xf32>
// CHECK: //   %q 
// CHECK-SAME: [F, P]  64
// CHECK-NEXT: //   %k 
// CHECK-SAME: [F, P]  64
// CHECK-NEXT: //   %v 
// CHECK-SAME: [P, F]  128
// CHECK-NEXT: //   %kt 
// CHECK-SAME: [P, F]  64
// CHECK-NEXT: //   %s0 
// CHECK-SAME: [P, F]  128
// CHECK: //   %mul_2 
// CHECK-SAME: [P, F]  128
// CHECK-NEXT: //   %mul_2_conv 
// CHECK-SAME: [F, P]  128
// CHECK-NEXT: //   %o 
// CHECK-SAME: [P, F]  128
// CHECK-NEXT: //   conversion %mul_2_conv = layout_convert %mul_2: [P, F] -> [F, P]
// CHECK-NOT: conversion

// -----
// a matmul chain (A @ B) @ C: the first product has M on the partitions, the second needs
// its K (the first's N, which is free) there
graph @chain(%a: tensor<128x256xf32>, %b: tensor<256x64xf32>, %c: tensor<64x32xf32>) {
  %ab = tensor.matmul %a, %b : tensor<128x64xf32>
  %abc = tensor.matmul %ab, %c : tensor<128x32xf32>
  return y = %abc
}
// CHECK: %ab_conv = tensor.layout_convert %ab
// CHECK: //   %a 
// CHECK-SAME: [F, P]
// CHECK-NEXT: //   %b 
// CHECK-SAME: [P, F]
// CHECK-NEXT: //   %c 
// CHECK-SAME: [P, F]
// CHECK-NEXT: //   %ab 
// CHECK-SAME: [P, F]
// CHECK-NEXT: //   %ab_conv 
// CHECK-SAME: [F, P]
// CHECK: conversion %ab_conv = layout_convert %ab: [P, F] -> [F, P]

// -----
// A @ (B @ C) needs no conversion: B @ C has its rows (the K of the outer product) on the
// partitions already
graph @chain_right(%a: tensor<128x256xf32>, %b: tensor<256x64xf32>, %c: tensor<64x32xf32>) {
  %bc = tensor.matmul %b, %c : tensor<256x32xf32>
  %abc = tensor.matmul %a, %bc : tensor<128x32xf32>
  return y = %abc
}
// CHECK-NOT: layout_convert
// CHECK: //   %bc 
// CHECK-SAME: [P, F]
// CHECK-NOT: conversion

// -----
// a genuine conflict: x is reduced over its last axis (which must be free) and also the
// left operand of a matmul contracting that axis (which must be on the partitions)
graph @conflict(%x: tensor<128x64xf32>, %w: tensor<64x32xf32>) {
  %s = tensor.reduce %x {axes = [1], kind = sum, keepdims = true} : tensor<128x1xf32>
  %m = tensor.matmul %x, %w : tensor<128x32xf32>
  %y = tensor.add %m, %s : tensor<128x32xf32>
  return y = %y
}
// CHECK: %x_conv = tensor.layout_convert %x : tensor<128x64xf32>
// CHECK-NEXT: %m = tensor.matmul %x_conv, %w
// CHECK: //   %x 
// CHECK-SAME: [P, F]
// CHECK: //   %x_conv 
// CHECK-SAME: [F, P]
// CHECK: conversion %x_conv = layout_convert %x: [P, F] -> [F, P]

// -----
// two users that agree share the conversion: one transpose feeds both matmuls
graph @shared(%x: tensor<128x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<64x16xf32>) {
  %s = tensor.reduce %x {axes = [1], kind = max, keepdims = true} : tensor<128x1xf32>
  %a = tensor.matmul %x, %w1 : tensor<128x32xf32>
  %b = tensor.matmul %x, %w2 : tensor<128x16xf32>
  return s = %s, a = %a, b = %b
}
// CHECK: %x_conv = tensor.layout_convert %x
// CHECK-NEXT: %a = tensor.matmul %x_conv, %w1
// CHECK-NEXT: %b = tensor.matmul %x_conv, %w2
// CHECK-NOT: tensor.layout_convert
// CHECK: return s = %s

// -----
// an elementwise producer of a matmul's left operand keeps rows on the partitions (loads and
// stores whole rows); the matmul reads it through a conversion (TensorE transposes), instead
// of K on the partitions reaching back into the multiply (element-wise transposing DMAs)
graph @scaled_lhs(%a: tensor<256x512xf32>, %b: tensor<512x256xf32>) {
  %c = tensor.full {value = 2.0} : tensor<f32>
  %s = tensor.mul %a, %c : tensor<256x512xf32>
  %e = tensor.exp %s : tensor<256x512xf32>
  %m = tensor.matmul %e, %b : tensor<256x256xf32>
  return y = %m
}
// CHECK: %e_conv = tensor.layout_convert %e : tensor<256x512xf32>
// CHECK-NEXT: %m = tensor.matmul %e_conv, %b
// CHECK: //   %a 
// CHECK-SAME: [P, F]
// CHECK: //   %s 
// CHECK-SAME: [P, F]
// CHECK-NEXT: //   %e 
// CHECK-SAME: [P, F]
// CHECK: conversion %e_conv = layout_convert %e: [P, F] -> [F, P]

// -----
// ... a producer whose natural layout already has K on the partitions (its input is stored
// transposed) and the right operand (K on the partitions is B's natural layout) need none
graph @scaled_natural(%a: tensor<512x256xf32>, %b: tensor<512x256xf32>) {
  %t = tensor.transpose %a {perm = [1, 0]} : tensor<256x512xf32>
  %c = tensor.full {value = 2.0} : tensor<f32>
  %s = tensor.mul %t, %c : tensor<256x512xf32>
  %r = tensor.mul %b, %c : tensor<512x256xf32>
  %m = tensor.matmul %s, %r : tensor<256x256xf32>
  return y = %m
}
// CHECK-NOT: layout_convert
// CHECK: //   %s 
// CHECK-SAME: [F, P]
// CHECK-NEXT: //   %r 
// CHECK-SAME: [P, F]
// CHECK-NOT: conversion

// -----
// batched matmul: batch dims are iterated
graph @bmm(%a: tensor<4x128x64xf32>, %b: tensor<4x64x32xf32>) {
  %c = tensor.matmul %a, %b : tensor<4x128x32xf32>
  return y = %c
}
// CHECK: //   %a 
// CHECK-SAME: [I, F, P]
// CHECK-NEXT: //   %b 
// CHECK-SAME: [I, P, F]
// CHECK-NEXT: //   %c 
// CHECK-SAME: [I, P, F]

// -----
// reshape splitting a free dim into heads keeps the pieces free; transposes permute roles
graph @heads(%x: tensor<128x256xf32>) {
  %r = tensor.reshape %x {shape = [128, 4, 64]} : tensor<128x4x64xf32>
  %t = tensor.transpose %r {perm = [1, 0, 2]} : tensor<4x128x64xf32>
  %m = tensor.reduce %t {axes = [2], kind = max, keepdims = true} : tensor<4x128x1xf32>
  return y = %m
}
// CHECK: //   %x 
// CHECK-SAME: [P, F]
// CHECK-NEXT: //   %r 
// CHECK-SAME: [P, F, F]
// CHECK-NEXT: //   %t 
// CHECK-SAME: [F, P, F]
