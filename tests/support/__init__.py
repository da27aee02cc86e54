"""What the tests build their worlds with: a virtual annotator, batches, big files, the URL patterns, oracles.

The benchmarks import it too (tests/test_architecture.py: tests import no benchmark, the product neither).
"""
