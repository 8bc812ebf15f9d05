"""The graphs scripts/make_onnx_fixtures.py writes, one module per group of tests."""
