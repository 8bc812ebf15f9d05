"""The probes' size grids: generic by rule, covering the shape space the brief names, never a
known model's sizes (standard library only)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from runtimes import grids  # noqa: E402

# Sizes that single out well-known models: BERT/GPT-2's widths and heads, ImageNet's image,
# ResNet's first stage.
MODEL_WIDTHS = {768, 3072, 1536, 2304}
MODEL_SIDES = {224, 56}


def product(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class GridTest(unittest.TestCase):
    def test_operand_shapes_hold_their_element_steps(self):
        for quick in (False, True):
            steps = grids.element_steps(quick)
            self.assertEqual([product(s) for s in grids.image_shapes(quick)], list(steps))
            self.assertEqual([product(s) for s in grids.row_shapes(quick)], list(steps))
        self.assertEqual(grids.ELEMENT_STEPS, tuple(2 ** (13 + 3 * i) for i in range(4)))

    def test_rows_split_evenly_for_the_transposes(self):
        for rows, cols in grids.row_shapes(False):
            self.assertEqual(cols % grids.TRANSPOSE_GROUPS, 0)

    def test_gemm_grid_runs_skinny_to_square_within_its_cap(self):
        grid = grids.gemm_grid(False)
        self.assertIn(1, {m for m, _, _ in grid})
        self.assertTrue(any(m == n == k for m, n, k in grid))
        self.assertTrue(all(2 * m * n * k <= grids.GEMM_MAX_FLOPS for m, n, k in grid if n == k))
        self.assertEqual(set(grids.gemm_grid(True)) - set(grid), set())
        self.assertEqual(len(set(grid)), len(grid))

    def test_the_first_product_of_each_weights_shape_is_checked(self):
        grid = grids.gemm_grid(False)
        checked = grids.checked_products(grid)
        self.assertEqual({(n, k) for _, n, k in checked}, {(n, k) for _, n, k in grid})
        self.assertEqual(len(checked), len({(n, k) for _, n, k in grid}))
        for m, n, k in checked:
            self.assertEqual(m, min(r for r, a, b in grid if (a, b) == (n, k)))  # grid rows ascend

    def test_gemm_grid_has_wide_weights_at_skinny_and_middle_rows(self):
        grid = grids.gemm_grid(False)
        wide = [(m, n, k) for m, n, k in grid if n != k]
        self.assertEqual({(n, k) for _, n, k in wide}, {grids.WIDE_WEIGHTS})
        self.assertGreater(grids.WIDE_WEIGHTS[0], max(grids.GEMM_WIDTHS))  # past the square ones
        rows = {m for m, _, _ in wide}
        self.assertIn(1, rows)
        self.assertTrue(any(grids.cold_product(*p) for p in wide))
        # Past the cold rows, and as far as the square grid's middle (512 rows).
        self.assertGreaterEqual(max(rows), 512)
        self.assertTrue(any(m > grids.COLD_ROWS for m in rows))

    def test_conv_grid_covers_kernels_strides_and_groupings(self):
        grid = grids.conv_grid(False)
        self.assertEqual({s["r"] for s in grid}, {1, 3, 5, 7})
        self.assertEqual({s["stride"] for s in grid}, {1, 2})
        self.assertEqual({s["n"] for s in grid if s["groups"] == 1 and s["r"] in (1, 3)}, {1, grids.CONV_BATCH})
        dense = [s for s in grid if s["groups"] == 1]
        depthwise = [s for s in grid if s["groups"] == s["c"]]
        grouped = [s for s in grid if 1 < s["groups"] < s["c"]]
        self.assertTrue(dense and depthwise and grouped)
        self.assertEqual({(s["r"], s["stride"]) for s in dense}, {(r, st) for r in (1, 3, 5, 7) for st in (1, 2)})
        for s in grid:
            out = grids.out_side(s)
            self.assertTrue(16 <= s["c"] <= 2048 and (7 <= out <= 112 or s["h"] in (1, grids.CONV_BELOW_SIDE)), s)
            self.assertEqual(s["c"] % s["groups"], 0)
            cap = grids.CONV_MAX_FLOPS if s["n"] == 1 else grids.CONV_BATCH_MAX_FLOPS
            self.assertLessEqual(grids.conv_flops(s), cap)
        # The batched points reach the many-channel end of the diagonal.
        batched = [s for s in grid if s["n"] > 1]
        self.assertEqual({s["c"] for s in batched if s["r"] == 1}, {c for c, _ in grids.CONV_DIAGONAL})
        self.assertGreaterEqual(max(s["c"] for s in batched if s["r"] == 3), 512)

    def test_depthwise_3x3_spans_channels_pixels_and_batch(self):
        grid = grids.conv_grid(False)
        depthwise = {(s["c"], s["h"], s["stride"], s["n"]) for s in grid
                     if s["groups"] == s["c"] == s["k"] and s["r"] == 3}
        for batch in (1,) + grids.CONV_DEPTHWISE_BATCHES:
            for stride in (1, 2):
                for c, side in grids.CONV_DIAGONAL:
                    self.assertIn((c, grids.strided_side(side, stride), stride, batch), depthwise)
        # Other depthwise windows, at batch 1: the whole diagonal at stride 1, its two ends at 2.
        wider = [s for s in grid if s["groups"] == s["c"] and s["r"] > 3]
        self.assertEqual({s["n"] for s in wider}, {1})
        for kernel in (5, 7):
            self.assertEqual({s["c"] for s in wider if s["r"] == kernel and s["stride"] == 1},
                             {c for c, _ in grids.CONV_DIAGONAL})
            self.assertEqual(len([s for s in wider if s["r"] == kernel and s["stride"] == 2]), 2)

    def test_small_work_at_every_channel_count(self):
        grid = grids.conv_grid(False)
        for kernel, groups_of in ((1, lambda c: 1), (3, lambda c: c)):
            for c, side in grids.CONV_DIAGONAL:
                smaller = [s for s in grid if s["c"] == c and s["r"] == kernel and s["groups"] == groups_of(c)
                           and s["stride"] == 1 and s["n"] == 1 and 1 < s["h"] < side]
                self.assertEqual(len(smaller), 1, (kernel, c))
        squeeze = [s for s in grid if s["h"] == 1]
        self.assertEqual({s["c"] for s in squeeze}, set(grids.CONV_SQUEEZE_CHANNELS))
        self.assertTrue(all(s["r"] == 1 and s["groups"] == 1 for s in squeeze))
        self.assertEqual(len(grid), len({tuple(sorted(s.items())) for s in grid}))

    def test_strided_points_output_the_diagonals_sides(self):
        for stride in (1, 2):
            for kernel in (1, 3, 5, 7):
                for _, side in grids.CONV_DIAGONAL:
                    shape = grids.conv_shape(16, grids.strided_side(side, stride), kernel, stride, 1)
                    self.assertEqual(grids.out_side(shape), side, (stride, kernel))
        strided = {grids.out_side(s) for s in grids.conv_grid(False) if s["stride"] == 2}
        self.assertEqual(strided, {side for _, side in grids.CONV_DIAGONAL})

    def test_image_inputs_read_few_channels_through_strided_windows(self):
        grid = grids.image_input_grid(False)
        self.assertEqual({(s["c"], s["groups"], s["stride"]) for s in grid}, {(3, 1, 2)})
        self.assertEqual({s["r"] for s in grid}, set(grids.IMAGE_INPUT_KERNELS))
        self.assertEqual({s["k"] for s in grid}, set(grids.IMAGE_INPUT_OUTPUTS))
        self.assertEqual(len(grid), len({(s["r"], s["h"], s["k"]) for s in grid}))
        self.assertTrue(all(grids.conv_flops(s) <= grids.CONV_MAX_FLOPS for s in grid))
        quick = grids.image_input_grid(True)
        self.assertTrue(quick and all(s in grid for s in quick))

    def test_conv_flops(self):
        shape = grids.conv_shape(16, 8, 3, 2, 1)
        self.assertEqual(grids.conv_flops(shape), 2 * 16 * 16 * 9 * 4 * 4)
        self.assertEqual(grids.conv_flops(grids.conv_shape(16, 8, 3, 1, 16)), 2 * 16 * 9 * 8 * 8)

    def test_no_size_is_a_known_models(self):
        widths = {w for _, n, k in grids.gemm_grid(False) for w in (n, k)} | {c for _, c in grids.row_shapes(False)}
        widths |= {s for _, s in grids.batched_matmul_grid(False)}
        self.assertFalse(widths & MODEL_WIDTHS)
        sides = {s["h"] for s in grids.conv_grid(False) + grids.image_input_grid(False)}
        sides |= {s[2] for s in grids.image_shapes(False)}
        self.assertFalse(sides & MODEL_SIDES)
        self.assertNotIn(12 * 64, {c for _, c in grids.row_shapes(False)})


class ColdSpanTest(unittest.TestCase):
    MIB = 2 ** 20

    def test_four_caches_capped_but_never_under_two(self):
        self.assertEqual(grids.cold_span_bytes(32 * self.MIB), 128 * self.MIB)
        self.assertEqual(grids.cold_span_bytes(384 * self.MIB), 1024 * self.MIB)  # capped
        self.assertEqual(grids.cold_span_bytes(1024 * self.MIB), 2048 * self.MIB)  # twice, cap or not
        self.assertEqual(grids.cold_span_bytes(None), grids.COLD_FALLBACK_BYTES)

    def test_quick_spans_twice_the_cache(self):
        self.assertEqual(grids.cold_span_bytes(32 * self.MIB, quick=True), 64 * self.MIB)
        self.assertEqual(grids.cold_span_bytes(1024 * self.MIB, quick=True), 2048 * self.MIB)
        self.assertEqual(grids.cold_span_bytes(None, quick=True), 64 * self.MIB)

    def test_copies_span_it_and_are_at_least_two(self):
        self.assertEqual(grids.cold_copy_count(self.MIB, 256 * self.MIB), 256)
        self.assertEqual(grids.cold_copy_count(3 * self.MIB, 256 * self.MIB), 86)
        self.assertEqual(grids.cold_copy_count(64 * self.MIB, 64 * self.MIB), 2)

    def test_the_quick_grid_has_a_cold_point_in_any_dtype(self):
        # A layer of COLD_MIN_WEIGHTS elements or more, at most COLD_ROWS rows.
        self.assertTrue(any(grids.cold_product(*p) for p in grids.gemm_grid(True)))
        self.assertFalse(grids.cold_product(grids.COLD_ROWS + 1, 4096, 4096))
        self.assertFalse(grids.cold_product(1, 64, 64))
        self.assertTrue(grids.cold_product(1, 2 ** 12, 2 ** 6))  # weights' elements, whatever their shape

class UnalignedGridTest(unittest.TestCase):
    def test_odd_channels_over_the_diagonal(self):
        shapes = grids.unaligned_conv_grid()
        self.assertTrue(shapes)
        for shape in shapes:
            self.assertEqual(shape["c"] % 2, 1, grids.conv_name(shape))
            self.assertLessEqual(grids.conv_flops(shape), grids.CONV_MAX_FLOPS)
        classes = {(grids.conv_class(s), s["r"], s["stride"]) for s in shapes}
        self.assertEqual(classes, {("depthwise", 3, 1), ("depthwise", 3, 2), ("dense", 1, 1), ("dense", 3, 1)})
        # Every diagonal channel count has its odd neighbour, in the depthwise class at least.
        self.assertEqual({s["c"] + 1 for s in shapes if grids.conv_class(s) == "depthwise"},
                         {c for c, _ in grids.CONV_DIAGONAL})

    def test_quick_keeps_a_depthwise_and_a_dense_point(self):
        quick = grids.unaligned_conv_grid(True)
        self.assertEqual({grids.conv_class(s) for s in quick}, {"depthwise", "dense"})
        self.assertTrue(all(s["c"] % 2 == 1 for s in quick))

    def test_a_class_check_keeps_the_points_alignment(self):
        # The check of a class runs the kernel its points do: an odd depthwise point is checked
        # over odd channels, an aligned one over aligned channels.
        for shape in grids.unaligned_conv_grid():
            self.assertEqual(grids.class_check_shape(shape)["c"] % 2, 1)
        for shape in grids.conv_grid(False):
            check = grids.class_check_shape(shape)
            self.assertEqual(grids.conv_class(check), grids.conv_class(shape))
            if grids.conv_class(shape) == "depthwise":
                self.assertEqual(check["c"], 16)


if __name__ == "__main__":
    unittest.main()
