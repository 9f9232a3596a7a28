// RUN: decompose
// Decompositions for trn2 (no divide, floor, cos or mod instruction; sin and arctan only on
// a limited input range). Numerics against the original ops are checked by the driver.

// a / b → a * reciprocal(b)
graph @div(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  %d = tensor.div %a, %b : tensor<4x8xf32>
  return y = %d
}
// CHECK: %reciprocal = tensor.reciprocal %b : tensor<8xf32>
// CHECK-NEXT: %mul = tensor.mul %a, %reciprocal : tensor<4x8xf32>
// CHECK-NOT: tensor.div

// -----
// int / int is a float division: the operands are cast first
graph @div_int(%a: tensor<8xi32>, %b: tensor<8xi32>) {
  %d = tensor.div %a, %b : tensor<8xf32>
  return y = %d
}
// CHECK: tensor.cast %a {dtype = f32}
// CHECK: tensor.cast %b {dtype = f32}
// CHECK: tensor.reciprocal
// CHECK: tensor.mul

// -----
// division by a constant becomes multiplication by its folded reciprocal
graph @div_const(%a: tensor<8xf32>) {
  %c = tensor.full {value = 8.0} : tensor<f32>
  %d = tensor.div %a, %c : tensor<8xf32>
  return y = %d
}
// CHECK: %c = tensor.full {value = 0.125} : tensor<f32>
// CHECK-NEXT: %mul = tensor.mul %a, %c : tensor<8xf32>

// -----
// x ** 5 → square(square(x)) * x;  x ** -2 → reciprocal(square(x));  x ** 0 → 1
graph @pow(%x: tensor<8xf32>) {
  %five = tensor.full {value = 5.0} : tensor<f32>
  %m2 = tensor.full {value = -2} : tensor<i32>
  %zero = tensor.full {value = 0.0} : tensor<f32>
  %a = tensor.pow %x, %five : tensor<8xf32>
  %b = tensor.pow %x, %m2 : tensor<8xf32>
  %c = tensor.pow %x, %zero : tensor<8xf32>
  return a = %a, b = %b, c = %c
}
// CHECK: %square = tensor.square %x
// CHECK-NEXT: %square_1 = tensor.square %square
// CHECK-NEXT: %mul = tensor.mul %x, %square_1
// CHECK-NEXT: %reciprocal = tensor.reciprocal %square

// CHECK-NEXT: %c = tensor.full {value = 1.0} : tensor<8xf32>
// CHECK-NOT: tensor.pow

// -----
// integer powers of integers stay exact (wrapping like NumPy)
graph @pow_int(%x: tensor<8xi32>) {
  %three = tensor.full {value = 3} : tensor<i32>
  %a = tensor.pow %x, %three : tensor<8xi32>
  return y = %a
}
// CHECK: tensor.square %x : tensor<8xi32>
// CHECK-NEXT: tensor.mul %x, %square : tensor<8xi32>

// -----
// a non-integer exponent keeps the ALU power operator
graph @pow_half(%x: tensor<8xf32>) {
  %h = tensor.full {value = 0.5} : tensor<f32>
  %a = tensor.pow %x, %h : tensor<8xf32>
  return y = %a
}
// CHECK: tensor.pow %x, %h

// -----
// floor(x) through a truncating cast: t = trunc(x); t - 1 where t > x; x itself when |x| >= 2**31
graph @floor(%x: tensor<16xf32>) {
  %f = tensor.floor %x : tensor<16xf32>
  return y = %f
}
// CHECK: tensor.cast %x {dtype = i32}
// CHECK-NEXT: tensor.cast %{{cast}} {dtype = f32}
// CHECK: tensor.greater
// CHECK: tensor.sub
// CHECK: tensor.where
// CHECK: tensor.abs %x
// CHECK: tensor.full {value = 2147483648.0}
// CHECK: tensor.less
// CHECK: tensor.where
// CHECK-NOT: tensor.floor

// -----
// ceil(x) likewise, rounding up
graph @ceil(%x: tensor<16xbf16>) {
  %f = tensor.ceil %x : tensor<16xbf16>
  return y = %f
}
// CHECK: tensor.less %{{cast_1}}, %x
// CHECK: tensor.add
// CHECK-NOT: tensor.ceil

// -----
// floor of an integer is the integer
graph @floor_int(%x: tensor<8xi16>) {
  %f = tensor.floor %x : tensor<8xi16>
  return y = %f
}
// CHECK: graph @floor_int
// CHECK-NEXT: return y = %x

