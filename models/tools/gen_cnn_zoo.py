#!/usr/bin/env python3
"""Writes the CNN graphs of the zoo (models/*.json) as torchvision builds them.

The files are committed; run this again only to change them:
    python3 models/tools/gen_cnn_zoo.py models/
Each op's output shape is written out so the files read on their own; the loader recomputes every
shape and rejects a file whose shapes disagree with its ops.
"""
import json
import sys
from pathlib import Path


class Graph:
    def __init__(self, name, description, reference, image=224):
        self.doc = {"format": "truepeak-model", "version": 1, "name": name, "kind": "cnn",
                    "description": description, "reference": reference,
                    "inputs": [{"name": "image", "shape": ["N", 3, image, image]}], "ops": []}
        self.shapes = {"image": ["N", 3, image, image]}

    def op(self, name, kind, inputs, shape, **attrs):
        op = {"name": name, "op": kind, "in": inputs}
        op.update(attrs)
        op["shape"] = shape
        self.doc["ops"].append(op)
        self.shapes[name] = shape
        return name

    def conv(self, name, x, out_c, kernel, stride=1, pad=0, groups=1, bias=False):
        n, c, h, w = self.shapes[x]
        oh = (h + 2 * pad - kernel) // stride + 1
        ow = (w + 2 * pad - kernel) // stride + 1
        attrs = {"kernel": kernel, "stride": stride, "pad": pad}
        if groups != 1:
            attrs["groups"] = groups
        if bias:
            attrs["bias"] = True
        return self.op(name, "conv2d", [x], [n, out_c, oh, ow], **attrs)

    def unary(self, name, kind, x):
        return self.op(name, kind, [x], self.shapes[x])

    def bn(self, name, x):
        return self.unary(name, "batchnorm", x)

    def add(self, name, a, b):
        return self.op(name, "add", [a, b], self.shapes[a])

    def maxpool(self, name, x, kernel, stride, pad=0):
        n, c, h, w = self.shapes[x]
        oh = (h + 2 * pad - kernel) // stride + 1
        ow = (w + 2 * pad - kernel) // stride + 1
        return self.op(name, "maxpool", [x], [n, c, oh, ow], kernel=kernel, stride=stride, pad=pad)

    def global_avgpool(self, name, x):
        n, c, _, _ = self.shapes[x]
        return self.op(name, "global_avgpool", [x], [n, c, 1, 1])

    def flatten(self, name, x):
        n, *rest = self.shapes[x]
        size = 1
        for d in rest:
            size *= d
        return self.op(name, "flatten", [x], [n, size])

    def linear(self, name, x, out):
        return self.op(name, "linear", [x], self.shapes[x][:-1] + [out])

    def write(self, path):
        lines = [json.dumps(op) for op in self.doc["ops"]]
        head = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in self.doc.items() if k != "ops"]
        text = "{\n" + ",\n".join(head) + ',\n  "ops": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"
        json.loads(text)
        Path(path).write_text(text)


def resnet(name, blocks, bottleneck, description, reference):
    g = Graph(name, description, reference)
    x = g.conv("conv1", "image", 64, 7, 2, 3)
    x = g.unary("relu1", "relu", g.bn("bn1", x))
    x = g.maxpool("maxpool", x, 3, 2, 1)
    in_c = 64
    for stage, (count, width) in enumerate(zip(blocks, [64, 128, 256, 512]), start=1):
        for i in range(count):
            stride = 2 if (i == 0 and stage > 1) else 1
            p = f"layer{stage}.{i}."
            out_c = width * (4 if bottleneck else 1)
            identity = x
            if bottleneck:
                y = g.unary(p + "relu1", "relu", g.bn(p + "bn1", g.conv(p + "conv1", x, width, 1)))
                y = g.unary(p + "relu2", "relu", g.bn(p + "bn2", g.conv(p + "conv2", y, width, 3, stride, 1)))
                y = g.bn(p + "bn3", g.conv(p + "conv3", y, out_c, 1))
            else:
                y = g.unary(p + "relu1", "relu", g.bn(p + "bn1", g.conv(p + "conv1", x, width, 3, stride, 1)))
                y = g.bn(p + "bn2", g.conv(p + "conv2", y, width, 3, 1, 1))
            if stride != 1 or in_c != out_c:
                identity = g.bn(p + "downsample.bn", g.conv(p + "downsample.conv", x, out_c, 1, stride))
            x = g.unary(p + "relu_out", "relu", g.add(p + "add", y, identity))
            in_c = out_c
    x = g.flatten("flatten", g.global_avgpool("avgpool", x))
    g.linear("fc", x, 1000)
    return g


