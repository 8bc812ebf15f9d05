"""validate's models: the batch norms' statistics (needs PyTorch; skipped, 77, without it)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
try:
    import torch
except ImportError:
    print("skipped: this interpreter has no PyTorch")
    sys.exit(77)
from validate import models  # noqa: E402


def deep_network(depth=12, channels=8):
    """Convolutions, each a third the scale its input needs, with fresh batch norms: the
    activations shrink by about 3 each layer, as a random-weight network's do."""
    layers = []
    for _ in range(depth):
        conv = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        with torch.no_grad():
            conv.weight.mul_(1 / 3)
        layers += [conv, torch.nn.BatchNorm2d(channels), torch.nn.ReLU(), torch.nn.Dropout(0.5)]
    return torch.nn.Sequential(*layers).eval()


class NormalizeBatchNormsTest(unittest.TestCase):
    def test_activations_keep_their_scale(self):
        torch.manual_seed(0)
        net = deep_network()
        x = torch.randn(1, 8, 16, 16)
        with torch.no_grad():
            before = net(x).abs().mean().item()
        models.normalize_batch_norms(net, (x,))
        with torch.no_grad():
            after = net(x).abs().mean().item()
        self.assertLess(before, 1e-3)
        self.assertGreater(after, 0.1)
        self.assertLess(after, 10)

    def test_the_module_stays_in_eval_mode_with_its_momentum(self):
        net = deep_network(depth=2)
        models.normalize_batch_norms(net, (torch.randn(1, 8, 4, 4),))
        self.assertFalse(any(m.training for m in net.modules()))
        norms = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
        self.assertTrue(all(m.momentum == 0.1 for m in norms))
        self.assertTrue(all(int(m.num_batches_tracked) == 1 for m in norms))

    def test_a_model_without_batch_norms_or_with_integer_inputs_is_left_alone(self):
        linear = torch.nn.Linear(4, 4).eval()
        state = {k: v.clone() for k, v in linear.state_dict().items()}
        self.assertIs(models.normalize_batch_norms(linear, (torch.randn(2, 4),)), linear)
        net = deep_network(depth=1)
        norm = net[1]
        models.normalize_batch_norms(net, (torch.randint(0, 4, (1, 8, 4, 4)),))
        self.assertEqual(float(norm.running_var.mean()), 1.0)
        self.assertTrue(all(torch.equal(v, linear.state_dict()[k]) for k, v in state.items()))


if __name__ == "__main__":
    unittest.main()