// -----
// cos(x) → sin(r) with r = x + pi/2 reduced into [-pi, pi] (Cody-Waite, then a clamp)
graph @cos(%x: tensor<64xf32>) {
  %c = tensor.cos %x : tensor<64xf32>
  return y = %c
}
// CHECK: tensor.mul %x
// CHECK: value = 6.28125
// CHECK: tensor.maximum
// CHECK: tensor.minimum
// CHECK: tensor.sin
// CHECK-NOT: tensor.cos

// -----
// sin(x) of any x is range-reduced the same way ...
graph @sin(%x: tensor<64xf16>) {
  %s = tensor.sin %x : tensor<64xf16>
  return y = %s
}
// CHECK: tensor.cast %x {dtype = f32}
// CHECK: tensor.minimum
// CHECK: %sin = tensor.sin
// CHECK: tensor.cast %sin {dtype = f16}

// -----
// ... unless its operand is already clamped into [-pi, pi]
graph @sin_in_range(%x: tensor<64xf32>) {
  %lo = tensor.full {value = -3.0} : tensor<f32>
  %hi = tensor.full {value = 3.0} : tensor<f32>
  %a = tensor.maximum %x, %lo : tensor<64xf32>
  %b = tensor.minimum %a, %hi : tensor<64xf32>
  %s = tensor.sin %b : tensor<64xf32>
  return y = %s
}
// CHECK: %s = tensor.sin %b : tensor<64xf32>
// CHECK-NEXT: return y = %s

// -----
// arctan(x) for |x| > 1 through pi/2 - arctan(1/x)
graph @arctan(%x: tensor<64xf32>) {
  %s = tensor.arctan %x : tensor<64xf32>
  return y = %s
}
// CHECK: tensor.reciprocal %x
// CHECK: tensor.arctan
// CHECK: tensor.sign %x
// CHECK: value = 1.5707963267948966

// -----
// mean → sum * (1/N), keepdims=False → keepdims=True + reshape
graph @mean(%x: tensor<4x10xf32>) {
  %m = tensor.reduce %x {axes = [1], kind = mean} : tensor<4xf32>
  return y = %m
}
// CHECK: %reduce = tensor.reduce %x {axes = [1], kind = sum, keepdims = true} : tensor<4x1xf32>
// CHECK-NEXT: %c = tensor.full {value = 0.1} : tensor<f32>
// CHECK-NEXT: %mul = tensor.mul %reduce, %c : tensor<4x1xf32>
// CHECK-NEXT: %reshape = tensor.reshape %mul {shape = [4]} : tensor<4xf32>

// -----
// mean of bf16 sums in f32
graph @mean_bf16(%x: tensor<4x10xbf16>) {
  %m = tensor.reduce %x {axes = [0, 1], kind = mean, keepdims = true} : tensor<1x1xbf16>
  return y = %m
}
// CHECK: tensor.cast %x {dtype = f32}
// CHECK: kind = sum
// CHECK: value = 0.025
// CHECK: tensor.cast %mul {dtype = bf16} : tensor<1x1xbf16>

// -----
// var (ddof=1) two-pass: sum(square(x - mean(x))) / (N - 1); std = sqrt(var)
graph @var(%x: tensor<4x10xf32>) {
  %v = tensor.reduce %x {axes = [1], kind = var, keepdims = true, ddof = 1} : tensor<4x1xf32>
  %s = tensor.reduce %x {axes = [1], kind = std, keepdims = true} : tensor<4x1xf32>
  return v = %v, s = %s
}
// CHECK: tensor.reduce %x {axes = [1], kind = sum, keepdims = true}
// CHECK: tensor.sub %x
// CHECK: tensor.square
// CHECK: value = 0.1111111111111111
// CHECK: tensor.sqrt
// CHECK-NOT: kind = var
// CHECK-NOT: kind = std

// -----
// integer reductions with keepdims=False keep their kind (i16: exact in fp32, one reduction)
graph @max_keep(%x: tensor<4x10xi16>) {
  %m = tensor.reduce %x {axes = [0], kind = max} : tensor<10xi16>
  return y = %m
}
// CHECK: tensor.reduce %x {axes = [0], kind = max, keepdims = true} : tensor<1x10xi16>
// CHECK-NEXT: tensor.reshape %max {shape = [10]} : tensor<10xi16>

