"""The research harness: benchmarks, sweeps, notebooks, MNIST, the comparison with the
reference run, the paper. It imports the product (``turbogelu``); the product never imports
it. It runs from the checkout (the wheel ships only ``turbogelu``).
"""
