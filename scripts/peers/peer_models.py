"""peer_models.py: the PyTorch module behind each model name the peers time,
random weights: the shipped models' architectures (scripts/train_models.py),
the 784-512-512-10 MLP (tests/models/export_torch.py) and torchvision's
classifiers and segmentation models (their "out" only)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
import torch  # noqa: E402
import torchvision  # noqa: E402

import train_models  # noqa: E402


def _mlp():
    import export_torch  # here, not above: it imports onnx, which a GPU machine may lack
    return export_torch.MLP()


class Segmentation(torch.nn.Module):
    """A torchvision segmentation model's "out" (its forward returns a dict)."""

    def __init__(self, name):
        super().__init__()
        self.model = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)

    def forward(self, x):
        return self.model(x)["out"]


class Recurrent(torch.nn.Module):
    """One LSTM or GRU layer, batch first, its output at every step: the
    size of a keyword spotter's (40 features a frame, hidden 128)."""

    def __init__(self, kind, features=40, hidden=128):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(features, hidden, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


# the recurrent nets' input: steps and features a step (the others' is an image)
SEQUENCE_ITEMS = {"lstm_40_128": (100, 40), "gru_40_128": (100, 40)}

BUILDERS = {"lstm_40_128": lambda: Recurrent("LSTM"), "gru_40_128": lambda: Recurrent("GRU"),
            "mnist_mlp": train_models.MnistMLP, "mnist_cnn": lambda: train_models.SmallCNN(16, 32, 64),
            "fashion_cnn": lambda: train_models.SmallCNN(32, 64, 128), "mlp_784_512_512_10": _mlp}


def module(name):
    """The model called name (random weights), in eval mode."""
    if name in torchvision.models.segmentation.__dict__:
        return Segmentation(name).eval()
    build = BUILDERS.get(name) or (lambda: getattr(torchvision.models, name)(weights=None))
    return build().eval()