// -----
// max / min of int32 (not exact in the engines' fp32): the extreme of the high parts x & -65536,
// then of the low parts x & 65535 where the high part is extreme (both exact in fp32), or-ed
graph @min_i32(%x: tensor<4x10xi32>) {
  %m = tensor.reduce %x {axes = [1], kind = min, keepdims = true} : tensor<4x1xi32>
  return y = %m
}
// CHECK: %c = tensor.full {value = -65536} : tensor<i32>
// CHECK-NEXT: %bitwise_and = tensor.bitwise_and %x, %c : tensor<4x10xi32>
// CHECK-NEXT: %cast = tensor.cast %bitwise_and {dtype = f32} : tensor<4x10xf32>
// CHECK: %bitwise_and_1 = tensor.bitwise_and %x, %c_1 : tensor<4x10xi32>
// CHECK: %reduce = tensor.reduce %cast {axes = [1], kind = min, keepdims = true} : tensor<4x1xf32>
// CHECK-NEXT: %equal = tensor.equal %cast, %reduce : tensor<4x10xbool>
// CHECK-NEXT: %c_2 = tensor.full {value = 65536.0} : tensor<f32>
// CHECK-NEXT: %where = tensor.where %equal, %cast_1, %c_2 : tensor<4x10xf32>
// CHECK-NEXT: %reduce_1 = tensor.reduce %where {axes = [1], kind = min, keepdims = true} : tensor<4x1xf32>
// CHECK: %bitwise_or = tensor.bitwise_or %cast_2, %cast_3 : tensor<4x1xi32>
// CHECK-NOT: xi32>

// -----
// prod is native on trn2 (multiply is a reduction operator)
graph @prod(%x: tensor<4x10xf32>) {
  %m = tensor.reduce %x {axes = [1], kind = prod, keepdims = true} : tensor<4x1xf32>
  return y = %m
}
// CHECK: kind = prod

// -----
// floor_divide and mod of floats: estimate, exact residual sign, correction
graph @floordiv(%a: tensor<64xf32>, %b: tensor<64xf32>) {
  %q = tensor.floor_divide %a, %b : tensor<64xf32>
  %r = tensor.mod %a, %b : tensor<64xf32>
  return q = %q, r = %r
}
// CHECK: tensor.reciprocal %b
// CHECK: value = 4097.0
// CHECK-NOT: tensor.floor_divide
// CHECK-NOT: tensor.mod

// -----
// ... and of integers
graph @floordiv_int(%a: tensor<64xi8>, %b: tensor<64xi8>) {
  %q = tensor.floor_divide %a, %b : tensor<64xi8>
  %r = tensor.mod %a, %b : tensor<64xi8>
  return q = %q, r = %r
}
// CHECK: tensor.cast %a {dtype = i32}
// CHECK: tensor.equal
// CHECK-NOT: tensor.floor_divide
// CHECK-NOT: tensor.mod

// -----
// composite ops (nk.define_op) expand into their definitions: softmax
graph @softmax(%x: tensor<4x8xf32>) {
  %s = tensor.softmax %x : tensor<4x8xf32>
  return y = %s
}
// CHECK: %max = tensor.reduce %x {axes = [1], kind = max, keepdims = true} : tensor<4x1xf32>
// CHECK-NEXT: %sub = tensor.sub %x, %max : tensor<4x8xf32>
// CHECK-NEXT: %exp = tensor.exp %sub : tensor<4x8xf32>
// CHECK-NEXT: %sum = tensor.reduce %exp {axes = [1], kind = sum, keepdims = true}
// CHECK-NEXT: %reciprocal = tensor.reciprocal %sum
// CHECK-NEXT: %mul = tensor.mul %exp, %reciprocal : tensor<4x8xf32>
// CHECK-NOT: tensor.softmax

// -----
// ... logsumexp of bf16 computes in f32 and drops the reduced axis at the end
graph @logsumexp(%x: tensor<4x8xbf16>) {
  %s = tensor.logsumexp %x {axis = 0} : tensor<8xbf16>
  return y = %s
}
// CHECK: %cast = tensor.cast %x {dtype = f32} : tensor<4x8xf32>
// CHECK: %log = tensor.log %sum : tensor<1x8xf32>
// CHECK-NEXT: %add = tensor.add %log, %max : tensor<1x8xf32>
// CHECK-NEXT: %reshape = tensor.reshape %add {shape = [8]} : tensor<8xf32>
// CHECK-NEXT: %cast_1 = tensor.cast %reshape {dtype = bf16} : tensor<8xbf16>
// CHECK-NOT: tensor.logsumexp

