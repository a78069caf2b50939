"""The MNIST protocols' settings (``python -m experiments mnist``): the activations compared,
the epochs and seeds of each protocol, and the quick setting of the tests. Imported by the
training (``experiments.mnist``) and by the command line (``experiments.mnist_cli``), which
must stay free of torch (its parser is built for every subcommand): so they live here, with
no import at all.

Settings and why. One epoch of the 784-512-512-10 MLP over the 60,000 training images
(tensors prepared up front, batch 128) was measured first on the shared 2-core build machine:
2.7 s with one thread when the machine was quiet, 4.2-5 s while the other engineers' jobs
ran, and 10-17 s with two threads (the second thread waits on busy cores), so training uses
one thread. The protocols:

* seed: 35 epochs x {exact, turbogelu} = 70 epochs;
* swap: evaluated on the seed protocol's exact run after every epoch (no training);
* noise: 10 seeds x {exact, tanh, turbogelu} x 4 epochs = 120 epochs. Ten seeds rather than
  the minimum five, because the interval narrows with both the t quantile (2.78 for 5
  seeds, 2.26 for 10) and sqrt(n); four epochs because the cosine schedule then ends
  annealed at about 98.3 % test accuracy.

Each protocol's wall time is in its result's meta (``results/reference/full/mnist_*.json`` for
the reference run), not copied here.
"""

# name -> (torch GELU approximate, implemented by turbogelu?)
ACTIVATIONS = {
    "exact": ("none", False),
    "tanh": ("tanh", False),
    "turbogelu": ("none", True),
    "turbogelu-tanh": ("tanh", True),
}
SEED_PAIR = ("exact", "turbogelu")
SWAP_FORMS = ("exact", "tanh", "turbogelu", "turbogelu-tanh")
NOISE_ACTIVATIONS = ("exact", "tanh", "turbogelu")
SEED_EPOCHS = 35
QUICK = {"epochs": 2, "train_subset": 5000, "test_subset": 2000}
QUICK_NOISE = {"seeds": 5, "epochs": 2}
FULL_NOISE = {"seeds": 10, "epochs": 4}
