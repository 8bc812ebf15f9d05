"""validate.py's layer-by-layer comparison: oneDNN primitives read from ONEDNN_VERBOSE lines, keyed
as the estimate's rows, at their fastest over runs (standard library only)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import validate  # noqa: E402  (stdlib only at import time; torch is imported where it is used)


def exec_line(kind, problem, ms, impl="jit:avx512_core"):
    return (f"onednn_verbose,exec,cpu,{kind},{impl},forward_inference,src_f32::blocked:aBcd16b:f0 "
            f"dst_f32::blocked:aBcd16b:f0,attr-scratchpad:user ,alg:x,{problem},{ms}")


CONV_1X1 = "mb8_ic64oc256_ih56oh56kh1sh1dh0ph0_iw56ow56kw1sw1dw0pw0"
CONV_GROUPED = "g32mb1_ic128oc128_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1"
SCORES = "96x1x64:96x64x129:96x1x129"


class LayerKeysTest(unittest.TestCase):
    def test_a_primitive_and_the_estimates_row_of_one_layer_share_a_key(self):
        self.assertEqual(validate.primitive_layer("convolution", CONV_1X1),
                         validate.layer_of_row("conv2d", "g1mb8ic64ih56oc256kh1sh1ph0dh1"))
        self.assertEqual(validate.primitive_layer("convolution", CONV_GROUPED),
                         validate.layer_of_row("conv2d", "g32mb1ic128ih56oc128kh3sh1ph1dh1"))
        # Other oneDNN versions write the groups after the batch.
        self.assertEqual(validate.primitive_layer("convolution", "mb1_g32ic128oc128_ih56oh56kh3sh1dh0ph1_iw56ow56"),
                         validate.primitive_layer("convolution", CONV_GROUPED))
        self.assertEqual(validate.primitive_layer("matmul", SCORES),
                         validate.layer_of_row("matmul", "b96m1n129k64"))
        self.assertEqual(validate.primitive_layer("matmul", "8x768:768x3072:8x3072"),
                         validate.layer_of_row("linear", "b1m8n3072k768"))

    def test_other_layers_have_other_keys(self):
        self.assertNotEqual(validate.primitive_layer("convolution", CONV_1X1),
                            validate.layer_of_row("conv2d", "g1mb8ic64ih56oc256kh1sh2ph0dh1"))
        self.assertNotEqual(validate.primitive_layer("matmul", SCORES),
                            validate.layer_of_row("matmul", "b96m1n64k129"))

    def test_a_linear_run_as_a_convolution_keys_as_that_convolution(self):
        classifier = "mb8_ic2048oc1000_ih1oh1kh1sh1dh0ph0_iw1ow1kw1sw1dw0pw0"
        self.assertEqual(validate.primitive_layer("convolution", classifier),
                         validate.layer_of_row("linear", "b1m8n1000k2048", linears_as_convs=True))

    def test_other_primitives_and_rows_have_no_key(self):
        self.assertIsNone(validate.primitive_layer("eltwise", "8x64x56x56"))
        self.assertIsNone(validate.primitive_layer("convolution", "not a problem"))
        self.assertIsNone(validate.primitive_layer("matmul", "96x1x64"))
        self.assertIsNone(validate.primitive_layer("matmul", "*x64:64x128:*x128"))
        self.assertIsNone(validate.layer_of_row("elementwise:relu", "[8,64,56,56]"))
        self.assertIsNone(validate.layer_of_row("conv2d", "[8,64,56,56]"))


class VerboseLinesTest(unittest.TestCase):
    def test_other_versions_lines_read_as_the_2x_ones(self):
        line = exec_line("convolution", CONV_1X1, 2.5)
        fields = validate.exec_fields(line)
        self.assertEqual((fields[1], fields[3], fields[-2], fields[-1]), ("exec", "convolution", CONV_1X1, "2.5"))
        # oneDNN 3.x: the record type; a format version; a timestamp (ONEDNN_VERBOSE_TIMESTAMP=1).
        body = line.split(",", 1)[1]
        for other in (f"onednn_verbose,primitive,{body}", f"onednn_verbose,v1,primitive,{body}",
                      f"onednn_verbose,1733100000123.25,primitive,{body}", f"dnnl_verbose,{body}"):
            self.assertEqual(validate.exec_fields(other)[1:], fields[1:], other)
        self.assertEqual(validate.verbose_runs([validate.PROBE_RUN, f"onednn_verbose,v1,primitive,{body}"]),
                         [[("convolution", CONV_1X1, 2.5)]])

    def test_creation_info_and_foreign_lines_are_not_executions(self):
        self.assertIsNone(validate.exec_fields(exec_line("sum", "8x64", 1).replace(",exec,", ",create:cache_miss,")))
        self.assertIsNone(validate.exec_fields("onednn_verbose,info,cpu,runtime:OpenMP,nthr:2"))
        self.assertIsNone(validate.exec_fields("exec,cpu,convolution,jit,forward,x,y,z,1"))
        self.assertIsNone(validate.exec_fields("onednn_verbose,primitive,exec"))

    def test_the_version_is_read_in_either_form(self):
        self.assertEqual(validate.onednn_version("onednn_verbose,info,oneDNN v2.6.3 (commit N/A)"), "2.6.3")
        self.assertEqual(validate.onednn_version("onednn_verbose,v1,info,oneDNN v3.5.3 (commit abc)"), "3.5.3")
        self.assertEqual(validate.onednn_version("dnnl_verbose,info,DNNL v1.3.0"), None)
        self.assertIsNone(validate.onednn_version("onednn_verbose,info,cpu,isa:Intel AVX-512"))


class FastestPrimitivesTest(unittest.TestCase):
    def test_each_primitive_at_its_fastest_over_the_runs(self):
        lines = ["onednn_verbose,info,oneDNN v2.6.3", exec_line("convolution", CONV_1X1, 9.0),
                 validate.PROBE_RUN, exec_line("convolution", CONV_1X1, 3.0), exec_line("eltwise", "8x64", 0.5),
                 validate.PROBE_RUN, exec_line("convolution", CONV_1X1, 2.0), exec_line("eltwise", "8x64", 0.7)]
        runs = validate.verbose_runs(lines)
        self.assertEqual(len(runs), 2)  # the primitives before the first run's line do not count
        self.assertEqual(validate.fastest_primitives(runs),
                         [("convolution", CONV_1X1, 2.0), ("eltwise", "8x64", 0.5)])

    def test_a_run_of_other_primitives_is_left_out(self):
        conv, other = ("convolution", CONV_1X1, 2.0), ("eltwise", "8x64", 0.1)
        runs = [[conv], [("convolution", CONV_1X1, 3.0)], [other, conv]]
        self.assertEqual(validate.fastest_primitives(runs), [conv])
        self.assertEqual(validate.fastest_primitives([]), [])


class LayerTableTest(unittest.TestCase):
    def test_measured_and_predicted_side_by_side_the_longest_first(self):
        key_1x1 = validate.primitive_layer("convolution", CONV_1X1)
        key_grouped = validate.primitive_layer("convolution", CONV_GROUPED)
        primitives = [("convolution", CONV_1X1, 2.0), ("convolution", CONV_1X1, 2.5),
                      ("convolution", CONV_GROUPED, 0.5), ("sum", "8x256x56x56", 0.3), ("sum", "8x256", 0.2)]
        predicted = {key_1x1: [2, 4.0], "conv g1 mb8 3>64 224 k7 s2 p3": [1, 0.2]}
        table = validate.layer_table(primitives, predicted)
        self.assertEqual([l["layer"] for l in table["layers"]],
                         [key_1x1, key_grouped, "conv g1 mb8 3>64 224 k7 s2 p3"])
        # A layer the estimate has and the model did not run sorts by its predicted time.
        predicted["conv g1 mb8 3>64 224 k7 s2 p3"] = [1, 5.0]
        self.assertEqual(validate.layer_table(primitives, predicted)["layers"][0]["layer"],
                         "conv g1 mb8 3>64 224 k7 s2 p3")
        first = table["layers"][0]
        self.assertEqual((first["measured"], first["predicted"]), (2, 2))
        self.assertAlmostEqual(first["measured_ms"], 4.5)
        self.assertAlmostEqual(first["predicted_ms"], 4.0)
        # Only the layers on both sides count in the totals; the rest of the primitives by kind.
        self.assertEqual(table["matched_ms"], [4.5, 4.0])
        self.assertAlmostEqual(table["other_ms"]["sum"], 0.5)
        text = "\n".join(validate.layers_text({"model": "m", "batch": 8, "dtype": "f32", "layers": table}))
        self.assertIn(f"| {key_1x1} | 2 / 2 | 4.500 | 4.000 | 1.12 |", text)
        self.assertIn("| all layers in both | | 4.50 | 4.00 | 1.12 |", text)
        self.assertIn("sum 0.50", text)

    def test_predicted_layers_are_kernel_times_without_the_per_op_overhead(self):
        ops = [{"kind": "conv2d", "shape": "g1mb8ic64ih56oc256kh1sh1ph0dh1", "phase": "forward",
                "time_s": 3e-3, "overhead_s": 1e-3},
               {"kind": "conv2d", "shape": "g1mb8ic64ih56oc256kh1sh1ph0dh1", "phase": "forward",
                "time_s": 3e-3, "overhead_s": 1e-3},
               {"kind": "linear", "shape": "b1m8n1000k2048", "phase": "forward", "time_s": 1e-3, "overhead_s": 0},
               {"kind": "elementwise:relu", "shape": "[8,256,56,56]", "phase": "forward", "time_s": 1e-3}]
        layers = validate.predicted_layers(ops, linears_as_convs=True)
        self.assertEqual(layers[validate.layer_of_row("conv2d", "g1mb8ic64ih56oc256kh1sh1ph0dh1")][0], 2)
        self.assertAlmostEqual(layers[validate.layer_of_row("conv2d", "g1mb8ic64ih56oc256kh1sh1ph0dh1")][1], 4.0)
        self.assertIn("conv g1 mb8 2048>1000 1 k1 s1 p0", layers)
        self.assertEqual(len(layers), 2)


if __name__ == "__main__":
    unittest.main()