// -----
// a K = 1 matmul is a broadcast multiply (computed in f32, cast once)
graph @matmul_k1(%a: tensor<5x3x1xbf16>, %b: tensor<1x4xbf16>) {
  %c = tensor.matmul %a, %b : tensor<5x3x4xbf16>
  return y = %c
}
// CHECK: tensor.cast %a {dtype = f32}
// CHECK: tensor.cast %b {dtype = f32}
// CHECK: tensor.mul
// CHECK: tensor.cast {{.*}} {dtype = bf16} : tensor<5x3x4xbf16>
// CHECK-NOT: tensor.matmul

// -----
// a batched matrix-vector product (N = 1) is a multiply and a row sum
graph @matmul_n1(%a: tensor<6x3x8xf32>, %b: tensor<6x8x1xf32>) {
  %c = tensor.matmul %a, %b : tensor<6x3x1xf32>
  return y = %c
}
// CHECK: %transpose = tensor.transpose %b {perm = [0, 2, 1]} : tensor<6x1x8xf32>
// CHECK-NEXT: %mul = tensor.mul %a, %transpose : tensor<6x3x8xf32>
// CHECK-NEXT: %reduce = tensor.reduce %mul {axes = [2], kind = sum, keepdims = true} : tensor<6x3x1xf32>
// CHECK-NOT: tensor.matmul

// -----
// a batched M = 1 product sums over the rows of B
graph @matmul_m1(%a: tensor<6x1x8xf32>, %b: tensor<8x5xf32>) {
  %c = tensor.matmul %a, %b : tensor<6x1x5xf32>
  return y = %c
}
// CHECK: %transpose = tensor.transpose %a {perm = [0, 2, 1]} : tensor<6x8x1xf32>
// CHECK-NEXT: %mul = tensor.mul %transpose, %b : tensor<6x8x5xf32>
// CHECK-NEXT: %reduce = tensor.reduce %mul {axes = [1], kind = sum, keepdims = true} : tensor<6x1x5xf32>
// CHECK-NOT: tensor.matmul

// -----
// a single 2-D matrix-vector product stays a matmul (the Tensor engine does it well)
graph @matmul_mv(%a: tensor<64x32xf32>, %b: tensor<32x1xf32>) {
  %c = tensor.matmul %a, %b : tensor<64x1xf32>
  return y = %c
}
// CHECK: tensor.matmul %a, %b

// -----
// a u32 sum (the engines add in fp32): digit planes x & (mask << s) sized so that 300 digits sum
// within 2**24 (15 bits: planes at bits 0, 15 and 30), each scaled by 2**-s and summed in f32,
// the plane sums combined in 16-bit halves and joined by an or; an i8 sum of 300 stays one
// reduction
graph @wide_sum(%x: tensor<4x300xu32>, %y: tensor<4x300xi8>) {
  %s = tensor.reduce %x {axes = [1], kind = sum, keepdims = true} : tensor<4x1xu32>
  %t = tensor.reduce %y {axes = [1], kind = sum, keepdims = true} : tensor<4x1xi32>
  return s = %s, t = %t
}
// CHECK: %bitwise_and = tensor.bitwise_and %x, %c : tensor<4x300xu32>
// CHECK: %reduce = tensor.reduce %mul {axes = [1], kind = sum, keepdims = true} : tensor<4x1xf32>
// CHECK: %c_2 = tensor.full {value = 1073709056} : tensor<u32>
// CHECK: %c_4 = tensor.full {value = 3221225472} : tensor<u32>
// CHECK: %reduce_2 = tensor.reduce %mul_2 {axes = [1], kind = sum, keepdims = true} : tensor<4x1xf32>
// CHECK-NOT: tensor.slice
// CHECK: %bitwise_or = tensor.bitwise_or %cast_15, %cast_16 : tensor<4x1xu32>
// CHECK-NEXT: %t = tensor.reduce %y {axes = [1], kind = sum, keepdims = true} : tensor<4x1xi32>
// CHECK-NEXT: return s = %bitwise_or, t = %t