def mobilenet_v2():
    g = Graph("mobilenet_v2", "MobileNetV2 (torchvision), 224x224, 1000 classes",
              {"params": 3504872, "macs": 0.30e9, "source": "torchvision model table (GFLOPS column = multiply-adds); Sandler et al. 2018"})
    x = g.unary("features.0.relu6", "relu6", g.bn("features.0.bn", g.conv("features.0.conv", "image", 32, 3, 2, 1)))
    in_c = 32
    index = 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = in_c * t
            p = f"features.{index}."
            y = x
            if t != 1:
                y = g.unary(p + "expand.relu6", "relu6", g.bn(p + "expand.bn", g.conv(p + "expand.conv", y, hidden, 1)))
            y = g.unary(p + "dw.relu6", "relu6", g.bn(p + "dw.bn", g.conv(p + "dw.conv", y, hidden, 3, stride, 1, groups=hidden)))
            y = g.bn(p + "project.bn", g.conv(p + "project.conv", y, c, 1))
            if stride == 1 and in_c == c:
                y = g.add(p + "add", x, y)
            x = y
            in_c = c
            index += 1
    x = g.unary("features.18.relu6", "relu6", g.bn("features.18.bn", g.conv("features.18.conv", x, 1280, 1)))
    x = g.flatten("flatten", g.global_avgpool("avgpool", x))
    g.linear("classifier", x, 1000)
    return g


def vgg16():
    g = Graph("vgg16", "VGG-16 (torchvision, no batch norm), 224x224, 1000 classes",
              {"params": 138357544, "macs": 15.47e9, "source": "torchvision model table (GFLOPS column = multiply-adds); Simonyan and Zisserman 2014"})
    x = "image"
    conv = 0
    pool = 0
    for v in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]:
        if v == "M":
            pool += 1
            x = g.maxpool(f"pool{pool}", x, 2, 2)
        else:
            conv += 1
            x = g.unary(f"relu{conv}", "relu", g.conv(f"conv{conv}", x, v, 3, 1, 1, bias=True))
    x = g.flatten("flatten", x)
    x = g.unary("fc1.relu", "relu", g.linear("fc1", x, 4096))
    x = g.unary("fc2.relu", "relu", g.linear("fc2", x, 4096))
    g.linear("fc3", x, 1000)
    return g


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    resnet("resnet18", [2, 2, 2, 2], False, "ResNet-18 (torchvision), 224x224, 1000 classes",
           {"params": 11689512, "macs": 1.81e9, "source": "torchvision model table (GFLOPS column = multiply-adds); He et al. 2015"}).write(out / "resnet18.json")
    resnet("resnet50", [3, 4, 6, 3], True, "ResNet-50 v1.5 (torchvision: stride on the 3x3), 224x224, 1000 classes",
           {"params": 25557032, "macs": 4.09e9, "source": "torchvision model table (GFLOPS column = multiply-adds); He et al. 2015"}).write(out / "resnet50.json")
    mobilenet_v2().write(out / "mobilenet_v2.json")
    vgg16().write(out / "vgg16.json")


if __name__ == "__main__":
    main()
