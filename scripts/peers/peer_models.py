"""peer_models.py: the PyTorch module behind each model name the peers time,
random weights: the shipped models' architectures (scripts/train_models.py),
the 784-512-512-10 MLP (tests/models/export_torch.py) and torchvision's."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
import torchvision  # noqa: E402

import train_models  # noqa: E402


def _mlp():
    import export_torch  # here, not above: it imports onnx, which a GPU machine may lack
    return export_torch.MLP()


BUILDERS = {"mnist_mlp": train_models.MnistMLP, "mnist_cnn": lambda: train_models.SmallCNN(16, 32, 64),
            "fashion_cnn": lambda: train_models.SmallCNN(32, 64, 128), "mlp_784_512_512_10": _mlp}


def module(name):
    """The model called name (random weights), in eval mode."""
    build = BUILDERS.get(name) or (lambda: getattr(torchvision.models, name)(weights=None))
    return build().eval()