// -----
// (i * 3 + 7) & 255 in i32 wraps mod 2**32 (a 28-instruction multiply, an 11-instruction add on
// the engines): only the low 8 bits are kept, so the tree runs on i & 255 (every value then
// within [0, 772]); a mask with bits up to 31 over a cube would still wrap and stays
graph @low_bits(%i: tensor<4x8xi32>) {
  %c3 = tensor.full {value = 3} : tensor<i32>
  %c7 = tensor.full {value = 7} : tensor<i32>
  %m = tensor.full {value = 255} : tensor<i32>
  %big = tensor.full {value = 2147483647} : tensor<i32>
  %mul = tensor.mul %i, %c3 : tensor<4x8xi32>
  %add = tensor.add %mul, %c7 : tensor<4x8xi32>
  %y = tensor.bitwise_and %add, %m : tensor<4x8xi32>
  %sq = tensor.mul %i, %i : tensor<4x8xi32>
  %cube = tensor.mul %sq, %i : tensor<4x8xi32>
  %z = tensor.bitwise_and %cube, %big : tensor<4x8xi32>
  return y = %y, z = %z
}
// CHECK: %bitwise_and = tensor.bitwise_and %i, %m : tensor<4x8xi32>
// CHECK-NEXT: %mul = tensor.mul %bitwise_and, %c3 : tensor<4x8xi32>
// CHECK-NEXT: %add = tensor.add %mul, %c7 : tensor<4x8xi32>
// CHECK-NEXT: %bitwise_and_1 = tensor.bitwise_and %add, %m : tensor<4x8xi32>
// CHECK: %z = tensor.bitwise_and %cube, %big : tensor<4x8xi32>

// -----
// an i32 mean (NumPy: the exact sum, divided): limb totals over chunks of 256 added in i32, the
// low total's bits above 16 carried into the high one, (f32(high) * 65536 + f32(low)) * (1/N);
// an i16 mean of 30 (sum within 2**24) stays one f32 sum
graph @wide_mean(%x: tensor<4x300xi32>, %y: tensor<4x30xi16>) {
  %m = tensor.reduce %x {axes = [1], kind = mean, keepdims = true} : tensor<4x1xf32>
  %n = tensor.reduce %y {axes = [1], kind = mean, keepdims = true} : tensor<4x1xf32>
  return m = %m, n = %n
}
// CHECK: %slice = tensor.slice %x {starts = [0, 0], stops = [4, 256], strides = [1, 1]} : tensor<4x256xi32>
// CHECK: %add = tensor.add %cast_2, %cast_6 : tensor<4x1xi32>
// CHECK-NEXT: %add_1 = tensor.add %cast_3, %cast_7 : tensor<4x1xi32>
// CHECK: %add_2 = tensor.add %add, %cast_9 : tensor<4x1xi32>
// CHECK: %mul_3 = tensor.mul %cast_10, %c_3 : tensor<4x1xf32>
// CHECK: %add_3 = tensor.add %mul_3, %cast_11 : tensor<4x1xf32>
// CHECK: %mul_4 = tensor.mul %add_3, %c_4 : tensor<4x1xf32>
// CHECK-NEXT: %cast_12 = tensor.cast %y {dtype = f32} : tensor<4x30xf32>
// CHECK-NEXT: %reduce_4 = tensor.reduce %cast_12 {axes = [1], kind = sum, keepdims = true} : tensor<4x1xf32>

// -----
// i32 → u32 keeps the bits (the engines copy via fp32, saturating): bits 16..30 minus the sign
// bit in f32, cast, or-ed with the low 16 bits; a u16 → i32 cast (exact in fp32) stays one copy
graph @wide_cast(%x: tensor<4x8xi32>, %y: tensor<4x8xu16>) {
  %u = tensor.cast %x {dtype = u32} : tensor<4x8xu32>
  %v = tensor.cast %y {dtype = i32} : tensor<4x8xi32>
  return u = %u, v = %v
}
// CHECK: %bitwise_and = tensor.bitwise_and %x, %c : tensor<4x8xi32>
// CHECK: %sub = tensor.sub %cast, %cast_1 : tensor<4x8xf32>
// CHECK-NEXT: %cast_2 = tensor.cast %sub {dtype = u32} : tensor<4x8xu32>
// CHECK: %bitwise_or = tensor.bitwise_or %cast_2, %cast_3 : tensor<4x8xu32>
// CHECK-NEXT: %v = tensor.cast %y {dtype = i32} : tensor<4x8xi32>

// -----
// an i32 matmul (fp32 on the Tensor engine rounds beyond 2**24): four balanced byte digits of
// each operand (the low 24 bits plus 0x808080, bytes minus 128; the top digit from the sign,
// the 7 bits below it and the carry), bf16-exact, the left ones through a layout_convert; per
// shift and K chunk of 256 the digit-pair matmuls summed in f32 and cast to i32 (their range
// follows from the digits', no clamp); Horner from the top shift, r kept to 32 - 8s signed bits, r * 2**8 + T_s, the
// last add (T_0) wrapping. An i8 result: the i32
// matmul (here within 2**24: one matmul), cast (wrapping)
graph @wide_matmul(%a: tensor<4x300xi32>, %b: tensor<300x3xi32>, %c: tensor<4x300xi8>, %d: tensor<300x3xi8>) {
  %m = tensor.matmul %a, %b : tensor<4x3xi32>
  %n = tensor.matmul %c, %d : tensor<4x3xi8>
  return m = %m, n = %n
}
// CHECK: %add = tensor.add %bitwise_and, %c_2 : tensor<4x300xi32>
// CHECK: %cast_6 = tensor.cast %sub {dtype = bf16} : tensor<4x300xbf16>
// CHECK-NEXT: %cast_7 = tensor.cast %cast_6 {dtype = f32} : tensor<4x300xf32>
// CHECK-NEXT: %layout_convert = tensor.layout_convert %cast_7 : tensor<4x300xf32>
// CHECK: %cast_28 = tensor.cast %matmul {dtype = i32} : tensor<4x3xi32>
// CHECK-NOT: tensor.minimum
// CHECK: %mul_10 = tensor.mul %sub_6, %c_14 : tensor<4x3xi32>
// CHECK-NEXT: %add_23 = tensor.add %mul_10, %add_14 : tensor<4x3xi32>
// CHECK: %add_27 = tensor.add %mul_12, %add_6 : tensor<4x3xi32>
// CHECK: %matmul_20 = tensor.matmul %cast_36, %cast_37 : tensor<4x3xi32>
// CHECK-NEXT: %cast_38 = tensor.cast %matmul_20 {dtype = i8} : tensor<4x3xi8>
// CHECK-NEXT: return m = %add_27, n = %cast_38

// -----
// an integer sum across ranks (the collective saturates where NumPy wraps): an i32 operand's
// 16-bit limbs, (x & -65536) / 65536 and x & 65535, each all_reduced in i32, the low total's
// carry moved into the high one, joined mod 2**32; an i8 one summed in i32 and cast back
graph @wide_all_reduce(%x: tensor<4x8xi32>, %y: tensor<4x8xi8>) {
  %s = tensor.all_reduce %x {world = 2} : tensor<4x8xi32>
  %t = tensor.all_reduce %y {world = 2} : tensor<4x8xi8>
  return s = %s, t = %t
}
// CHECK: %all_reduce = tensor.all_reduce %cast_1 {world = 2} : tensor<4x8xi32>
// CHECK-NEXT: %all_reduce_1 = tensor.all_reduce %bitwise_and_1 {world = 2} : tensor<4x8xi32>
// CHECK: %bitwise_or = tensor.bitwise_or %cast_5, %bitwise_and_6 : tensor<4x8xi32>
// CHECK-NEXT: %cast_6 = tensor.cast %y {dtype = i32} : tensor<4x8xi32>
// CHECK-NEXT: %all_reduce_2 = tensor.all_reduce %cast_6 {world = 2} : tensor<4x8xi32>
// CHECK-NEXT: %cast_7 = tensor.cast %all_reduce_2 {dtype = i8} : tensor<4x8xi8>
// CHECK-NEXT: return s = %bitwise_or, t = %cast_7

// -----
// an i32 var: the deviations from the mean (WideIntMean) cast to i32, per 16-bit limb (each
// difference exact in f32), then the f32 two-pass; an i16 std (exact in f32) is the two-pass
graph @wide_var(%x: tensor<4x30xi32>, %y: tensor<4x30xi16>) {
  %v = tensor.reduce %x {axes = [1], kind = var, keepdims = true, ddof = 1} : tensor<4x1xf32>
  %s = tensor.reduce %y {axes = [1], kind = std, keepdims = true} : tensor<4x1xf32>
  return v = %v, s = %s
}
// CHECK: %cast_8 = tensor.cast %mul_3 {dtype = i32} : tensor<4x1xi32>
// CHECK: %sub = tensor.sub %cast, %cast_9 : tensor<4x30xf32>
// CHECK-NEXT: %sub_1 = tensor.sub %cast_1, %cast_10 : tensor<4x30xf32>
// CHECK-NEXT: %add_2 = tensor.add %sub, %sub_1 : tensor<4x30xf32>
// CHECK: %cast_11 = tensor.cast %y {dtype = f32} : tensor<4x30xf32>
